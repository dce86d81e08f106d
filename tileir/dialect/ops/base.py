"""The bases and verifier helpers that every `pto` op family shares.

`TileOp` (pure, every result a PyPTO tile through the `TileResults` trait), `OneTileOp`
(one tile operand `input`) and `TileToTileOp` (`input` -> `result`, same element type
unless `SAME_ELEMENT` is off) hold the defs and checks the families would otherwise
repeat; the helpers check element types, index lists, tile windows and result shapes
with messages that name the op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloatConstr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    i1,
    i64,
)
from xdsl.dialects.utils.dynamic_index_list import get_dynamic_index_list, split_dynamic_index_list
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, base, operand_def, result_def, traits_def
from xdsl.traits import OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import shapes
from tileir.dialect.dtypes import BY_MLIR, ELEMENT_TYPES, is_element_type
from tileir.dialect.shapes import ShapeError
from tileir.verify import signature_only

MAX_TILE_RANK = 4

ScalarType = base(IndexType) | base(IntegerType) | AnyFloatConstr
TileOrScalar = base(TensorType) | ScalarType


# --------------------------------------------------------------------------- helpers


_SHAPED = (TensorType, MemRefType)


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, _SHAPED)
    return t.get_shape()


def _elem(t: Attribute) -> Attribute:
    assert isinstance(t, _SHAPED)
    return t.get_element_type()


def _check_element_type(op: Operation, t: Attribute, what: str) -> None:
    if isinstance(t, _SHAPED) and not is_element_type(t.get_element_type()):
        names = ", ".join(e.short for e in ELEMENT_TYPES)
        raise VerifyException(
            f"'{op.name}' {what} has element type {_elem(t)}, which PyPTO does not "
            f"have (use one of {names})"
        )


NUMERIC = frozenset({"float", "int"})
FLOAT = frozenset({"float"})
ANY_KIND = frozenset({"float", "int", "bool"})


def _check_kind(op: Operation, t: Attribute, kinds: frozenset[str], what: str) -> None:
    """The element type of `t` is of one of `kinds` (`float`, `int`, `bool`)."""
    row = BY_MLIR.get(_elem(t))
    if row is not None and row.kind not in kinds:
        allowed = " or ".join(sorted(kinds))
        raise VerifyException(
            f"'{op.name}' {what} has element type {_elem(t)}; the op takes {allowed} tiles"
        )


def _check_scalar(op: Operation, scalar: Attribute, tile_elem: Attribute) -> None:
    """A scalar operand combines with a tile as PyPTO's `Element(dtype, value)`: an
    integer tile takes an integer scalar, an i1 tile only an i1 scalar."""
    row = BY_MLIR.get(tile_elem)
    if row is None or row.kind == "float":
        return
    if row.kind == "bool" and scalar != i1:
        raise VerifyException(f"'{op.name}' an i1 tile takes only an i1 scalar, not {scalar}")
    if row.kind == "int" and not isinstance(scalar, IntegerType | IndexType):
        raise VerifyException(
            f"'{op.name}' a {scalar} scalar cannot combine with a {tile_elem} tile "
            "(PyPTO: no float scalar with an integer tensor)"
        )


_T = TypeVar("_T")


def _rule(op: Operation, rule: Callable[..., _T], *args: object, **kwargs: object) -> _T:
    """Apply a rule of `shapes` (shared with the frontend), naming the op in its error."""
    try:
        return rule(*args, **kwargs)
    except ShapeError as e:
        raise VerifyException(f"'{op.name}' {e}") from None


def _expect_result(
    op: Operation, actual: Sequence[int], expected: Sequence[int], *, exact: bool = True
) -> None:
    """The result type must have the shape the rule computed (`exact=False`: a `?` on
    either side matches any size)."""
    ok = tuple(actual) == tuple(expected) if exact else shapes.shapes_compatible(expected, actual)
    if not ok:
        raise VerifyException(
            f"'{op.name}' result shape {shapes.fmt(actual)} should be {shapes.fmt(expected)}"
        )


def constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` index, or None when not a constant."""
    owner = value.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def mixed_values(static: DenseArrayBase, dynamic: Sequence[SSAValue]) -> list[int | SSAValue]:
    """A mixed index list `[0, %i]` from its static / dynamic halves."""
    return get_dynamic_index_list(static.get_values(), dynamic, DYNAMIC_INDEX)


