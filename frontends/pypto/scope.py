"""The evaluator's Python-side pieces: scopes (locals, closure, module), frames, the
control-flow exceptions of `return` / `break`, and the tables of Python operators and
builtins a kernel may use at trace time."""

from __future__ import annotations

import ast
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from frontends.pypto.kinds import (
    is_ssa,
)

MAX_INLINE_DEPTH = 64

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}

_PY_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}

_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

_PY_CMPOPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "is": operator.is_,
    "is not": operator.is_not,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}

_SAFE_BUILTINS = (
    "abs all any bool dict divmod enumerate float frozenset int isinstance len list max min "
    "range reversed round set sorted str sum tuple zip"
).split()

FUNCTION = ("frontend", "function")


def _sig_scalar2(a, b): ...


_NEEDS_VALUE = ("index value", "constant", "known at trace time", "known when")
"""Error messages that say Python needed a value which the call's shapes would give."""


def _holds_ssa(value: Any) -> bool:
    """A value is, or a Python container holds, an IR value."""
    if is_ssa(value):
        return True
    if isinstance(value, list | tuple | set):
        return any(_holds_ssa(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_ssa(v) for v in value.values())
    return False


_STORING_METHODS = {
    list: ("append", "extend", "insert"),
    dict: ("setdefault", "get", "pop"),
}
"""Methods of Python containers that store or hand back their arguments without looking
at them, so they may take tiles at trace time (`parts.append(t)`, as PyPTO's JIT runs
them); `list.index`, `remove`, `in` compare values and stay errors."""


def _stores_only(callee: Any) -> bool:
    owner = getattr(callee, "__self__", None)
    return type(owner) in _STORING_METHODS and (
        getattr(callee, "__name__", "") in _STORING_METHODS[type(owner)]
    )


class Scope:
    """Python name bindings: a function's locals, chained to its closure and, at the
    end, the module."""

    def __init__(self, parent: Scope | None = None):
        self.vars: dict[str, Any] = {}
        self.parent = parent

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            if isinstance(scope, LiveScope):
                return scope.lookup(name)
            scope = scope.parent
        raise KeyError(name)


class LiveScope(Scope):
    """The names a live function sees besides its locals: its closure cells, then its
    module's globals (builtins are the translator's own short list)."""

    def __init__(self, fn: types.FunctionType):
        super().__init__(None)
        self.fn = fn
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def lookup(self, name: str) -> Any:
        if name in self.vars:
            return self.vars[name]
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell: not assigned yet
                raise KeyError(name) from None
        if name in self.fn.__globals__:
            return self.fn.__globals__[name]
        raise KeyError(name)


class ReturnValue(Exception):
    def __init__(self, value: Any):
        self.value = value


class LoopControl(Exception):
    def __init__(self, kind: str, node: ast.stmt):
        self.kind = kind
        self.node = node


@dataclass
class Frame:
    """One inlined function (or the kernel itself)."""

    name: str
    region_depth: int
    is_kernel: bool
    pypto_function: bool = False
    filename: str = ""


_METHODS = ("move", "set_cache_policy")
"""Tensor methods that are not PyPTO functions of the same name."""


class _Rank(int):
    """`x.dim`: the rank, usable as an int and callable as `x.dim()`."""

    def __call__(self) -> int:
        return int(self)


class Missing:
    pass


MISSING = Missing()


def _lambda_def(node: ast.Lambda) -> ast.FunctionDef:
    """A `lambda` as the `def` it stands for."""
    fn = ast.FunctionDef(
        name="<lambda>",
        args=node.args,
        body=[ast.copy_location(ast.Return(node.body), node.body)],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    return ast.copy_location(fn, node)
