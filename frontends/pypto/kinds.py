"""What kind of trace-time value a thing is, and how an error message names it.

The evaluator, the region builder and the bindings all ask the same questions of a
value (a tile? a tensor in memory? a run-time index?) and name it the same way in a
diagnostic (`a tile of shape [16, 64] bf16`); the answers live here once.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, SSAValue

from frontends.pypto.standin import JitKernel
from frontends.pypto.values import BoundMethod, Dynamic, Helper, PyptoRef, TensorSpec
from tileir.dialect import dtypes, shapes


def is_ssa(v: Any) -> bool:
    return isinstance(v, SSAValue)


def is_tile(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, TensorType)


def is_mem(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, MemRefType)


def is_index(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, IndexType)


def is_cond(v: Any) -> bool:
    return isinstance(v, SSAValue) and v.type == i1


def is_number(v: Any) -> bool:
    return isinstance(v, int | float)  # bools included


def static_shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def element_of(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType | MemRefType)
    return t.get_element_type()


def describe(v: Any) -> str:
    """A value as a user would call it in an error message."""
    if is_tile(v):
        return f"a tile of shape {shapes.fmt(static_shape(v.type))} {element_of(v.type)}"
    if is_mem(v):
        return (
            f"a tensor in memory of shape {shapes.fmt(static_shape(v.type))} {element_of(v.type)}"
        )
    if is_index(v):
        return "a runtime index value"
    if is_cond(v):
        return "a runtime condition"
    if isinstance(v, dtypes.ElementType):
        return f"pypto.{v.pypto}"
    if isinstance(v, PyptoRef):
        return v.dotted
    if isinstance(v, Helper):
        return f"function {short(v)}"
    if isinstance(v, JitKernel):
        return f"the kernel {v.fn.__name__}()"
    if v is None:
        return "None"
    if isinstance(v, str):
        return f"the string {v!r}"
    if isinstance(v, list | tuple):
        return f"{type(v).__name__} {short(v)}"
    if isinstance(v, int | float | bool | dict | range):
        return f"{type(v).__name__} {v!r}"
    return short(v)


def short(v: Any) -> str:
    """A value inside a container, in source-like spelling."""
    if isinstance(v, list):
        return "[" + ", ".join(short(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(short(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if is_tile(v):
        return f"<tile {shapes.fmt(static_shape(v.type))} {element_of(v.type)}>"
    if is_mem(v):
        return f"<tensor {shapes.fmt(static_shape(v.type))} {element_of(v.type)}>"
    if is_index(v):
        return "<index>"
    if is_cond(v):
        return "<condition>"
    if isinstance(v, dtypes.ElementType):
        return f"pypto.{v.pypto}"
    if isinstance(v, PyptoRef):
        return v.dotted
    if isinstance(v, TensorSpec):
        return f"pypto.Tensor({short(list(v.shape))}, pypto.{v.dtype.pypto})"
    if isinstance(v, Dynamic):
        return f"pypto.frontend.dynamic({v.name!r})"
    if isinstance(v, Helper):
        return f"{v.node.name}()" if isinstance(v.node, ast.FunctionDef) else "<lambda>"
    if isinstance(v, JitKernel):
        return f"{v.fn.__name__}()"
    if isinstance(v, BoundMethod):
        return f"<tensor method {v.name}>"
    if isinstance(v, types.ModuleType):
        return f"the module {v.__name__}"
    if isinstance(v, int | float | bool | str | type(None) | dict | range):
        return repr(v)
    if isinstance(v, types.ModuleType):
        return v.__name__
    t = type(v)
    return f"a {t.__module__.split('.')[0]}.{t.__qualname__} object"
