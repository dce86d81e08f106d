"""The trace-time values of the frontend besides Python constants and SSA values.

A kernel is traced the way PyPTO traces it: Python code runs (constants fold, lists
concatenate, `range` loops unroll) and only tensor and index work becomes IR. These
classes stand for the things a kernel can name that are neither a Python constant nor
an IR value: names inside the `pypto` package, `pypto.Tensor(...)` annotations,
dynamic dims, helper functions, and names the frontend refused to evaluate.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.ir import SSAValue

from tileir.dialect.dtypes import ElementType

if TYPE_CHECKING:
    from frontends.pypto.translator import Scope


@dataclass(frozen=True)
class PyptoRef:
    """A name inside the `pypto` package (`pypto.frontend.jit`, `pypto.RunMode.NPU`);
    `path` is empty for the package itself. Never imported: it is only a name."""

    path: tuple[str, ...] = ()

    @property
    def dotted(self) -> str:
        return ".".join(("pypto", *self.path))

    def __repr__(self) -> str:
        return self.dotted


@dataclass(frozen=True)
class Dynamic:
    """`pypto.frontend.dynamic("S")`: a dim whose size is known only at run time."""

    name: str


@dataclass(frozen=True)
class TensorSpec:
    """`pypto.Tensor(shape, dtype)` in a kernel argument annotation."""

    shape: tuple[int | Dynamic | PyptoRef, ...]
    dtype: ElementType


@dataclass(frozen=True)
class Poison:
    """A name the frontend could not or would not evaluate (`import torch`, a class, a
    failed module-level expression). Harmless until a kernel uses it; then `reason`
    becomes the error."""

    reason: str


@dataclass
class Helper:
    """A plain Python function (or `@pypto.frontend.function`) that kernels call: its
    body is inlined at every call, with the arguments bound Python-style."""

    node: ast.FunctionDef
    closure: Scope
    filename: str
    defaults: list[Any] = field(default_factory=list)
    kw_defaults: dict[str, Any] = field(default_factory=dict)
    pypto_function: bool = False
    """`@pypto.frontend.function`: PyPTO passes every argument and allows no `return`
    of a value (results go out through `out.move(...)`), and so does tileir."""


@dataclass
class KernelDef:
    """A `@pypto.frontend.jit` function; calling one from a kernel is not supported."""

    node: ast.FunctionDef
    decorator: ast.expr


@dataclass(frozen=True)
class BoundMethod:
    """`x.exp` for a tensor `x`: calling it calls `pypto.exp(x, ...)`."""

    receiver: SSAValue
    name: str


@dataclass(frozen=True)
class SafeModule:
    """A standard module whose pure functions kernels may use at trace time (`math`)."""

    name: str
    module: Any
