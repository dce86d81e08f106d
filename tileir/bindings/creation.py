"""Tiles from numbers: `pypto.arange`, `pypto.fillpad`, `pypto.zeros` / `ones` (the
`pto.full` of 0 / 1, written back as `pypto.full`), and `pypto.Element`, the typed
scalar PyPTO passes where a number goes (a fill value, a scalar operand).

`Element(dtype, value)` makes no op: it is a Python number of the kernel, rounded to its
dtype, that every reader takes where it takes a number (`pypto.full(shape,
pypto.Element(pypto.DT_FP32, -inf), ...)`, `pypto.add(x, pypto.Element(...))`); its
`.dtype` and `.value` read as PyPTO's. It is in `VALUES`, so it also works in
module-level code (`NEG_INF = pypto.Element(...)`).
"""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tileir.backends.numpy.rules import creation as rules
from tileir.backends.numpy.rules import elementwise as elementwise_rules
from tileir.bindings import elementwise  # noqa: F401 (registers pypto.full, which zeros / ones alias)
from tileir.bindings.binding import (
    BY_OP,
    BY_PYPTO,
    VALUES,
    Binding,
    alias,
    register,
)
from tileir.bindings.reading import is_number
from tileir.dialect import dtypes, pto, shapes


def _sig_arange(*args): ...
def _sig_fillpad(input, mode="constant", value=0.0): ...
def _sig_zeros(*size, dtype=None): ...


# --------------------------------------------------------------------------- Element


class Element(float):
    """`pypto.Element(dtype, value)`: a number of a PyPTO dtype. An integer dtype takes
    an int (as PyPTO); the value is rounded to the dtype once."""

    dtype: dtypes.ElementType

    def __new__(cls, dtype: Any, data: Any) -> Any:
        if not isinstance(dtype, dtypes.ElementType):
            raise TypeError(f"pypto.Element needs a pypto.DT_* data type, got {dtype!r}")
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise TypeError(f"pypto.Element needs an int or a float value, got {data!r}")
        if dtype.kind != "float":
            if isinstance(data, float) and not data.is_integer():
                raise TypeError(f"pypto.Element({dtype.pypto}) needs an integer, got {data!r}")
            value: Any = IntElement(int(data))
        else:
            try:
                rounded = float(np.asarray(float(data)).astype(dtype.numpy))
            except OverflowError:
                raise TypeError("the value is too large for a float") from None
            value = float.__new__(cls, rounded)
        value.dtype = dtype
        return value

    @property
    def value(self) -> float:
        return float(self)

    def __repr__(self) -> str:
        return f"pypto.Element(pypto.{self.dtype.pypto}, {float(self)!r})"


class IntElement(int):
    """`pypto.Element` of an integer dtype (an int, so integer tiles take it)."""

    dtype: dtypes.ElementType

    @property
    def value(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return f"pypto.Element(pypto.{self.dtype.pypto}, {int(self)})"


VALUES["Element"] = Element


# --------------------------------------------------------------------------- arange


def _read_arange(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    args = [fe.resolve(a, node) for a in b["args"]]
    if not 1 <= len(args) <= 3 or not all(is_number(a) and not isinstance(a, bool) for a in args):
        fe.fail(node, "pypto.arange takes 1 to 3 numbers (end / start, end / start, end, step)")
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    if any(isinstance(a, float) for a in (start, end, step)):
        elem = dtypes.BY_SHORT["f32"]
    elif all(-(2**31) <= a < 2**31 for a in (start, end, step)):
        elem = dtypes.BY_SHORT["i32"]
    else:
        elem = dtypes.BY_SHORT["i64"]
    try:
        n = shapes.arange_length(start, end, step)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.arange: {e}")
    return fe.emit(pto.ArangeOp(start, end, step, TensorType(elem.mlir, [n])), node).results[0]


def _number(v: float, integral: bool) -> str:
    return str(int(v)) if integral else repr(float(v))


def _write_arange(w: Any, op: pto.ArangeOp) -> str:
    integral = dtypes.element_type(op.result.type.get_element_type()).kind == "int"
    return f"pypto.arange({', '.join(_number(v, integral) for v in op.bounds)})"


# --------------------------------------------------------------------------- fillpad


def _read_fillpad(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    x = fe.tile(b["input"], node)
    if b["mode"] != "constant":
        fe.fail(node, f"pypto.fillpad supports only mode 'constant', got {fe.describe(b['mode'])}")
    value = fe.resolve(b["value"], node)
    try:
        number = float(value) if isinstance(value, str | int | float) else None
    except ValueError:
        number = None
    names = {v: k for k, v in pto.FILLPAD_VALUES.items()}
    if number is None or isinstance(value, bool) or number not in names:
        fe.fail(
            node,
            f"pypto.fillpad value must be 0.0, inf or -inf (PyPTO's), got {fe.describe(value)}",
        )
    return fe.emit(pto.FillpadOp(x, names[number]), node).results[0]


def _write_fillpad(w: Any, op: pto.FillpadOp) -> str:
    v = op.fill
    value = "0.0" if v == 0 else ("float('inf')" if v > 0 else "float('-inf')")
    assert not math.isnan(v)
    return f'pypto.fillpad({w.use(op.input)}, "constant", {value})'


register(
    Binding(
        "arange",
        pto.ArangeOp,
        _sig_arange,
        _read_arange,
        _write_arange,
        rules.arange_rule,
        "arange",
    ),
    Binding(
        "fillpad",
        pto.FillpadOp,
        _sig_fillpad,
        _read_fillpad,
        _write_fillpad,
        rules.fillpad_rule,
        "fillpad",
    ),
)


# --------------------------------------------------------------------------- zeros / ones


def _filled(value: int) -> Any:
    """`pypto.zeros(*size, dtype=DT_FP32)` / `ones`: PyPTO's own definition, `Full` of
    `Element(dtype, value)`."""

    def read(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
        size = list(b["size"])
        if len(size) == 1 and isinstance(size[0], list | tuple):
            size = list(size[0])
        elem = dtypes.BY_PYPTO["DT_FP32"] if b["dtype"] is None else fe.dtype(b["dtype"], node)
        fill = bool(value) if elem.kind == "bool" else value
        full = {"size": size, "fill_value": fill, "dtype": elem, "valid_shape": None}
        return BY_PYPTO["full"].read(fe, full, node)

    return read


for _name, _value in (("zeros", 0), ("ones", 1)):
    alias(
        Binding(
            _name,
            pto.FullOp,
            _sig_zeros,
            _filled(_value),
            BY_OP[pto.FullOp].write,
            elementwise_rules.full_rule,
            "full",
        )
    )
