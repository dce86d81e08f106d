"""What a Python int holds after a `pypto.loop` whose body has runtime `if`s.

PyPTO traces a `pypto.loop` body once per path through its runtime `if`s (its
`RecordLoopFunc` yields the loop index again for every path, the else branches first;
`pypto.loop` bodies nested inside count their own paths), and Python values carry from
one trace to the next. Measured with PyPTO 0.2.0: a counter at 0 with `c = c + 1` in the
else branch of one `if` is 1 after the loop; with two `if`s in a row, each incrementing
in its else branch, 4 (four paths, which pass 2, 1, 1 and 0 increments).
Its JIT parser replaces every concrete `SymbolicScalar` by its int, so
`flag = pypto.SymbolicScalar(0)` is an int there too and `if flag > 0:` after the loop
is decided in Python.

tileir traces a body once, each runtime `if` branch once. For a Python int changed in
the body it computes PyPTO's value from the body's source when every change is
`n = n + k` / `n += k` / `n -= k` with an int literal `k` (then the order of the paths
does not matter): the sum over PyPTO's paths of the increments each path passes, with
`paths(a; b) = paths(a) * paths(b)` and `paths(if) = paths(then) + paths(else)`. Any
other change (`n = 1` in a branch, a runtime `if` in a helper the body calls) leaves the
name unusable after the loop, with the reason.

```python
flag = pypto.SymbolicScalar(0)
for i in pypto.loop(n):
    if i < 3:          # runtime: 2 paths
        ...
    else:
        flag += 1      # passed by 1 of them
if flag > 0:           # flag is 1: a Python `if`
    ...
```
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class LoopTrace:
    """What the one trace of a loop body recorded for the path count: the runtime
    `if`s it met (not those of nested loops), the branch each Python `if` took, and what
    nested `pypto.loop`s changed."""

    runtime_ifs: list[ast.If] = field(default_factory=list)
    python_ifs: dict[int, bool | None] = field(default_factory=dict)
    """id of an `ast.If` -> the branch taken (None: taken both ways, in a `range` loop)"""
    nested: dict[int, dict[str, int]] = field(default_factory=dict)
    """id of a nested `pypto.loop`'s `ast.For` -> int names it changed, by how much"""

    def took(self, stmt: ast.If, taken: bool) -> None:
        seen = self.python_ifs.get(id(stmt), taken)
        self.python_ifs[id(stmt)] = taken if seen == taken else None


class Unknown(Exception):
    """tileir cannot tell the value from the body's source; the message says why."""


def value_after(
    body: Sequence[ast.stmt], name: str, before: int, trace: LoopTrace, line: int
) -> int:
    """`name`'s value after PyPTO traced `body` once per path, from `before`."""
    ours = {id(n) for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.If)}
    for s in trace.runtime_ifs:
        if id(s) not in ours:
            raise Unknown(
                f"the body of the pypto.loop at line {line} calls a helper with a runtime "
                f"`if` (line {s.lineno}), whose paths tileir does not count"
            )
    runtime = {id(s) for s in trace.runtime_ifs}
    if len(runtime) != len(trace.runtime_ifs):
        raise Unknown(f"a runtime `if` of the pypto.loop at line {line} was traced twice")
    _, total = _sequence(body, name, runtime, trace)
    return before + total


def _sequence(
    stmts: Sequence[ast.stmt], name: str, runtime: set[int], trace: LoopTrace
) -> tuple[int, int]:
    """(paths, sum over them of the increments each passes)."""
    paths, total = 1, 0
    for stmt in stmts:
        p, d = _statement(stmt, name, runtime, trace)
        total = total * p + d * paths
        paths *= p
    return paths, total


def _statement(stmt: ast.stmt, name: str, runtime: set[int], trace: LoopTrace) -> tuple[int, int]:
    if isinstance(stmt, ast.If):
        if id(stmt) in runtime:
            pt, dt = _sequence(stmt.body, name, runtime, trace)
            pe, de = _sequence(stmt.orelse, name, runtime, trace)
            return pt + pe, dt + de
        if id(stmt) in trace.python_ifs:
            taken = trace.python_ifs[id(stmt)]
            if taken is None or _mentions(stmt.test, name):
                raise Unknown(f"the Python `if` at line {stmt.lineno} decides how `{name}` changes")
            return _sequence(stmt.body if taken else stmt.orelse, name, runtime, trace)
        _untouched(stmt, name, runtime)
        return 1, 0
    if isinstance(stmt, ast.For) and id(stmt) in trace.nested:
        changed = trace.nested[id(stmt)]
        return 1, changed.get(name, 0)
    step = _increment(stmt, name)
    if step is not None:
        return 1, step
    _untouched(stmt, name, runtime)
    return 1, 0


def _increment(stmt: ast.stmt, name: str) -> int | None:
    """`k` of `name = name + k`, `name += k`, `name -= k`, `name = name - k`."""
    if isinstance(stmt, ast.AugAssign) and _is_name(stmt.target, name):
        k = _literal(stmt.value)
        if k is not None and isinstance(stmt.op, ast.Add | ast.Sub):
            return k if isinstance(stmt.op, ast.Add) else -k
        return None
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and _is_name(stmt.targets[0], name)
        and isinstance(stmt.value, ast.BinOp)
        and isinstance(stmt.value.op, ast.Add | ast.Sub)
    ):
        left, right = stmt.value.left, stmt.value.right
        if _is_name(left, name) and (k := _literal(right)) is not None:
            return k if isinstance(stmt.value.op, ast.Add) else -k
        if isinstance(stmt.value.op, ast.Add) and _is_name(right, name):
            return _literal(left)
    return None


def _untouched(stmt: ast.stmt, name: str, runtime: set[int]) -> None:
    for n in ast.walk(stmt):
        if isinstance(n, ast.If) and id(n) in runtime:
            raise Unknown(
                f"the runtime `if` at line {n.lineno} is traced inside a Python loop or "
                "`if` whose paths tileir does not count"
            )
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
            raise Unknown(
                f"`{name}` changes at line {n.lineno} other than by `{name} += <int>`, so its "
                "value after PyPTO's traces depends on their order"
            )
        if isinstance(n, ast.If) and n is not stmt and _assigns(n, name):
            raise Unknown(f"`{name}` changes under the `if` at line {n.lineno}")


def _assigns(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(node)
    )


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        k = _literal(node.operand)
        return None if k is None else -k
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None
