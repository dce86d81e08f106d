"""`pto.matmul`: 2-D or batched 3-D / 4-D, optional bias and transposes, `out_dtype` result;
PyPTO's fixpipe options (`scale`, `relu_type`) and TF32 rounding (`trans_mode`); the MX
matmul `pto.scaled_mm` and `pto.quant_mx`, which makes its fp8 operands and e8m0 scales."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import FloatAttr, StringAttr, TensorType, UnitAttr, f64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import shapes
from tileir.dialect.dtypes import element_type
from tileir.dialect.ops.base import (
    OneTileOp,
    TileOp,
    _check_element_type,
    _elem,
    _expect_result,
    _rule,
    _shape,
)
from tileir.verify import signature_only

# --------------------------------------------------------------------------- shared


def _bias_dtype(op: MatmulOp | ScaledMmOp) -> str | None:
    """The optional bias's element type (checked to be one tileir has), as a short name."""
    if op.bias is None:
        return None
    _check_element_type(op, op.bias.type, "bias")
    return element_type(_elem(op.bias.type)).short


def _check_result_and_bias(op: MatmulOp | ScaledMmOp, expected: tuple[int, ...]) -> None:
    """The result has the product's shape (dynamic dims allowed); a bias broadcasts to it."""
    _expect_result(op, _shape(op.result.type), expected, exact=False)
    if op.bias is not None:
        _rule(op, shapes.matmul_bias, _shape(op.bias.type), expected)


# --------------------------------------------------------------------------- matmul

TRANS_MODES = ("CAST_RINT", "CAST_ROUND")
"""`pypto.TransMode` members that round FP32 inputs to TF32 (nearest even / nearest, ties
away from zero); `CAST_NONE`, PyPTO's default, is the absent `trans_mode`."""


@irdl_op_definition
class MatmulOp(TileOp):
    """`pypto.matmul(a, b, out_dtype, a_trans=, b_trans=, extend_params={"bias_tensor":
    bias, "scale": s, "relu_type": pypto.ReLuType.RELU, "trans_mode": pypto.TransMode.M})`;
    2-D or batched 3-D / 4-D. The result element type is `out_dtype`.

    `scale` (a per-tensor (de)quantisation factor, as written) multiplies the accumulator
    on its way out and allows the out types of PyPTO's quantising tables
    (`shapes.MATMUL_SCALED_OUT_DTYPES`: int8 -> f16 / int8, floats -> int8); `relu` (PyPTO's
    `ReLuType.RELU`) zeroes negative accumulators first; `trans_mode` (`CAST_RINT` /
    `CAST_ROUND`, FP32 inputs only) rounds the inputs to TF32 first."""

    name = "pto.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    a_trans = opt_prop_def(UnitAttr)
    b_trans = opt_prop_def(UnitAttr)
    scale = opt_prop_def(FloatAttr)
    relu = opt_prop_def(UnitAttr)
    trans_mode = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$a `,` $b (`bias` $bias^)? (`a_trans` $a_trans^)? (`b_trans` $b_trans^)?"
        " (`scale` $scale^)? (`relu` $relu^)? (`trans_mode` $trans_mode^)? attr-dict"
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
        scale: float | None = None,
        relu: bool = False,
        trans_mode: str | None = None,
    ):
        super().__init__(
            operands=[a, b, [bias] if bias is not None else []],
            properties={
                "a_trans": UnitAttr() if a_trans else None,
                "b_trans": UnitAttr() if b_trans else None,
                "scale": FloatAttr(scale, f64) if scale is not None else None,
                "relu": UnitAttr() if relu else None,
                "trans_mode": StringAttr(trans_mode) if trans_mode is not None else None,
            },
            result_types=[result_type],
        )

    @signature_only
    def verify_(self) -> None:
        a_type, b_type, result_type = self.a.type, self.b.type, self.result.type
        a_elem, b_elem = _elem(a_type), _elem(b_type)
        scale, trans_mode = self.scale, self.trans_mode
        expected = _rule(
            self,
            shapes.matmul,
            _shape(a_type),
            _shape(b_type),
            a_trans=self.a_trans is not None,
            b_trans=self.b_trans is not None,
        )
        _check_element_type(self, result_type, "result")
        if a_elem != b_elem:
            raise VerifyException(
                f"'pto.matmul' operand element types differ: {a_elem} and {b_elem}"
            )
        _check_element_type(self, a_type, "operand")
        _rule(
            self,
            shapes.matmul_dtypes,
            element_type(a_elem).short,
            element_type(_elem(result_type)).short,
            _bias_dtype(self),
            scaled=scale is not None,
        )
        if (
            scale is not None
            and not math.isfinite(scale.value.data)
            or (scale is not None and scale.value.data == 0.0)
        ):
            raise VerifyException(
                f"'pto.matmul' scale must be finite and non-zero, got {scale.value.data} "
                "(PyPTO reads 0.0 as no scale: drop it)"
            )
        if trans_mode is not None:
            if trans_mode.data not in TRANS_MODES:
                raise VerifyException(
                    f"'pto.matmul' trans_mode {trans_mode.data!r} is not one of {list(TRANS_MODES)}"
                )
            if element_type(a_elem).short != "f32":
                raise VerifyException(
                    "'pto.matmul' trans_mode (TF32 rounding) needs f32 inputs, got "
                    f"{element_type(a_elem).short}"
                )
        _check_result_and_bias(self, expected)


