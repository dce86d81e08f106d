"""Indexing ops: gather, index_select, gathermask, topk, scatter and friends."""

from __future__ import annotations

import builtins

import numpy as np

from tileir.backends.numpy.semantics.common import (
    SemanticsError,
    _check_dtype,
    _is_float,
    _is_int,
    _norm_dim,
    _widen,
)
from tileir.dialect.gathermask import GATHERMASK_PATTERNS

# --------------------------------------------------------------------------------------
# indexing
# --------------------------------------------------------------------------------------


def gathermask(x: np.ndarray, pattern_mode: int) -> np.ndarray:
    """`pypto.gathermask(x, pattern_mode)`: keep one element of every 2 (modes 1, 2), of
    every 4 (modes 3-6) or all (7) along the last dim. The last dim must divide by the
    period; the output's last dim is last/2, last/4 or last."""
    if pattern_mode not in GATHERMASK_PATTERNS:
        raise SemanticsError(f"gathermask: pattern_mode must be 1..7, got {pattern_mode}")
    start, step = GATHERMASK_PATTERNS[pattern_mode]
    if x.ndim == 0 or x.shape[-1] % step != 0:
        raise SemanticsError(
            f"gathermask: last dim of {list(x.shape)} must be a multiple of {step} for mode {pattern_mode}"
        )
    return x[..., start::step].copy()


def _check_index(op: str, index: np.ndarray, size: int, dim: int) -> np.ndarray:
    if not _is_int(index.dtype):
        raise SemanticsError(f"{op}: index must be an integer tensor, got {index.dtype}")
    bad = (index < 0) | (index >= size)
    if np.any(bad):
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SemanticsError(
            f"{op}: index value {int(index[pos])} at position {list(pos)} is outside "
            f"[0, {size}) along dim {dim}"
        )
    return index.astype(np.int64)


def gather(input: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    """`pypto.gather(input, dim, index)`: torch.gather semantics (PyPTO docs and the 0.2.0
    wrapper, which calls `GatherElements`): out has index's shape and
    out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and so on). index has input's
    rank and index.shape[d] <= input.shape[d] for d != dim; every index value must be in
    [0, input.shape[dim])."""
    d = _norm_dim("gather", dim, input.ndim)
    if index.ndim != input.ndim or builtins.any(
        index.shape[i] > input.shape[i] for i in range(input.ndim) if i != d
    ):
        raise SemanticsError(
            f"gather: index {list(index.shape)} must have the rank of input {list(input.shape)} "
            f"and be no larger outside dim {dim}"
        )
    idx = _check_index("gather", index, input.shape[d], dim)
    window = tuple(slice(None) if i == d else slice(0, index.shape[i]) for i in range(input.ndim))
    return np.take_along_axis(input[window], idx, axis=d)


def index_select(input: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    """`pypto.index_select(input, dim, index)`: the slices of `input` at `index` along
    `dim`; out.shape = input.shape[:dim] + index.shape + input.shape[dim+1:] (the 0.2.0
    docstring; PyPTO allows 1-2-D indices). Index values must be in [0, input.shape[dim])."""
    d = _norm_dim("index_select", dim, input.ndim)
    if index.ndim == 0:
        raise SemanticsError("index_select: index must have at least one dim")
    idx = _check_index("index_select", index, input.shape[d], dim)
    return np.take(input, idx, axis=d)


def topk(
    x: np.ndarray, k: int, dim: int = -1, largest: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """`pypto.topk(x, k, dim, largest)` -> (values, int32 indices), sorted.

    The k largest (or smallest) along `dim`, best first; indices are int32 (pypto 0.2.0
    types them DT_INT32). Ties: the lower index comes first (PyPTO does not say; this is a
    stable sort). NaN counts as larger than every number (as in torch): first when
    `largest`, last otherwise. -0.0 and 0.0 tie. 1 <= k <= x.shape[dim]. PyPTO supports
    only the last dim; any dim is accepted here.
    """
    d = _norm_dim("topk", dim, x.ndim)
    n = x.shape[d]
    if not 1 <= k <= n:
        raise SemanticsError(f"topk: k = {k} must be in [1, {n}] for shape {list(x.shape)}")
    _check_dtype("topk", x.dtype)
    keys = np.moveaxis(_widen(x) if _is_float(x.dtype) else x.astype(np.int64), d, -1)
    if largest:
        # Ascending stable sort of the reversed row, reversed again: descending, with the
        # lower original index first among equals and NaN (sorted last) first.
        order = np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        order = n - 1 - order
    else:
        order = np.argsort(keys, axis=-1, kind="stable")
    idx = np.moveaxis(order[..., :k], -1, d)
    values = np.take_along_axis(x, idx, axis=d)
    return values, idx.astype(np.int32)
