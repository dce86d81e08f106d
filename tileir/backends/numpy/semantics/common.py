"""Shared pieces of the op semantics: the error type, dtype classes, widening and
rounding back, scalars, broadcasting and operand checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np


class SemanticsError(ValueError):
    """A program asked an op for something PyPTO does not define (bad shapes, dtypes,
    indices or windows). The message names the op and the offending values."""


Scalar = int | float | bool
Operand = np.ndarray | int | float | bool
ArrayFn = Callable[..., np.ndarray]

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
F8E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
F8E5M2 = np.dtype(ml_dtypes.float8_e5m2)

CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
"""PyPTO's `CastMode` members, lower case without the `CAST_` prefix."""

_ROUNDING_MODES = CAST_MODES[1:]


@dataclass(frozen=True)
class _FloatFormat:
    """What rounding needs to know about a binary float format."""

    precision: int
    """Significand bits including the hidden bit."""
    emin: int
    """Exponent of the smallest normal number."""
    max: float
    has_inf: bool


def _format(dtype: np.dtype, has_inf: bool = True) -> _FloatFormat:
    info = ml_dtypes.finfo(dtype)
    return _FloatFormat(int(info.nmant) + 1, int(info.minexp), float(info.max), has_inf)


_FLOAT_FORMATS: dict[np.dtype, _FloatFormat] = {
    BF16: _format(BF16),
    np.dtype(np.float16): _format(np.dtype(np.float16)),
    F32: _format(F32),
    F64: _format(F64),
    # e4m3fn is "finite + NaN": the all-ones pattern is NaN and there is no infinity.
    F8E4M3: _format(F8E4M3, has_inf=False),
    F8E5M2: _format(F8E5M2),
}


def _is_float(dtype: np.dtype) -> bool:
    return dtype in _FLOAT_FORMATS


def _is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def _is_bool(dtype: np.dtype) -> bool:
    return dtype.kind == "b"


def _check_dtype(op: str, dtype: np.dtype) -> None:
    if not (_is_float(dtype) or _is_int(dtype) or _is_bool(dtype)):
        raise SemanticsError(f"{op}: element type {dtype} is not supported")


def _require_float(op: str, x: np.ndarray) -> None:
    if not _is_float(x.dtype):
        raise SemanticsError(f"{op}: needs a floating-point tensor, got {x.dtype}")


def _widen(x: np.ndarray, dtype: np.dtype = F64) -> np.ndarray:
    """x converted exactly to a wider float type. Signalling-NaN codes of bf16 / fp8 raise
    numpy's "invalid value" flag on conversion; they are NaN all the same."""
    with np.errstate(invalid="ignore"):
        return x.astype(dtype)


def _from_f32(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round a float32 result once (nearest even) to `dtype`; float32 passes through."""
    r = np.asarray(r, dtype=F32)
    if dtype == F32:
        return r
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the meaning
        return r.astype(dtype)


def _from_f64(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The float32 result of a float64 computation, then rounded once to `dtype`."""
    with np.errstate(over="ignore"):
        r32 = np.asarray(r, dtype=F64).astype(F32)
    return _from_f32(r32, dtype)


# --------------------------------------------------------------------------------------
# scalars, shapes and operand checks
# --------------------------------------------------------------------------------------


def broadcast_shape(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting (right-aligned; equal or 1), which PyPTO 0.2.0 accepts for its
    elementwise ops ([2,8] with [8], [1,8], [2,1]; [2,1] with [1,8] -> [2,8]; checked by
    tracing kernels with the real package). Raises `SemanticsError` naming the shapes."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        listed = " and ".join(str(list(s)) for s in shapes)
        raise SemanticsError(f"{op}: shapes {listed} do not broadcast") from None


def _norm_dim(op: str, dim: int, ndim: int, *, extra: int = 0) -> int:
    """A dimension index in [-(ndim+extra), ndim+extra) as a non-negative index."""
    n = ndim + extra
    if not -n <= dim < n:
        raise SemanticsError(f"{op}: dim {dim} is out of range for rank {ndim}")
    return dim % n
