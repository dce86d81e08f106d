"""Indexed writes: `scatter_update` (the paged KV-cache write), `scatter` (torch.scatter,
`reduce` add / multiply), `index_add` and `index_put` (repeated indices in index order)."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence

import numpy as np

from tileir.backends.numpy.semantics.common import (
    F32,
    Scalar,
    SemanticsError,
    _is_float,
    _is_int,
    _norm_dim,
    _require_float,
    _widen,
)
from tileir.backends.numpy.semantics.indexing import _check_index
from tileir.backends.numpy.semantics.scalars import _scalar_to_dtype


def _index_region(index: np.ndarray, valid: Sequence[int] | None) -> tuple[slice, ...]:
    return tuple(slice(0, int(v)) for v in valid) if valid is not None else ()


def scatter_update(
    input: np.ndarray,
    index: np.ndarray,
    src: np.ndarray,
    index_valid: Sequence[int] | None = None,
) -> np.ndarray:
    """`pypto.scatter_update(input, -2, index, src)`: a copy of `input` whose rows are
    replaced (a 4-D `[NB, BS, 1, d]` input's rows are its NB*BS slices `[1, d]`): row
    `index[i, j]` gets `src[i * s + j]` (2-D src `[b*s, d]`, s = index.shape[1]) or
    `src[i, j]` (4-D src `[b, s, 1, d]`). Only index entries inside `index_valid` (the
    valid sizes of the index tile) are written. Every written index must be in
    [0, number of rows); with a repeated index the last entry (in row-major order) wins
    (PyPTO leaves that undefined)."""
    if input.ndim not in (2, 4) or src.ndim != input.ndim or index.ndim != 2:
        raise SemanticsError(
            f"scatter_update: input {list(input.shape)} / src {list(src.shape)} must be both "
            f"2-D or both 4-D and index {list(index.shape)} 2-D"
        )
    rows = input.shape[0] * (input.shape[1] if input.ndim == 4 else 1)
    row_shape = input.shape[input.ndim - (2 if input.ndim == 4 else 1) :]
    out = np.array(input, copy=True).reshape((rows, *row_shape))
    b, s = index.shape
    src_rows = (
        np.asarray(src).reshape((b * s, *row_shape))
        if src.size == b * s * math.prod(row_shape)
        else None
    )
    if src_rows is None:
        raise SemanticsError(
            f"scatter_update: src {list(src.shape)} does not hold b*s = {b * s} rows of "
            f"{list(row_shape)}"
        )
    vb, vs = (b, s) if index_valid is None else (int(index_valid[0]), int(index_valid[1]))
    idx = _check_index("scatter_update", index[:vb, :vs], rows, -2).reshape(-1)
    which = (np.arange(vb)[:, None] * s + np.arange(vs)[None, :]).reshape(-1)
    out[idx] = src_rows[which]
    return out.reshape(input.shape)


def _scatter_positions(
    op: str, input: np.ndarray, dim: int, index: np.ndarray, index_valid: Sequence[int] | None
) -> tuple[tuple[np.ndarray, ...], tuple[slice, ...]]:
    """The input coordinates `scatter` writes (dim `dim` taken from the index) and the
    index region they come from."""
    d = _norm_dim(op, dim, input.ndim)
    if index.ndim != input.ndim:
        raise SemanticsError(
            f"{op}: index {list(index.shape)} must have the rank of {list(input.shape)}"
        )
    region = _index_region(index, index_valid) or tuple(slice(0, n) for n in index.shape)
    part = index[region]
    for k in range(input.ndim):
        if k != d and part.shape[k] > input.shape[k]:
            raise SemanticsError(
                f"{op}: index {list(index.shape)} is larger than input {list(input.shape)} in dim {k}"
            )
    idx = _check_index(op, part, input.shape[d], dim)
    coords = list(np.indices(part.shape, sparse=False))
    coords[d] = idx
    return tuple(c.reshape(-1) for c in coords), region


def scatter(
    input: np.ndarray,
    dim: int,
    index: np.ndarray,
    src: np.ndarray | Scalar,
    reduce: str = "none",
    index_valid: Sequence[int] | None = None,
) -> np.ndarray:
    """`pypto.scatter(input, dim, index, src, reduce=)`: torch.scatter on a copy of
    `input`. For each position p of the index (inside `index_valid`), the element at p
    with dim `dim` replaced by `index[p]` becomes `src[p]` (a tensor no smaller than the
    index in every dim) or the scalar `src` converted to input's dtype; `reduce="add"` /
    `"multiply"` combines with what is there instead (in float32 for low-precision floats,
    rounded once per update, in the index's row-major order). With a repeated position
    and no reduce, the last one wins (undefined in PyPTO)."""
    out = np.array(input, copy=True)
    pos, region = _scatter_positions("scatter", input, dim, index, index_valid)
    if isinstance(src, np.ndarray):
        if src.dtype != input.dtype:
            raise SemanticsError(
                f"scatter: src dtype {src.dtype} differs from input's {input.dtype}"
            )
        if src.ndim != index.ndim or builtins.any(a > b for a, b in zip(index.shape, src.shape)):
            raise SemanticsError(
                f"scatter: src {list(src.shape)} must be no smaller than index {list(index.shape)}"
            )
        vals = src[region].reshape(-1)
    else:
        vals = np.broadcast_to(_scalar_to_dtype("scatter", src, input.dtype), pos[0].shape)
    if reduce == "none":
        out[pos] = vals
        return out
    if reduce not in ("add", "multiply"):
        raise SemanticsError(f"scatter: reduce {reduce!r} is not 'add' or 'multiply'")
    wide = F32 if _is_float(out.dtype) and out.dtype.itemsize < 4 else out.dtype
    acc = out.astype(wide)
    ufunc = np.add if reduce == "add" else np.multiply
    if wide == out.dtype:
        ufunc.at(acc, pos, vals.astype(wide))
        return acc
    for k in range(len(vals)):  # round after every update, as each one is a stored result
        at = tuple(c[k] for c in pos)
        acc[at] = ufunc(acc[at], wide.type(vals[k])).astype(out.dtype).astype(wide)
    return acc.astype(out.dtype)


def index_add(
    input: np.ndarray,
    dim: int,
    index: np.ndarray,
    source: np.ndarray,
    alpha: float = 1.0,
    count: int | None = None,
) -> np.ndarray:
    """`pypto.index_add(input, dim, index, source, alpha=alpha)` on a copy of `input`:
    `out[..., index[i], ...] += alpha * source[..., i, ...]` along `dim` for i < `count`
    (the index's valid length; None: all), one update after another in index order, as
    PyPTO 0.2.0's interpreter does (measured bit for bit with repeated indices):
    - f32: each update `f32(out + source * alpha)`, the product and sum exact in float64
      and rounded once (with alpha 1 the plain float32 sum);
    - bf16 / f16: alpha is rounded to the dtype (PyPTO's `Element(input.dtype, alpha)`),
      `source * alpha` is rounded to the dtype, then the sum is (measured on bf16);
    - integers: exact, wrapped to the dtype (alpha an integer)."""
    d = _norm_dim("index_add", dim, input.ndim)
    n = index.shape[0] if count is None else int(count)
    idx = _check_index("index_add", np.asarray(index)[:n], input.shape[d], d)
    if source.dtype != input.dtype:
        raise SemanticsError(
            f"index_add: source dtype {source.dtype} differs from input's {input.dtype}"
        )
    src = np.moveaxis(np.asarray(source), d, 0)[:n]
    out = np.array(input, copy=True)
    view = np.moveaxis(out, d, 0)  # writes go to `out`
    if _is_int(out.dtype):
        a = np.int64(int(alpha))
        for k in range(n):
            with np.errstate(over="ignore"):
                view[idx[k]] = (view[idx[k]].astype(np.int64) + src[k].astype(np.int64) * a).astype(
                    out.dtype
                )
        return out
    _require_float("index_add", out)
    if out.dtype == F32:
        a64 = np.float64(F32.type(alpha))
        for k in range(n):
            view[idx[k]] = (_widen(view[idx[k]]) + _widen(src[k]) * a64).astype(F32)
        return out
    a = _widen(np.array(alpha, F32).astype(out.dtype), F32)
    for k in range(n):
        product = (_widen(src[k], F32) * a).astype(out.dtype)
        view[idx[k]] = (_widen(view[idx[k]], F32) + _widen(product, F32)).astype(out.dtype)
    return out


def index_put(
    input: np.ndarray,
    indices: Sequence[np.ndarray],
    values: np.ndarray,
    accumulate: bool = False,
    count: int | None = None,
) -> np.ndarray:
    """`pypto.index_put_(input, (i0, ..., ik), values, accumulate)` on a copy of
    `input`: `out[i0[n], ..., ik[n], ...] = values[n, ...]` for n < `count` (the valid
    length of the index tensors; None: all), or `+=` with `accumulate` (repeated
    positions add up, each sum rounded to the input's dtype once per update for
    low-precision floats). Without `accumulate` a repeated position's last value wins
    (undefined in PyPTO)."""
    if not indices or len(indices) > input.ndim:
        raise SemanticsError(
            f"index_put: needs 1 to {input.ndim} index tensors, got {len(indices)}"
        )
    n = indices[0].shape[0] if count is None else int(count)
    idx = tuple(
        _check_index("index_put", np.asarray(i)[:n], input.shape[k], k)
        for k, i in enumerate(indices)
    )
    vals = np.asarray(values)[:n]
    if vals.dtype != input.dtype:
        raise SemanticsError(
            f"index_put: values dtype {vals.dtype} differs from input's {input.dtype}"
        )
    out = np.array(input, copy=True)
    if not accumulate:
        out[idx] = vals
        return out
    wide = F32 if _is_float(out.dtype) and out.dtype.itemsize < 4 else out.dtype
    if wide == out.dtype:
        np.add.at(out, idx, vals)
        return out
    for k in range(n):
        at = tuple(int(i[k]) for i in idx)
        out[at] = (out[at].astype(wide) + vals[k].astype(wide)).astype(out.dtype)
    return out
