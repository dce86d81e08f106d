"""Independent numpy goldens for the seed kernels.

Each golden is written from the math of the workload, directly in numpy (float64 unless a
kernel's rounding point has to be reproduced, then float32), and rounded to the output dtype
the way the kernel rounds it (round-to-nearest-even, i.e. CAST_RINT / CAST_NONE).  Nothing here
goes through tileir, so a golden can check tileir's numpy back end as well as PyPTO.

bf16 arrays are ``ml_dtypes.bfloat16``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16

__all__ = [
    "BF16",
    "gelu_erf",
    "gelu_tanh",
    "rms_norm_rope",
    "rope_half_split",
    "rope_interleave",
    "rope_rotate_half",
    "rope_tables",
]


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _round(a: np.ndarray, dtype: type | np.dtype) -> np.ndarray:
    """Round float64/float32 values to ``dtype`` with round-to-nearest-even."""
    return np.asarray(a).astype(dtype)


# --------------------------------------------------------------------------------------------
# RoPE (AT-04)
# --------------------------------------------------------------------------------------------


def rope_tables(seq: int, rotary_dim: int, dtype: type | np.dtype, base: float = 10000.0):
    """HF-style ``cos`` / ``sin`` tables ``[seq, rotary_dim]`` in the ``cat(freqs, freqs)`` layout."""
    inv_freq = base ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    freqs = np.outer(np.arange(seq, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return _round(np.cos(emb), dtype), _round(np.sin(emb), dtype)


def _rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope_half_split(x, cos, sin, out_dtype=BF16):
    """Variant A: split-half pairs ``(x[k], x[k + R/2])``; ``R = cos.shape[-1]`` dims rotate.

    ``x``: ``[S, N, D]``; ``cos`` / ``sin``: ``[S, R]``; the last ``D - R`` dims pass through.
    """
    xf = _f64(x)
    rot_dim = cos.shape[-1]
    c = _f64(cos)[:, None, :]
    s = _f64(sin)[:, None, :]
    xr = xf[..., :rot_dim]
    y = xr * c + _rotate_half(xr) * s
    return _round(np.concatenate([y, xf[..., rot_dim:]], axis=-1), out_dtype)


def rope_interleave(x, cos, sin, out_dtype=BF16):
    """Variant B: interleaved pairs ``(x[2k], x[2k+1])``, written split-half.

    ``out[..., :R/2]`` holds the rotated even elements, ``out[..., R/2:R]`` the rotated odd
    ones (InterleaveRope's output contract); the last ``D - R`` dims pass through.
    """
    xf = _f64(x)
    rot_dim = cos.shape[-1]
    half = rot_dim // 2
    c = _f64(cos)[:, None, :]
    s = _f64(sin)[:, None, :]
    xe = xf[..., 0:rot_dim:2]
    xo = xf[..., 1:rot_dim:2]
    ye = xe * c[..., :half] - xo * s[..., :half]
    yo = xe * s[..., half:] + xo * c[..., half:]
    return _round(np.concatenate([ye, yo, xf[..., rot_dim:]], axis=-1), out_dtype)


def rope_rotate_half(x, cos, sin, out_dtype=BF16):
    """Variant C: de-interleave the pairs to split-half, then ``x * cos + rotate_half(x) * sin``."""
    xf = _f64(x)
    rot_dim = cos.shape[-1]
    c = _f64(cos)[:, None, :]
    s = _f64(sin)[:, None, :]
    xr = xf[..., :rot_dim]
    # [.., R] -> [.., R/2, 2] -> swap the last two axes -> [.., R]: evens first, then odds.
    x_split = np.swapaxes(xr.reshape(*xr.shape[:-1], rot_dim // 2, 2), -1, -2).reshape(xr.shape)
    y = x_split * c + _rotate_half(x_split) * s
    return _round(np.concatenate([y, xf[..., rot_dim:]], axis=-1), out_dtype)


def rms_norm_rope(x, gamma, cos, sin, eps, out_dtype=BF16):
    """Per-head RMSNorm over the last dim (weighted by ``gamma``), then RoPE variant A."""
    xf = _f64(x)
    normed = xf / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + eps) * _f64(gamma)
    d = xf.shape[-1]
    half = d // 2
    c = _f64(cos)[:, None, :]
    s = _f64(sin)[:, None, :]
    left, right = normed[..., :half], normed[..., half:]
    o1 = left * c[..., :half] - right * s[..., :half]
    o2 = right * c[..., half:] + left * s[..., half:]
    return _round(np.concatenate([o1, o2], axis=-1), out_dtype)


# --------------------------------------------------------------------------------------------
# GELU
# --------------------------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_tanh(x, out_dtype=BF16):
    """``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``."""
    xf = _f64(x)
    return _round(
        0.5 * xf * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (xf + 0.044715 * xf**3))), out_dtype
    )


def gelu_erf(x, out_dtype=BF16):
    """``0.5 * x * (1 + erf(x / sqrt(2)))`` with the exact erf."""
    xf = _f64(x)
    return _round(0.5 * xf * (1.0 + _erf(xf / math.sqrt(2.0))), out_dtype)
