"""`.npy` files for every PyPTO element type.

`np.save` of an `ml_dtypes` array (bf16, fp8) writes a raw void dtype (`|V2`, `|V1`):
the file does not say which 2-byte float it holds. Readers therefore reinterpret a void
array by the element type the kernel declares for that argument; writers save bf16 /
fp8 arrays as they are (void on disk), so `np.load(f).view(ml_dtypes.bfloat16)` and
tileir read them back bit for bit.
"""

from __future__ import annotations

import os

import numpy as np

from tileir.errors import TileirError


def load_npy(path: str | os.PathLike[str], dtype: np.dtype, what: str = "") -> np.ndarray:
    """Load `path` as an array of `dtype`, reinterpreting a raw void array of the same
    item size (how `np.save` stores bf16 / fp8). Anything else must already have `dtype`."""
    label = f" for {what}" if what else ""
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise TileirError(f"error: no such file: {path}") from None
    except (OSError, ValueError) as e:
        raise TileirError(f"error: {path}: not a readable .npy file{label} ({e})") from None
    dtype = np.dtype(dtype)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize and arr.dtype.names is None:
        return arr.view(dtype)
    raise TileirError(f"error: {path}: holds {arr.dtype} data, expected {dtype}{label}")
