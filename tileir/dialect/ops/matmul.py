"""`pto.matmul`: 2-D or batched 3-D, optional bias and transposes, `out_dtype` result."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import shapes
from tileir.dialect.dtypes import element_type
from tileir.dialect.ops.base import (
    TileOp,
    _check_element_type,
    _elem,
    _expect_result,
    _rule,
    _shape,
)

# --------------------------------------------------------------------------- matmul


@irdl_op_definition
class MatmulOp(TileOp):
    """`pypto.matmul(a, b, out_dtype, a_trans=, b_trans=, extend_params={"bias_tensor":
    bias})`; 2-D or batched 3-D. The result element type is `out_dtype`."""

    name = "pto.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    a_trans = opt_prop_def(UnitAttr)
    b_trans = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$a `,` $b (`bias` $bias^)? (`a_trans` $a_trans^)? (`b_trans` $b_trans^)? attr-dict"
        " `:` type($a) `,` type($b) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        result_type: TensorType,
        *,
        bias: SSAValue | Operation | None = None,
        a_trans: bool = False,
        b_trans: bool = False,
    ):
        super().__init__(
            operands=[a, b, [bias] if bias is not None else []],
            properties={
                "a_trans": UnitAttr() if a_trans else None,
                "b_trans": UnitAttr() if b_trans else None,
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        a, b, r = _shape(self.a.type), _shape(self.b.type), _shape(self.result.type)
        expected = _rule(
            self,
            shapes.matmul,
            a,
            b,
            a_trans=self.a_trans is not None,
            b_trans=self.b_trans is not None,
        )
        _check_element_type(self, self.result.type, "result")
        if _elem(self.a.type) != _elem(self.b.type):
            raise VerifyException(
                f"'pto.matmul' operand element types differ: {_elem(self.a.type)} and "
                f"{_elem(self.b.type)}"
            )
        _check_element_type(self, self.a.type, "operand")
        bias = None
        if self.bias is not None:
            _check_element_type(self, self.bias.type, "bias")
            bias = element_type(_elem(self.bias.type)).short
        _rule(
            self,
            shapes.matmul_dtypes,
            element_type(_elem(self.a.type)).short,
            element_type(_elem(self.result.type)).short,
            bias,
        )
        _expect_result(self, r, expected, exact=False)
        if self.bias is not None:
            _rule(self, shapes.matmul_bias, _shape(self.bias.type), expected)
