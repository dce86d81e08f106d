"""Reductions: `sum`, `amax`, `amin` (an ideal FP32 accumulator: float64, one rounding)."""

from __future__ import annotations

import numpy as np

from tileir.backends.numpy.semantics.common import (
    ArrayFn,
    SemanticsError,
    _from_f64,
    _is_float,
    _is_int,
    _norm_dim,
    _widen,
)

# --------------------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------------------


FLOAT64_REDUCTIONS: dict[str, ArrayFn] = {
    "sum": np.add.reduce,
    "amax": np.maximum.reduce,
    "amin": np.minimum.reduce,
}
"""The reduction each float reduce op applies to the float64 widening of its input
(`fastpaths` calls the same ones without the checks): what `np.sum` / `np.max` /
`np.min` run, without their Python wrappers."""


def sum(x: np.ndarray, dim: int, keepdim: bool = False) -> np.ndarray:
    """`pypto.sum(x, dim, keepdim)`.

    Floats: an ideal FP32 accumulator (sum in float64, round once to float32), then RNE to
    x's dtype. PyPTO 0.2.0 takes only FP32 here (kernels cast bf16 to FP32 first; newer
    docs add BF16); the low-precision rule is tileir's. Integers: summed in their own type,
    wrapping.
    """
    d = _norm_dim("sum", dim, x.ndim)
    if _is_float(x.dtype):
        return _from_f64(FLOAT64_REDUCTIONS["sum"](_widen(x), axis=d, keepdims=keepdim), x.dtype)
    if _is_int(x.dtype):
        with np.errstate(over="ignore"):
            return np.asarray(np.sum(x, axis=d, keepdims=keepdim, dtype=x.dtype))
    raise SemanticsError(f"sum: not defined on {x.dtype}")


def _extreme(op: str, x: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    d = _norm_dim(op, dim, x.ndim)
    fn = FLOAT64_REDUCTIONS[op]  # exact on integers as well
    if _is_float(x.dtype):
        return np.asarray(fn(_widen(x), axis=d, keepdims=keepdim)).astype(x.dtype)
    if _is_int(x.dtype):
        return np.asarray(fn(x, axis=d, keepdims=keepdim))
    raise SemanticsError(f"{op}: not defined on {x.dtype}")


def amax(x: np.ndarray, dim: int, keepdim: bool = False) -> np.ndarray:
    """`pypto.amax(x, dim, keepdim)`: exact; a NaN in the slice gives NaN."""
    return _extreme("amax", x, dim, keepdim)


def amin(x: np.ndarray, dim: int, keepdim: bool = False) -> np.ndarray:
    """`pypto.amin(x, dim, keepdim)`: exact; a NaN in the slice gives NaN."""
    return _extreme("amin", x, dim, keepdim)
