"""The trace-time values of the frontend besides Python objects and SSA values.

A kernel is traced the way PyPTO traces it: Python code runs (constants fold, lists
concatenate, `range` loops unroll) and only tensor and index work becomes IR. These
classes stand for the things a kernel can name that are neither a plain Python object
nor an IR value: names inside the (stand-in) `pypto` package, `pypto.Tensor(...)`
annotations, dynamic dims, helper functions to inline, and values that are an error
where they are used.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.ir import SSAValue

from tileir.dialect.dtypes import ElementType

if TYPE_CHECKING:
    from frontends.pypto.scope import Scope


@dataclass(frozen=True)
class PyptoRef:
    """A name inside the `pypto` package (`pypto.frontend.jit`, `pypto.RunMode.NPU`);
    `path` is empty for the package itself. The real `pypto` is never imported: the
    stand-in module (`frontends.pypto.standin`) hands these out, so that the user's
    module-level code can name anything in `pypto` and the translator sees the name.

    Attribute access goes one name deeper (`pypto.RunMode` -> `pypto.RunMode.NPU`), and a
    call at import time runs the stand-in's version of the few functions module-level
    code needs (`frontend.jit`, `frontend.dynamic`, `Tensor`, ...)."""

    path: tuple[str, ...] = ()

    @property
    def dotted(self) -> str:
        return ".".join(("pypto", *self.path))

    def __repr__(self) -> str:
        return self.dotted

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        from frontends.pypto.standin import pypto_name

        return pypto_name((*self.path, name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from frontends.pypto.standin import call_at_import

        return call_at_import(self.path, args, kwargs)

    def __getitem__(self, params: Any) -> Any:
        # `pypto.Tensor[[pypto.STATIC, ...], pypto.DT_FP32]`
        from frontends.pypto.standin import call_at_import

        if self.path != ("Tensor",):
            raise TypeError(f"{self.dotted} is not subscriptable")
        return call_at_import(self.path, params if isinstance(params, tuple) else (params,), {})


@dataclass(frozen=True)
class Dynamic:
    """`pypto.frontend.dynamic("S")`: a dim whose size is known only at run time."""

    name: str


@dataclass(frozen=True)
class TensorSpec:
    """`pypto.Tensor(shape, dtype)` in a kernel argument annotation, as written: dims are
    ints, `Dynamic` names, `pypto.STATIC` / `pypto.DYNAMIC` (`PyptoRef`s) or `...` (the
    rest from the call); `shape` None (`pypto.tensor()`) or `()` (`pypto.Tensor([])`)
    takes every dim from the call, `dtype` None the call's dtype. `format` keeps a
    `pypto.TileOpFormat` name."""

    shape: tuple[Any, ...] | None
    dtype: ElementType | None
    format: str | None = None


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
    bound: tuple[Any, ...] = ()
    """Arguments bound before the call's own (`self` of a method)."""


@dataclass(frozen=True)
class BoundMethod:
    """`x.exp` for a tensor `x`: calling it calls `pypto.exp(x, ...)`."""

    receiver: SSAValue
    name: str
