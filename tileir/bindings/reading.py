"""What the readers of the bindings ask of a frontend value (the frontend's own tests
of the same kind sit with its evaluator)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import IndexType, MemRefType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tileir.dialect import shapes


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


def read_tile_int(
    fe: Any,
    b: dict[str, Any],
    node: ast.AST,
    op_cls: Callable[[SSAValue, int, TensorType], Operation],
    arg: str,
    what: str,
    rule: Callable[[shapes.Shape, int], shapes.Shape],
    prefix: str,
) -> SSAValue:
    """Read `pypto.f(input, <arg>)`, an op built as `op_cls(input, n, result_type)` whose
    result shape is `rule(input shape, n)` (`gathermask`, `unsqueeze`): `what` names the
    int in its error, `prefix` starts the shape rule's error."""
    x = fe.tile(b["input"], node)
    n = fe.const_int(b[arg], node, what)
    try:
        out = rule(shape(x), n)
    except shapes.ShapeError as e:
        fe.fail(node, f"{prefix} {e}")
    return fe.emit(op_cls(x, n, TensorType(elem(x), out)), node).results[0]
