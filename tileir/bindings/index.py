"""Index arithmetic: the one table of how PyPTO kernels spell `arith` on index values.

A kernel computes offsets with Python operators and a few `pypto` functions on loop
indices (`i * T + 1`, `pypto.min(a, b)`, `i < n`). The frontend reads them into these
`arith` ops and the PyPTO writer writes the ops back as the same Python; both read the
tables here. (What the ops compute is the numpy interpreter's `arith` rules.)

The writer prints an operand inside parentheses exactly when Python would otherwise
read a different tree (`(i < 1) * t`, `a - (b - c)`, `(-2) ** k`): `binary` takes the
operands' own precedences, so an expression parsed back with `ast` has the IR's tree.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Operation

OPERATORS: dict[type[Operation], str] = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.FloorDivSIOp: "//",
    arith.RemSIOp: "%",
}
"""Index ops written as a Python binary operator."""
BY_OPERATOR: dict[str, type[Operation]] = {sym: cls for cls, sym in OPERATORS.items()}

FUNCTIONS: dict[type[Operation], str] = {
    arith.MinSIOp: "min",
    arith.MaxSIOp: "max",
    arith.CeilDivSIOp: "ceildiv",
}
"""Index ops written as `pypto.<name>(a, b)` (`min` / `max` also as the builtins)."""
BY_FUNCTION: dict[str, type[Operation]] = {name: cls for cls, name in FUNCTIONS.items()}

COMPARISONS: dict[str, str] = {
    "==": "eq",
    "!=": "ne",
    "<": "slt",
    "<=": "sle",
    ">": "sgt",
    ">=": "sge",
}
"""Python comparison -> `arith.cmpi` predicate (signed: index values are signed)."""
BY_PREDICATE: dict[str, str] = {pred: sym for sym, pred in COMPARISONS.items()}

# Python's precedence levels (higher binds tighter), the ones the writer can produce.
COMPARE = 1
ADD = 2
MUL = 3
UNARY = 4
POWER = 5
ATOM = 6
PRECEDENCE: dict[str, int] = {
    **dict.fromkeys(COMPARISONS, COMPARE),
    "+": ADD,
    "-": ADD,
    "*": MUL,
    "/": MUL,
    "//": MUL,
    "%": MUL,
    "**": POWER,
}

Expr = tuple[str, int]
"""Python source of an expression and its precedence."""


def number(text: str) -> Expr:
    """A literal: negative numbers are unary minus expressions."""
    return text, UNARY if text.startswith("-") else ATOM


def binary(sym: str, lhs: Expr, rhs: Expr) -> Expr:
    """`lhs sym rhs`, with the operands parenthesised where Python's precedence and
    associativity would otherwise group them differently. Comparisons do not chain
    (`a < b < c` is not `(a < b) < c`), and `**` binds tighter than a unary minus on
    its left (`-2 ** k` is `-(2 ** k)`); a negative number on the right is bracketed
    for the reader (`x * (-1)`)."""
    prec = PRECEDENCE[sym]
    left_tight = prec if sym != "**" and prec != COMPARE else prec + 1
    left = lhs[0] if lhs[1] >= left_tight else f"({lhs[0]})"
    right = rhs[0] if rhs[1] > prec and rhs[1] != UNARY else f"({rhs[0]})"
    return f"{left} {sym} {right}", prec
