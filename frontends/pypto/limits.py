"""How deep a kernel file may nest, checked before translating it.

The translator recurses over the syntax tree, so a long chain `x + x + ... + x` or
deeply nested loops would exceed Python's recursion limit deep inside it; this check
walks the tree without recursion first and refuses such a file at the offending node,
stating the limit. Statements nest at most `MAX_NESTING` deep (the IR's own limit, see
`tileir.diagnostics`), expressions at most `MAX_EXPRESSION_DEPTH` (Python's parser
allows 200 nested parentheses; the chain of a binary operator nests the same way).

`MAX_TRACE_STEPS` bounds the work of translation-time Python loops instead: `range`
loops and comprehensions run when a kernel is read, so `for _ in range(10**9)` would
trace for hours; past the budget the loop is refused at its `for`.
"""

from __future__ import annotations

import ast

from tileir.diagnostics import MAX_NESTING

MAX_EXPRESSION_DEPTH = 200

MAX_TRACE_STEPS = 200_000
"""Iterations of translation-time Python loops (`for` over `range` / lists,
comprehensions) one kernel may run, all loops together."""

_BLOCKS = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def too_deep(tree: ast.AST) -> tuple[ast.AST, str] | None:
    """The first node nested beyond a limit, with the message to report, or None."""
    stack: list[tuple[ast.AST, int, int]] = [(tree, 0, 0)]
    while stack:
        node, blocks, exprs = stack.pop()
        if isinstance(node, _BLOCKS):
            blocks += 1
            if blocks > MAX_NESTING:
                return node, (f"statements nest more than {MAX_NESTING} deep here, tileir's limit")
        if isinstance(node, ast.expr):
            exprs += 1
            if exprs > MAX_EXPRESSION_DEPTH:
                return node, (
                    f"this expression nests more than {MAX_EXPRESSION_DEPTH} deep, tileir's "
                    "limit (split a long chain like `a + b + ...` over several statements)"
                )
        stack.extend((child, blocks, exprs) for child in ast.iter_child_nodes(node))
    return None