# --------------------------------------------------------------------------- scaled_mm


@irdl_op_definition
class ScaledMmOp(TileOp):
    """`pypto.scaled_mm(mat_a, mat_b, out_dtype, scale_a, scale_b, a_trans=, b_trans=,
    scale_a_trans=, scale_b_trans=, extend_params={"bias_tensor": bias})`: the MX
    (microscaling) matmul `out = (mat_a * scale_a) @ (mat_b * scale_b)` of fp8 operands,
    one e8m0 scale per 32 elements of K (`shapes.scaled_mm`: `scale_a` [M, K / 64, 2],
    `scale_b` [K / 64, N, 2], each `_trans` flag swapping the first two dims). 2-D; the
    result element type is `out_dtype` (f16, bf16, f32)."""

    name = "pto.scaled_mm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    scale_a = operand_def(TensorType)
    scale_b = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    a_trans = opt_prop_def(UnitAttr)
    b_trans = opt_prop_def(UnitAttr)
    scale_a_trans = opt_prop_def(UnitAttr)
    scale_b_trans = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$a `,` $b `scales` $scale_a `,` $scale_b (`bias` $bias^)? (`a_trans` $a_trans^)?"
        " (`b_trans` $b_trans^)? (`scale_a_trans` $scale_a_trans^)?"
        " (`scale_b_trans` $scale_b_trans^)? attr-dict `:` type($a) `,` type($b) `,`"
        " type($scale_a) `,` type($scale_b) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        scale_a: SSAValue | Operation,
        scale_b: SSAValue | Operation,
        result_type: TensorType,
        *,
        bias: SSAValue | Operation | None = None,
        a_trans: bool = False,
        b_trans: bool = False,
        scale_a_trans: bool = False,
        scale_b_trans: bool = False,
    ):
        flags = {
            "a_trans": a_trans,
            "b_trans": b_trans,
            "scale_a_trans": scale_a_trans,
            "scale_b_trans": scale_b_trans,
        }
        super().__init__(
            operands=[a, b, scale_a, scale_b, [bias] if bias is not None else []],
            properties={k: UnitAttr() if v else None for k, v in flags.items()},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        values = {"operand": (self.a, self.b), "scale": (self.scale_a, self.scale_b)}
        for what, pair in values.items():
            for v in pair:
                _check_element_type(self, v.type, what)
        _check_element_type(self, self.result.type, "result")
        expected = _rule(
            self,
            shapes.scaled_mm,
            _shape(self.a.type),
            _shape(self.b.type),
            _shape(self.scale_a.type),
            _shape(self.scale_b.type),
            a_trans=self.a_trans is not None,
            b_trans=self.b_trans is not None,
            scale_a_trans=self.scale_a_trans is not None,
            scale_b_trans=self.scale_b_trans is not None,
        )
        _rule(
            self,
            shapes.scaled_mm_dtypes,
            *(
                element_type(_elem(v.type)).short
                for v in (self.a, self.b, self.scale_a, self.scale_b, self.result)
            ),
            _bias_dtype(self),
        )
        _check_result_and_bias(self, expected)


# --------------------------------------------------------------------------- quant_mx


@irdl_op_definition
class QuantMxOp(OneTileOp):
    """`pypto.quant_mx(input, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, performance_mode)`:
    MX (microscaling) quantisation along the last dim, the producer of `scaled_mm`'s
    operands: per block of 32 elements one e8m0 scale `2^e`, `e = floor(log2(amax)) - 8`
    (the docs' ROUND_DOWN), and the elements `x / 2^e` in fp8 e4m3. Results: `quantized`
    (f8E4M3FN, `input`'s shape) and `scale` (f8E8M0FNU, `[..., n / 64, 2]`, see
    `shapes.quant_mx`). `performance_mode` is kept to be written back; it changes only
    PyPTO's internal layout (the docs)."""

    name = "pto.quant_mx"
    performance_mode = opt_prop_def(UnitAttr)
    quantized = result_def(TensorType)
    scale = result_def(TensorType)
    assembly_format = (
        "$input (`performance_mode` $performance_mode^)? attr-dict `:` type($input) `->`"
        " type($quantized) `,` type($scale)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        quantized_type: TensorType,
        scale_type: TensorType,
        *,
        performance_mode: bool = False,
    ):
        super().__init__(
            operands=[input],
            properties={"performance_mode": UnitAttr() if performance_mode else None},
            result_types=[quantized_type, scale_type],
        )

    def verify_(self) -> None:
        for what, v in (("input", self.input), ("quantized", self.quantized)):
            _check_element_type(self, v.type, what)
        _check_element_type(self, self.scale.type, "scale")
        dtype = element_type(_elem(self.input.type)).short
        quantized, scale = _rule(self, shapes.quant_mx, _shape(self.input.type), dtype)
        for what, v, want in (
            ("quantized", self.quantized, shapes.QUANT_MX_OUT_DTYPE),
            ("scale", self.scale, shapes.SCALED_MM_SCALE_DTYPE),
        ):
            got = element_type(_elem(v.type)).short
            if got != want:
                raise VerifyException(f"'{self.name}' {what} has {got} elements; it must be {want}")
        _expect_result(self, _shape(self.quantized.type), quantized)
        _expect_result(self, _shape(self.scale.type), scale)
