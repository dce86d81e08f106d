"""Elementwise ops: `pto.cast`, the unary (`neg`, `exp` ...), binary (`add`, `div` ...)
and comparison (`eq` ...) families, `pto.full` and `pto.where`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i1,
    i64,
)
from xdsl.dialects.utils.dynamic_index_list import DynamicIndexList
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tileir.dialect import shapes
from tileir.dialect.dtypes import BY_MLIR
from tileir.dialect.ops.base import (
    ANY_KIND,
    FLOAT,
    NUMERIC,
    ScalarType,
    TileOp,
    TileOrScalar,
    TileToTileOp,
    _check_element_type,
    _check_index_list,
    _check_index_type,
    _check_kind,
    _check_scalar,
    _elem,
    _expect_result,
    _i64_array,
    _rule,
    _shape,
    _split,
    _valid_size,
    mixed_values,
    verify_tile_shape,
)
from tileir.verify import signature_only


class CastMode(StrEnum):
    """PyPTO's `pypto.CastMode` members, lower case without the `CAST_` prefix."""

    NONE = "none"
    RINT = "rint"
    ROUND = "round"
    FLOOR = "floor"
    CEIL = "ceil"
    TRUNC = "trunc"
    ODD = "odd"


@irdl_attr_definition
class CastModeAttr(EnumAttribute[CastMode], SpacedOpaqueSyntaxAttribute):
    """A cast mode: `rint` in the custom form, `#pto<cast_mode rint>` in the generic one
    (which the real mlir-opt keeps as an opaque attribute of the unregistered dialect)."""

    name = "pto.cast_mode"


CAST_MODES = tuple(m.value for m in CastMode)


