"""Index ops: `pto.gathermask` (fixed patterns), `pto.gather` / `pto.index_select`
(on `_IndexOp`: an input, an integer index tile and a dim) and `pto.topk`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, BoolAttr, IntegerAttr, IntegerType, TensorType, i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import shapes
from tileir.dialect.ops.base import (
    OneTileOp,
    TileOp,
    TileToTileOp,
    _check_index_type,
    _elem,
    _expect_result,
    _rule,
    _same_elem,
    _shape,
)

# --------------------------------------------------------------------------- indexing


@irdl_op_definition
class GathermaskOp(TileToTileOp):
    """`pypto.gathermask(x, pattern_mode)`: pick elements of the last dim by a fixed
    pattern (1/2: first/second of every 2; 3-6: first..fourth of every 4; 7: all)."""

    name = "pto.gathermask"
    pattern_mode = prop_def(IntegerAttr[I64])
    assembly_format = "$input `,` $pattern_mode attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, pattern_mode: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            properties={"pattern_mode": IntegerAttr(pattern_mode, i64)},
            result_types=[result_type],
        )

    stride = staticmethod(shapes.gathermask_stride)

    def verify_(self) -> None:
        super().verify_()
        expected = _rule(
            self, shapes.gathermask, _shape(self.input.type), self.pattern_mode.value.data
        )
        _expect_result(self, _shape(self.result.type), expected)


class _IndexOp(TileToTileOp):
    input = operand_def(TensorType)  # operand 0 (see ReshapeOp)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `,` $dim `,` $index attr-dict `:` type($input) `,` type($index) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        dim: int,
        index: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, index],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    SHAPE_RULE: ClassVar[Callable[[Sequence[int], Sequence[int], int], shapes.Shape]]
    """The op's result-shape rule in `shapes`: (input shape, index shape, dim)."""

    def expected_shape(self) -> shapes.Shape:
        return _rule(
            self,
            type(self).SHAPE_RULE,
            _shape(self.input.type),
            _shape(self.index.type),
            self.dim.value.data,
        )

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(_elem(self.index.type), IntegerType) or _elem(self.index.type) == i1:
            raise VerifyException(
                f"'{self.name}' index has element type {_elem(self.index.type)}; it must be "
                "an integer type"
            )
        _expect_result(self, _shape(self.result.type), self.expected_shape())


@irdl_op_definition
class GatherOp(_IndexOp):
    """`pypto.gather(input, dim, index)`: torch.gather semantics, as PyPTO 0.2.0
    (`GatherElements`) and the numpy back end have it: the result has the index's shape,
    and the index has the input's rank."""

    name = "pto.gather"
    SHAPE_RULE = staticmethod(shapes.gather)


@irdl_op_definition
class IndexSelectOp(_IndexOp):
    """`pypto.index_select(input, dim, index)`: `np.take` semantics, as PyPTO 0.2.0 traces
    it: the index's shape replaces dim `dim` (`[V, H]` by a `[1, S]` index at dim 0 is
    `[1, S, H]`, the Embedding lookup)."""

    name = "pto.index_select"
    SHAPE_RULE = staticmethod(shapes.index_select)


@irdl_op_definition
class TopkOp(OneTileOp):
    """`pypto.topk(input, k, dim, largest)` -> (values, indices)."""

    name = "pto.topk"
    k = prop_def(IntegerAttr[I64])
    dim = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, i64))
    largest = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    values = result_def(TensorType)
    indices = result_def(TensorType)
    assembly_format = (
        "$input `,` $k (`dim` $dim^)? (`largest` $largest^)? attr-dict `:` type($input) `->`"
        " type($values) `,` type($indices)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        k: int,
        dim: int,
        largest: bool,
        values_type: TensorType,
        indices_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "k": IntegerAttr(k, i64),
                "dim": IntegerAttr(dim, i64),
                "largest": BoolAttr.from_bool(largest),
            },
            result_types=[values_type, indices_type],
        )

    def verify_(self) -> None:
        expected = _rule(
            self, shapes.topk, _shape(self.input.type), self.k.value.data, self.dim.value.data
        )
        _same_elem(self, self.input.type, self.values.type)
        for r in (self.values, self.indices):
            _expect_result(self, _shape(r.type), expected)
        index_type = _elem(self.indices.type)
        if not isinstance(index_type, IntegerType) or index_type == i1:
            raise VerifyException("'pto.topk' indices must have an integer element type")
        size = _shape(self.input.type)[shapes.norm_dim(self.dim.value.data, len(expected))]
        _rule(self, shapes.index_fits, size, index_type.width.data, "indices")


@irdl_op_definition
class DeinterleaveOp(TileOp):
    """`pypto.deinterleave(input, other=None)` -> (even, odd): the elements at even and
    odd positions of the last dim of `input` (last dim halved), or of the stream
    `concat([input, other], -1)` (both results of the input's shape)."""

    name = "pto.deinterleave"
    input = operand_def(TensorType)
    other = opt_operand_def(TensorType)
    even = result_def(TensorType)
    odd = result_def(TensorType)
    assembly_format = (
        "$input (`,` $other^)? attr-dict `:` type($input) (`,` type($other)^)? `->` "
        "type($even) `,` type($odd)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        other: SSAValue | Operation | None,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, [other] if other is not None else []],
            result_types=[result_type, result_type],
        )

    def verify_(self) -> None:
        _check_index_type(self, self.input.type, DEINTERLEAVE_ELEMENTS, "input")
        if self.other is not None and self.other.type != self.input.type:
            raise VerifyException(
                f"'pto.deinterleave' other {self.other.type} differs from input {self.input.type}"
            )
        expected = _rule(self, shapes.deinterleave, _shape(self.input.type), self.other is not None)
        for r in (self.even, self.odd):
            _same_elem(self, self.input.type, r.type)
            _expect_result(self, _shape(r.type), expected)


DEINTERLEAVE_ELEMENTS = ("i8", "i16", "i32", "f16", "f32", "bf16")
"""The element types `pypto.deinterleave` takes (its docs)."""
