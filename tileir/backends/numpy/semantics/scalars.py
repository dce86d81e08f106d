"""Tensor-scalar operands: the scalar converted to the tensor's dtype first, as PyPTO does
(`pypto_impl.Element(input.dtype, other)` in its Python wrappers)."""

from __future__ import annotations

import numpy as np

from tileir.backends.numpy.semantics.cast import round_to_dtype
from tileir.backends.numpy.semantics.common import (
    F64,
    Operand,
    SemanticsError,
    _check_dtype,
    _is_bool,
    _is_int,
    broadcast_shape,
)


def _scalar_to_dtype(op: str, value: object, dtype: np.dtype) -> np.ndarray:
    """A Python scalar as a 0-d array of `dtype`, as PyPTO's `Element(dtype, value)`:
    floats round to nearest even; an integer tensor takes only in-range integers (the
    PyPTO docs: a float scalar with an integer tensor is an error)."""
    if isinstance(value, np.ndarray) or not isinstance(value, (int, float, np.number, np.bool_)):
        raise SemanticsError(f"{op}: expected a scalar, got {type(value).__name__}")
    if _is_bool(dtype):
        if not isinstance(value, (bool, np.bool_)):
            raise SemanticsError(f"{op}: a bool tensor takes only a bool scalar, got {value!r}")
        return np.asarray(bool(value))
    if _is_int(dtype):
        if isinstance(value, (float, np.floating)):
            raise SemanticsError(
                f"{op}: a float scalar {value!r} cannot combine with an integer tensor ({dtype})"
            )
        iv = int(value)
        info = np.iinfo(dtype)
        if not info.min <= iv <= info.max:
            raise SemanticsError(f"{op}: scalar {iv} does not fit {dtype} [{info.min}, {info.max}]")
        return np.asarray(iv, dtype=dtype)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        iv = int(value)
        if -(2**63) <= iv < 2**63:
            return round_to_dtype(np.asarray(iv, dtype=np.int64), dtype, "rint")
    return round_to_dtype(np.asarray(float(value), dtype=F64), dtype, "rint")


def _operands(op: str, x: Operand, y: Operand) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """Both operands as arrays of the tensor operand's dtype, shapes checked."""
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        if x.dtype != y.dtype:
            raise SemanticsError(f"{op}: operand dtypes differ ({x.dtype} and {y.dtype})")
        dtype = x.dtype
        xa, ya = x, y
    elif isinstance(x, np.ndarray):
        dtype = x.dtype
        xa, ya = x, _scalar_to_dtype(op, y, dtype)
    elif isinstance(y, np.ndarray):
        dtype = y.dtype
        xa, ya = _scalar_to_dtype(op, x, dtype), y
    else:
        raise SemanticsError(f"{op}: at least one operand must be a tensor")
    _check_dtype(op, dtype)
    broadcast_shape(op, xa.shape, ya.shape)
    return xa, ya, dtype