@irdl_op_definition
class CastOp(TileToTileOp):
    """`pypto.cast(input, dtype, mode, satmode)`."""

    name = "pto.cast"
    SAME_ELEMENT: ClassVar[bool] = False
    mode = prop_def(CastModeAttr, default_value=CastModeAttr(CastMode.NONE))
    satmode = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input (`mode` $mode^)? (`sat` $satmode^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: TensorType,
        mode: str = "none",
        saturate: bool = False,
    ):
        super().__init__(
            operands=[input],
            properties={
                "mode": CastModeAttr(CastMode(mode)),
                "satmode": UnitAttr() if saturate else None,
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        super().verify_()
        _check_element_type(self, self.result.type, "result")
        if _shape(self.input.type) != _shape(self.result.type):
            raise VerifyException(
                f"'pto.cast' changes the shape from {list(_shape(self.input.type))} to "
                f"{list(_shape(self.result.type))}"
            )


# --------------------------------------------------------------------------- elementwise


class UnaryOp(TileOp):
    """Elementwise op of one tile; result has the operand's type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    assembly_format = "$input attr-dict `:` type($result)"

    ELEMENT_KINDS: ClassVar[frozenset[str]] = FLOAT
    """The element-type classes the op is defined on."""

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[SSAValue.get(input).type])

    @signature_only
    def verify_(self) -> None:
        t = self.input.type
        if t != self.result.type:
            raise VerifyException(f"'{self.name}' result type must equal the operand type")
        _check_element_type(self, t, "operand")
        _check_kind(self, t, self.ELEMENT_KINDS, "operand")


PRECISION_TYPES = ("HIGH_PRECISION", "INTRINSIC")
"""Members of `pypto.PrecisionType` (newer PyPTO): how the NPU computes div, pow, exp,
sqrt, rsqrt, log and reciprocal (its docs also list fmod, remainder, log2, log10)."""


def _verify_precision(op: IRDLOperation, precision: StringAttr | None) -> None:
    if precision is not None and precision.data not in PRECISION_TYPES:
        raise VerifyException(
            f"'{op.name}' precision_type {precision.data!r} is not one of {list(PRECISION_TYPES)}"
        )


class PrecisionUnaryOp(UnaryOp):
    """A unary op with PyPTO's `precision_type` (a `PRECISION_TYPES` member; absent:
    PyPTO's default for the op, INTRINSIC for exp). It picks how the NPU computes the
    function; tileir's numpy back end computes it one way for every mode."""

    precision_type = opt_prop_def(StringAttr)
    assembly_format = "$input (`precision` $precision_type^)? attr-dict `:` type($result)"

    @signature_only
    def verify_(self) -> None:
        super().verify_()
        _verify_precision(self, self.precision_type)


@irdl_op_definition
class NegOp(UnaryOp):
    name = "pto.neg"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class ExpOp(PrecisionUnaryOp):
    name = "pto.exp"


@irdl_op_definition
class LogOp(PrecisionUnaryOp):
    name = "pto.log"


@irdl_op_definition
class SqrtOp(PrecisionUnaryOp):
    name = "pto.sqrt"


@irdl_op_definition
class RsqrtOp(PrecisionUnaryOp):
    name = "pto.rsqrt"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "pto.tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "pto.erf"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "pto.sigmoid"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "pto.abs"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class ReciprocalOp(PrecisionUnaryOp):
    name = "pto.reciprocal"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "pto.relu"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


def _operand_shape(t: Attribute) -> tuple[int, ...]:
    return t.get_shape() if isinstance(t, TensorType) else ()


def _broadcast_result(op: Operation, types: Sequence[Attribute], result: Attribute) -> None:
    """The tile operands (of `types`, the operand types) have PyPTO element types and
    broadcast to the shape of `result`."""
    tiles = [t for t in types if isinstance(t, TensorType)]
    if not tiles:
        raise VerifyException(f"'{op.name}' needs at least one tile operand")
    for t in tiles:
        _check_element_type(op, t, "operand")
    expected = _rule(op, shapes.broadcast, *[_operand_shape(t) for t in types])
    assert isinstance(result, TensorType)
    _expect_result(op, result.get_shape(), expected, exact=False)


class BinaryOp(TileOp):
    """Elementwise op of two operands, each a tile or a scalar (`pypto.add(x, 1.0)`);
    tiles broadcast numpy-style. Result element type is the tiles' element type."""

    lhs = operand_def(TileOrScalar)
    rhs = operand_def(TileOrScalar)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC
    """The element-type classes of the tile operands the op is defined on."""

    def result_element_type(self) -> Attribute:
        return _elem(self.result.type)

    @signature_only
    def verify_(self) -> None:
        types = (self.lhs.type, self.rhs.type)
        result = self.result.type
        _broadcast_result(self, types, result)
        tiles = [t for t in types if isinstance(t, TensorType)]
        for t in tiles:
            _check_kind(self, t, self.ELEMENT_KINDS, "operand")
        for t in types:
            if not isinstance(t, TensorType):
                _check_scalar(self, t, _elem(tiles[0]))
        elems = {_elem(t) for t in tiles}
        if len(elems) > 1:
            raise VerifyException(
                f"'{self.name}' mixes element types {sorted(map(str, elems))}; cast one "
                "operand first"
            )
        result_elem = _elem(result)
        if elems and self.result_element_type() != result_elem:
            raise VerifyException(f"'{self.name}' has a wrong result element type")
        if elems and result_elem not in elems and not isinstance(self, CompareOp):
            raise VerifyException(
                f"'{self.name}' result element type {result_elem} differs from "
                f"the operands' {elems.pop()}"
            )


class PrecisionBinaryOp(BinaryOp):
    """A binary op with PyPTO's `precision_type` (as `PrecisionUnaryOp`)."""

    precision_type = opt_prop_def(StringAttr)
    assembly_format = (
        "$lhs `,` $rhs (`precision` $precision_type^)? attr-dict `:` type($lhs) `,` "
        "type($rhs) `->` type($result)"
    )

    @signature_only
    def verify_(self) -> None:
        super().verify_()
        _verify_precision(self, self.precision_type)


@irdl_op_definition
class AddOp(BinaryOp):
    name = "pto.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "pto.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "pto.mul"


@irdl_op_definition
class DivOp(PrecisionBinaryOp):
    """`pypto.div(x, y, precision_type=...)` (PyPTO's default: HIGH_PRECISION)."""

    name = "pto.div"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "pto.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "pto.minimum"


@irdl_op_definition
class PowOp(PrecisionBinaryOp):
    name = "pto.pow"


class CompareOp(BinaryOp):
    """Elementwise comparison; the result is an i1 tile (PyPTO's DT_BOOL)."""

    ELEMENT_KINDS: ClassVar[frozenset[str]] = ANY_KIND

    def result_element_type(self) -> Attribute:
        return i1


@irdl_op_definition
class EqOp(CompareOp):
    name = "pto.eq"


@irdl_op_definition
class NeOp(CompareOp):
    name = "pto.ne"


@irdl_op_definition
class LtOp(CompareOp):
    name = "pto.lt"


@irdl_op_definition
class LeOp(CompareOp):
    name = "pto.le"


@irdl_op_definition
class GtOp(CompareOp):
    name = "pto.gt"


@irdl_op_definition
class GeOp(CompareOp):
    name = "pto.ge"


@irdl_op_definition
class FullOp(TileOp):
    """`pypto.full(size, fill_value, dtype, valid_shape=...)`."""

    name = "pto.full"
    value = operand_def(ScalarType)
    valid_shape = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    static_valid_shape = prop_def(DenseArrayBase.constr(i64), default_value=_i64_array([]))
    result = result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$value (`valid` custom<DynamicIndexList>($valid_shape, $static_valid_shape)^)?"
        " (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($value) `->` type($result)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        result_type: TensorType,
        valid_shape: Sequence[int | SSAValue] | None = None,
        sizes: Sequence[SSAValue] = (),
    ):
        sv, dv = _split(valid_shape or [])
        super().__init__(
            operands=[value, dv, list(sizes)],
            properties={"static_valid_shape": sv},
            result_types=[result_type],
        )

    @property
    def mixed_valid_shape(self) -> list[int | SSAValue] | None:
        return mixed_values(self.static_valid_shape, self.valid_shape) or None

    def verify_(self) -> None:
        _check_index_list(self, "valid_shape", self.static_valid_shape, self.valid_shape)
        _check_element_type(self, self.result.type, "result")
        _check_scalar(self, self.value.type, _elem(self.result.type))
        shape = _shape(self.result.type)
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in shape], "result")
        if len(self.sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.full' result has {shape.count(DYNAMIC_INDEX)} dynamic dims but "
                f"{len(self.sizes)} sizes"
            )
        valid = self.mixed_valid_shape
        if valid is not None and len(valid) != len(shape):
            raise VerifyException(
                f"'pto.full' valid_shape has {len(valid)} entries for a rank-{len(shape)} result"
            )
        for d, entry in enumerate(valid or []):
            _valid_size(self, d, entry, shape[d])


