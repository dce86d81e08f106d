"""Reductions along one dim: `pto.sum`, `pto.amax`, `pto.amin` (on `ReduceOp`)."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def

from tileir.dialect import shapes
from tileir.dialect.ops.base import (
    NUMERIC,
    TileToTileOp,
    _check_element_type,
    _check_kind,
    _expect_result,
    _rule,
    _shape,
)
from tileir.verify import signature_only

# --------------------------------------------------------------------------- reductions


class ReduceOp(TileToTileOp):
    """`pypto.sum / amax / amin(input, dim, keepdim)`."""

    dim = prop_def(IntegerAttr[I64])
    keepdim = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input `,` $dim (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        dim: int,
        keepdim: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "dim": IntegerAttr(dim, i64),
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    reduced_shape = staticmethod(shapes.reduced_shape)

    @signature_only
    def verify_(self) -> None:
        super().verify_()
        t = self.input.type
        expected = _rule(
            self, shapes.reduce, _shape(t), self.dim.value.data, self.keepdim is not None
        )
        _check_element_type(self, t, "operand")
        _check_kind(self, t, NUMERIC, "operand")
        _expect_result(self, _shape(self.result.type), expected)


@irdl_op_definition
class SumOp(ReduceOp):
    name = "pto.sum"


@irdl_op_definition
class AmaxOp(ReduceOp):
    name = "pto.amax"


@irdl_op_definition
class AminOp(ReduceOp):
    name = "pto.amin"