def operand_segments(op: Operation) -> list[tuple[SSAValue, ...]]:
    """The operand groups of an op with `AttrSizedOperandSegments(as_property=True)`,
    one per operand def in order, decoding the segment sizes once (each of xDSL's
    named accessors decodes them again). For verifiers, which run after xDSL checked
    the sizes."""
    sizes = op.properties["operandSegmentSizes"]
    assert isinstance(sizes, DenseArrayBase)
    operands = op.operands
    groups: list[tuple[SSAValue, ...]] = []
    start = 0
    for n in sizes.get_values():
        groups.append(tuple(operands[start : start + n]))
        start += n
    return groups


def _static_or_constant(v: int | SSAValue) -> int | None:
    return v if isinstance(v, int) else constant_index(v)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def _split(values: Sequence[int | SSAValue]) -> tuple[DenseArrayBase, list[SSAValue]]:
    static, dynamic = split_dynamic_index_list(values, DYNAMIC_INDEX)
    return _i64_array(static), dynamic


def _check_index_list(
    op: Operation, what: str, static: DenseArrayBase, dynamic: Sequence[SSAValue]
) -> list[int | SSAValue]:
    """The mixed index list of `static` / `dynamic` (as `mixed_values`), after checking
    that `dynamic` has one value for each `?` of `static`."""
    values = static.get_values()
    if values.count(DYNAMIC_INDEX) != len(dynamic):
        raise VerifyException(
            f"'{op.name}' {what} has {values.count(DYNAMIC_INDEX)} dynamic positions "
            f"but {len(dynamic)} index operands"
        )
    return get_dynamic_index_list(values, dynamic, DYNAMIC_INDEX)


def _valid_size(op: Operation, d: int, entry: int | SSAValue, size: int) -> int | None:
    """The valid size `entry` of dim `d` when it is known, checked against the tile's
    `size` in that dim; None when it is only known at run time."""
    v = _static_or_constant(entry)
    if v is None:
        return None
    if v < 0:
        raise VerifyException(f"'{op.name}' valid_shape {v} in dim {d} is negative")
    if v > size and size != DYNAMIC_INDEX:
        raise VerifyException(
            f"'{op.name}' valid_shape {v} in dim {d} exceeds the tile size {size}"
        )
    return v


def _check_window(
    op: Operation,
    region_shape: Sequence[int],
    offsets: Sequence[int | SSAValue],
    valid: Sequence[int | SSAValue] | None,
    tile_shape: Sequence[int],
    what: str,
) -> None:
    """Static bounds check of a tile window `offsets + valid` inside `region_shape`."""
    if len(offsets) != len(region_shape):
        raise VerifyException(
            f"'{op.name}' has {len(offsets)} offsets for a rank-{len(region_shape)} {what}"
        )
    if valid is not None and len(valid) != len(tile_shape):
        raise VerifyException(
            f"'{op.name}' valid_shape has {len(valid)} entries for a rank-{len(tile_shape)} tile"
        )
    for d, off in enumerate(offsets):
        o = _static_or_constant(off)
        if o is None:
            continue
        if o < 0:
            raise VerifyException(f"'{op.name}' offset {o} in dim {d} is negative")
        size = tile_shape[d] if d < len(tile_shape) else 1
        if valid is not None and d < len(valid):
            v = _valid_size(op, d, valid[d], size)
            if v is None:
                continue
            size = v
        if size == DYNAMIC_INDEX or region_shape[d] == DYNAMIC_INDEX:
            continue
        if o + size > region_shape[d]:
            raise VerifyException(
                f"'{op.name}' window [{o}, {o + size}) in dim {d} is outside the {what} "
                f"of size {region_shape[d]}; give a valid_shape for a tail tile"
            )