@irdl_op_definition
class WhereOp(TileOp):
    """`pypto.where(condition, input, other)`."""

    name = "pto.where"
    condition = operand_def(TensorType)
    input = operand_def(TileOrScalar)
    other = operand_def(TileOrScalar)
    result = result_def(TensorType)
    assembly_format = (
        "$condition `,` $input `,` $other attr-dict `:` type($condition) `,` type($input)"
        " `,` type($other) `->` type($result)"
    )

    def __init__(
        self,
        condition: SSAValue | Operation,
        input: SSAValue | Operation,
        other: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(operands=[condition, input, other], result_types=[result_type])

    def verify_(self) -> None:
        if _elem(self.condition.type) != i1:
            raise VerifyException(
                f"'pto.where' condition has element type {_elem(self.condition.type)}; "
                "it must be i1"
            )
        _broadcast_result(
            self, (self.condition.type, self.input.type, self.other.type), self.result.type
        )
        for v in (self.input, self.other):
            if not isinstance(v.type, TensorType):
                _check_scalar(self, v.type, _elem(self.result.type))
            elif _elem(v.type) != _elem(self.result.type):
                raise VerifyException(
                    f"'pto.where' operand element type {_elem(v.type)} differs from the "
                    f"result's {_elem(self.result.type)}"
                )


@irdl_op_definition
class CloneOp(UnaryOp):
    """`pypto.clone(x)` / `x.clone()`: a copy of the tile in new memory (in the IR, where
    tiles are values, the same value; it stays an op so that the copy PyPTO makes is
    written back)."""

    name = "pto.clone"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = ANY_KIND


@irdl_op_definition
class SiluOp(UnaryOp):
    """`pypto.silu(x)` = x * sigmoid(x) (newer PyPTO; the `-t pypto` writer gives 0.2.0 a
    helper)."""

    name = "pto.silu"


@irdl_op_definition
class RoundOp(UnaryOp):
    """`pypto.round(x, decimals=0)` / `x.round(decimals)`: to `decimals` decimal places
    (negative: places left of the point), halves to even; `decimals` absent is 0."""

    name = "pto.round"
    decimals = opt_prop_def(IntegerAttr[I64])
    assembly_format = "$input (`decimals` $decimals^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, decimals: int = 0):
        super().__init__(input)
        if decimals:
            self.decimals = IntegerAttr(decimals, i64)


LOGICAL_NOT_ELEMENTS = ("f32", "f16", "bf16", "i1", "i8", "i16", "i32")
"""The element types `pypto.logical_not` takes (its docs; 0.2.0 lacks the integer
path, see the binding)."""


@irdl_op_definition
class LogicalNotOp(TileToTileOp):
    """`pypto.logical_not(x)`: `x == 0` elementwise, an i1 tile of x's shape."""

    name = "pto.logical_not"
    SAME_ELEMENT: ClassVar[bool] = False
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_index_type(self, self.input.type, LOGICAL_NOT_ELEMENTS, "operand")
        if _elem(self.result.type) != i1:
            raise VerifyException(
                f"'pto.logical_not' result has element type {_elem(self.result.type)}; it must be i1"
            )
        _expect_result(self, _shape(self.result.type), _shape(self.input.type))


FILLPAD_VALUES: dict[str, float] = {"0.0": 0.0, "inf": float("inf"), "-inf": float("-inf")}
"""The fill values `pypto.fillpad` supports (its docs: only 0.0, inf and -inf), by the
spelling the IR keeps."""


@irdl_op_definition
class FillpadOp(TileToTileOp):
    """`pypto.fillpad(x, "constant", value)`: the tile with everything outside its valid
    shape set to `value` ("0.0", "inf" or "-inf"); the result is fully valid and has x's
    type."""

    name = "pto.fillpad"
    value = prop_def(StringAttr)
    assembly_format = "$input `value` $value attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, value: str):
        super().__init__(
            operands=[input],
            properties={"value": StringAttr(value)},
            result_types=[SSAValue.get(input).type],
        )

    @property
    def fill(self) -> float:
        return FILLPAD_VALUES[self.value.data]

    def verify_(self) -> None:
        super().verify_()
        _check_element_type(self, self.input.type, "operand")
        _expect_result(self, _shape(self.result.type), _shape(self.input.type))
        v = self.value.data
        if v not in FILLPAD_VALUES:
            raise VerifyException(
                f"'pto.fillpad' value {v!r} is not supported (PyPTO fills with "
                f"{', '.join(FILLPAD_VALUES)})"
            )
        row = BY_MLIR.get(_elem(self.input.type))
        if row is not None and row.kind != "float" and v != "0.0":
            raise VerifyException(
                f"'pto.fillpad' cannot fill a {_elem(self.input.type)} tile with {v}; use 0.0"
            )


ARANGE_ELEMENTS = ("i32", "i64", "f32")
"""PyPTO's `arange` types: int32 for int bounds (int64 past int32's range), fp32 when
any bound is a float."""


@irdl_op_definition
class ArangeOp(TileOp):
    """`pypto.arange(start, end, step)`: the 1-D tile `start + i * step` for i in
    0..ceil((end - start) / step) - 1. The bounds are Python numbers of the kernel."""

    name = "pto.arange"
    start = prop_def(FloatAttr[Float64Type])
    end = prop_def(FloatAttr[Float64Type])
    step = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    assembly_format = "$start `to` $end `step` $step attr-dict `:` type($result)"

    def __init__(self, start: float, end: float, step: float, result_type: TensorType):
        super().__init__(
            properties={
                "start": FloatAttr(float(start), f64),
                "end": FloatAttr(float(end), f64),
                "step": FloatAttr(float(step), f64),
            },
            result_types=[result_type],
        )

    @property
    def bounds(self) -> tuple[float, float, float]:
        return (self.start.value.data, self.end.value.data, self.step.value.data)

    def verify_(self) -> None:
        elem = _elem(self.result.type)
        row = BY_MLIR.get(elem)
        if row is None or row.short not in ARANGE_ELEMENTS:
            raise VerifyException(
                f"'pto.arange' result has element type {elem}; PyPTO's arange gives "
                f"{', '.join(ARANGE_ELEMENTS)}"
            )
        start, end, step = self.bounds
        if row.kind == "int" and not all(float(v).is_integer() for v in (start, end, step)):
            raise VerifyException(
                f"'pto.arange' with an integer result needs integer bounds, got "
                f"{start}, {end}, {step}"
            )
        n = _rule(self, shapes.arange_length, start, end, step)
        _expect_result(self, _shape(self.result.type), (n,))
