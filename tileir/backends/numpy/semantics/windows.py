"""Windows: `view` / `assemble` of a tile at offsets, with valid (tail) shapes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tileir.backends.numpy.semantics.common import SemanticsError
from tileir.backends.numpy.semantics.elementwise import FLOAT64_FORMULAS, _silu64

# --------------------------------------------------------------------------------------
# windows (view / assemble with tails)
# --------------------------------------------------------------------------------------


def _window_checks(
    op: str,
    full_shape: Sequence[int],
    offsets: Sequence[int],
    shape: Sequence[int],
    valid_shape: Sequence[int] | None,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    offs = tuple(int(o) for o in offsets)
    dims = tuple(int(s) for s in shape)
    valid = dims if valid_shape is None else tuple(int(v) for v in valid_shape)
    rank = len(full_shape)
    if not len(offs) == len(dims) == len(valid) == rank:
        raise SemanticsError(
            f"{op}: offsets {list(offs)}, shape {list(dims)} and valid_shape {list(valid)} "
            f"must all have the rank of {list(full_shape)}"
        )
    for i in range(rank):
        if dims[i] <= 0 or not 0 <= valid[i] <= dims[i] or offs[i] < 0:
            also = " (PyPTO 0.2.0 fails on it too: VIEWOpError)" if valid[i] < 0 else ""
            raise SemanticsError(
                f"{op}: dim {i}: need shape > 0, 0 <= valid_shape <= shape and offset >= 0; "
                f"got offsets {list(offs)}, shape {list(dims)}, valid_shape {list(valid)}"
                f"{also}"
            )
        if offs[i] + valid[i] > full_shape[i]:
            raise SemanticsError(
                f"{op}: window offsets {list(offs)} valid_shape {list(valid)} goes outside "
                f"the tensor's bounds {list(full_shape)} in dim {i}"
            )
    return offs, valid


def view_valid_shape(valid: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """A view's run-time `valid_shape` as PyPTO 0.2.0 takes it (measured in its
    interpreter): a size above the view's shape is the shape's; a negative one stays
    (0.2.0 fails on it: VIEWOpError, so does the caller's window check)."""
    return tuple(min(int(v), int(s)) for v, s in zip(valid, shape))


def read_window(
    src: np.ndarray,
    offsets: Sequence[int],
    shape: Sequence[int],
    valid_shape: Sequence[int] | None = None,
) -> np.ndarray:
    """`pypto.view(src, shape, offsets, valid_shape=)`: a new tile of `shape`.

    The part inside `valid_shape` (default: all of `shape`) is copied from `src` at
    `offsets`; the rest of the tile is zero. PyPTO leaves that rest undefined; tileir
    fixes it to zero so that every run gives the same bits. The valid region must lie
    inside `src` (the full `shape` may reach past it: that is a tail tile).
    """
    offs, valid = _window_checks("view", src.shape, offsets, shape, valid_shape)
    out = np.zeros(tuple(int(s) for s in shape), dtype=src.dtype)
    region = tuple(slice(o, o + v) for o, v in zip(offs, valid))
    out[tuple(slice(0, v) for v in valid)] = src[region]
    return out


def get_tensor_data(
    src: np.ndarray, indices: Sequence[int], valid_shape: Sequence[int] | None = None
) -> int:
    """`x[i, j]` (every index a scalar): the element at `indices` as a Python int, the
    run-time index value PyPTO's `SymbolicScalar` is. The element must lie inside `src`,
    and inside `valid_shape` when given (a tail tile: PyPTO leaves the rest undefined)."""
    idx = tuple(int(i) for i in indices)
    if len(idx) != src.ndim:
        raise SemanticsError(
            f"get_tensor_data: {len(idx)} indices for a tensor of shape {list(src.shape)}"
        )
    bounds = tuple(src.shape) if valid_shape is None else tuple(int(v) for v in valid_shape)
    for d, (i, n) in enumerate(zip(idx, bounds)):
        if not 0 <= i < n:
            where = "shape" if valid_shape is None else "valid shape"
            raise SemanticsError(
                f"get_tensor_data: index {list(idx)} is outside the tensor's {where} "
                f"{list(bounds)} in dim {d}"
            )
    return int(src[idx])


def write_window(
    dst: np.ndarray,
    tile: np.ndarray,
    offsets: Sequence[int],
    valid_shape: Sequence[int] | None = None,
) -> None:
    """`pypto.assemble(tile, offsets, dst)`: write the valid region of `tile` (default: all
    of it) into `dst` at `offsets`, in place. Nothing outside the valid region is touched.
    Same dtype required; the valid region must lie inside `dst`."""
    if tile.dtype != dst.dtype:
        raise SemanticsError(
            f"assemble: tile dtype {tile.dtype} differs from destination {dst.dtype}"
        )
    if tile.ndim != dst.ndim:
        raise SemanticsError(
            f"assemble: tile {list(tile.shape)} and destination {list(dst.shape)} differ in rank"
        )
    offs, valid = _window_checks("assemble", dst.shape, offsets, tile.shape, valid_shape)
    region = tuple(slice(o, o + v) for o, v in zip(offs, valid))
    dst[region] = tile[tuple(slice(0, v) for v in valid)]


FLOAT64_FORMULAS["silu"] = _silu64
