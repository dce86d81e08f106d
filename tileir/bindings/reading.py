"""What the readers of the bindings ask of a frontend value (the frontend's own tests
of the same kind sit with its evaluator)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import IndexType, MemRefType, TensorType
from xdsl.ir import Attribute, SSAValue


def is_tile(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, TensorType)


def is_mem(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, MemRefType)


def is_index(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, IndexType)


def is_number(v: Any) -> bool:
    return isinstance(v, int | float)  # bools included, as Python reads them


def shape(v: SSAValue) -> tuple[int, ...]:
    assert isinstance(v.type, TensorType | MemRefType)
    return tuple(v.type.get_shape())


def elem(v: SSAValue) -> Attribute:
    assert isinstance(v.type, TensorType | MemRefType)
    return v.type.get_element_type()