def verify_tile_shape(op: Operation, shape: Sequence[int], what: str) -> None:
    if not 1 <= len(shape) <= MAX_TILE_RANK:
        raise VerifyException(
            f"'{op.name}' {what} has rank {len(shape)}; PyPTO tiles have 1 to {MAX_TILE_RANK} dims"
        )
    if any(s <= 0 for s in shape):
        raise VerifyException(f"'{op.name}' {what} {list(shape)} has a dim <= 0")


def normalize_unroll_list(factors: Sequence[int]) -> list[int]:
    """PyPTO's normalisation: sorted descending, with 1 added.

    Zeros, negatives and duplicates are errors rather than silently dropped: a user who
    wrote `[4, 4]` or `[0, 2]` made a mistake worth hearing about.
    """
    bad = [f for f in factors if f <= 0]
    if bad:
        raise ValueError(f"unroll_list factors must be positive, got {bad[0]}")
    if len(set(factors)) != len(factors):
        raise ValueError(f"unroll_list {list(factors)} has duplicate factors")
    out = sorted(set(factors) | {1}, reverse=True)
    return out


MAX_DIM = 2**31 - 1
"""Largest size of one dim: PyPTO's shapes are 32-bit on the device, and a larger
dim cannot be allocated on any back end."""


def verify_dims(op: Operation, shape: Sequence[int], what: str) -> None:
    """Every static dim of a tensor or memref is in 1..MAX_DIM (`?` is any size)."""
    for d, s in enumerate(shape):
        if s != DYNAMIC_INDEX and not 1 <= s <= MAX_DIM:
            raise VerifyException(
                f"'{op.name}' {what} has size {s} in dim {d}; sizes must be in 1..{MAX_DIM}"
            )


class TileResults(OpTrait):
    """Every tile (`tensor`) result is a PyPTO tile: rank 1 to MAX_TILE_RANK, each
    static dim in 1..MAX_DIM. One rule for all ops that make tiles, so no op can build a
    tile that `pto.view` or the back ends refuse."""

    @signature_only
    def verify(self, op: Operation) -> None:
        for i, r in enumerate(op.results):
            if isinstance(r.type, TensorType):
                shape = r.type.get_shape()
                if (
                    1 <= len(shape) <= MAX_TILE_RANK
                    and DYNAMIC_INDEX not in shape
                    and 1 <= min(shape)
                    and max(shape) <= MAX_DIM
                ):
                    continue  # the common case, which both checks below pass
                what = "result" if len(op.results) == 1 else f"result #{i}"
                verify_tile_shape(op, [1 if s == DYNAMIC_INDEX else s for s in shape], what)
                verify_dims(op, shape, what)


# --------------------------------------------------------------------------- op families


def _same_elem(op: Operation, a: Attribute, b: Attribute) -> None:
    if _elem(a) != _elem(b):
        raise VerifyException(f"'{op.name}' changes the element type from {_elem(a)} to {_elem(b)}")


class TileOp(IRDLOperation):
    """An op that computes tiles from tiles and scalars: pure, and every result a PyPTO
    tile (`TileResults`)."""

    traits = traits_def(Pure(), TileResults())


class OneTileOp(TileOp):
    """A tile op of one tile operand, `input` (more operands and results per op)."""

    input = operand_def(TensorType)


class TileToTileOp(OneTileOp):
    """A tile op from `input` to one tile `result`; with `SAME_ELEMENT` (the default)
    the result keeps the input's element type."""

    result = result_def(TensorType)

    SAME_ELEMENT: ClassVar[bool] = True

    @signature_only
    def verify_(self) -> None:
        if self.SAME_ELEMENT:
            _same_elem(self, self.input.type, self.result.type)


def _check_index_type(op: Operation, t: Attribute, allowed: Sequence[str], what: str) -> None:
    row = BY_MLIR.get(_elem(t))
    if row is None or row.short not in allowed:
        raise VerifyException(
            f"'{op.name}' {what} has element type {_elem(t)}; it must be one of {', '.join(allowed)}"
        )
