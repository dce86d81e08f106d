"""Layout ops: reshape (of tiles and of memory), transpose, concat, unsqueeze, expand_clone,
view_type (the bytes read as another dtype)."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from tileir.backends.numpy.semantics.common import (
    F64,
    SemanticsError,
    _from_f64,
    _is_int,
    _norm_dim,
)
from tileir.backends.numpy.semantics.scalars import _scalar_to_dtype

# --------------------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------------------


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`pypto.reshape(x, shape)`: the same elements in C order; sizes must match and every
    dim is > 0 (no -1). Returns a new array."""
    dims = tuple(int(d) for d in shape)
    if builtins.any(d <= 0 for d in dims) or math.prod(dims) != x.size:
        raise SemanticsError(f"reshape: cannot reshape {list(x.shape)} to {list(dims)}")
    return x.reshape(dims).copy()


def reshape_memory(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`pypto.reshape(t, shape, inplace=True)` of a tensor in memory: the same memory
    read in C order in `shape` (a view of `x`; writes through it change `x`)."""
    dims = tuple(int(d) for d in shape)
    if builtins.any(d <= 0 for d in dims) or math.prod(dims) != x.size:
        raise SemanticsError(
            f"reshape: cannot reshape the tensor of shape {list(x.shape)} ({x.size} "
            f"elements) to {list(dims)} in place"
        )
    if not x.flags.c_contiguous:
        if x.flags.writeable:
            raise SemanticsError("reshape: an inplace reshape needs contiguous memory")
        # Memory nothing writes (a strided input the caller passed): a copy reads the same.
        x = np.ascontiguousarray(x)
        x.flags.writeable = False
    view = x.view()
    view.shape = dims
    return view


def transpose(x: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    """`pypto.transpose(x, dim0, dim1)`: swap two dims (negative dims allowed)."""
    d0 = _norm_dim("transpose", dim0, x.ndim)
    d1 = _norm_dim("transpose", dim1, x.ndim)
    return np.ascontiguousarray(np.swapaxes(x, d0, d1))


def concat(xs: Sequence[np.ndarray], dim: int = 0) -> np.ndarray:
    """`pypto.concat(tensors, dim)`: same dtype and rank, equal sizes except along `dim`."""
    if len(xs) == 0:
        raise SemanticsError("concat: needs at least one tensor")
    first = xs[0]
    d = _norm_dim("concat", dim, first.ndim)
    for t in xs[1:]:
        if t.dtype != first.dtype:
            raise SemanticsError(f"concat: dtypes differ ({first.dtype} and {t.dtype})")
        same_rank = t.ndim == first.ndim
        if not same_rank or builtins.any(
            t.shape[i] != first.shape[i] for i in range(first.ndim) if i != d
        ):
            raise SemanticsError(
                f"concat: shapes {list(first.shape)} and {list(t.shape)} differ outside dim {dim}"
            )
    return np.concatenate(list(xs), axis=d)


def unsqueeze(x: np.ndarray, dim: int) -> np.ndarray:
    """`pypto.unsqueeze(x, dim)`: insert a size-1 dim; dim in [-(rank+1), rank]."""
    d = _norm_dim("unsqueeze", dim, x.ndim, extra=1)
    return np.expand_dims(x, d).copy()


def view_type(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`pypto.view(x, dtype=...)`: each row's bytes (the last dim, C order, little-endian
    as on the NPU) read as elements of `dtype`; the last dim scales by the ratio of the
    element sizes."""
    dtype = np.dtype(dtype)
    if not x.ndim or x.shape[-1] * x.itemsize % dtype.itemsize:
        raise SemanticsError(
            f"view_type: a last dim of {x.shape[-1] if x.ndim else 0} {x.dtype} elements is not "
            f"a whole number of {dtype} elements"
        )
    return np.ascontiguousarray(x).view(dtype)


def view_type_valid(valid: int, size: int, new_size: int) -> int:
    """The valid size of the last dim of a `view_type` from `size`-byte to
    `new_size`-byte elements: `valid * size / new_size`, as PyPTO 0.2.0 reports it; it
    must be whole (0.2.0's interpreter fails otherwise: VIEW_TYPEOpError)."""
    if valid * size % new_size:
        raise SemanticsError(
            f"view_type: a valid size of {valid} elements of {size} bytes is not a whole "
            f"number of {new_size}-byte elements (PyPTO 0.2.0 fails there too)"
        )
    return valid * size // new_size


def expand_clone(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`pypto.expand_clone(x, shape)`: a broadcast copy of the same rank; only size-1 dims
    expand, every other dim must already equal the target."""
    dims = tuple(int(d) for d in shape)
    if (
        len(dims) != x.ndim
        or builtins.any(s != t and s != 1 for s, t in zip(x.shape, dims))
        or builtins.any(t <= 0 for t in dims)
    ):
        raise SemanticsError(f"expand_clone: cannot expand {list(x.shape)} to {list(dims)}")
    return np.broadcast_to(x, dims).copy()


def fillpad(x: np.ndarray, valid: Sequence[int] | None, value: float) -> np.ndarray:
    """`pypto.fillpad(x, "constant", value)`: x with every element outside the valid
    region `valid` (sizes of x's trailing dims from their start; None: all valid) set to
    `value` converted to x's dtype."""
    out = np.array(x, copy=True)
    if valid is None:
        return out
    if len(valid) > out.ndim:
        raise SemanticsError(f"fillpad: valid shape {list(valid)} has more dims than {out.shape}")
    # 0.0 is every dtype's zero (an integer tensor takes no float scalar)
    fill = _scalar_to_dtype("fillpad", value, out.dtype) if value else np.zeros((), out.dtype)
    keep = np.zeros(out.shape, dtype=bool)
    keep[(Ellipsis, *(slice(0, int(v)) for v in valid))] = True
    out[~keep] = fill
    return out


def arange(start: float, end: float, step: float, dtype: np.dtype) -> np.ndarray:
    """`pypto.arange(start, end, step)`: `start + i * step` for i in
    0..ceil((end - start) / step) - 1, of `dtype` (int32 / int64 for integer bounds,
    float32 otherwise); a float result is each value computed in float64 and rounded once
    to float32."""
    if step == 0:
        raise SemanticsError("arange: step must not be zero")
    n = math.ceil((end - start) / step)
    if n <= 0:
        raise SemanticsError(f"arange: [{start}, {end}) with step {step} is empty")
    dt = np.dtype(dtype)
    i = np.arange(n, dtype=np.int64)
    if _is_int(dt):
        return (int(start) + i * int(step)).astype(dt)
    return _from_f64(float(start) + i.astype(F64) * float(step), dt)


def deinterleave(x: np.ndarray, other: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`pypto.deinterleave(x, other=None)`: the elements at even and at odd positions of
    the last dim of x, or of the stream `concat([x, other], -1)` (its docs)."""
    stream = x if other is None else np.concatenate([x, other], axis=-1)
    if stream.shape[-1] % 2:
        raise SemanticsError(f"deinterleave: last dim of {list(stream.shape)} must be even")
    return np.ascontiguousarray(stream[..., 0::2]), np.ascontiguousarray(stream[..., 1::2])
