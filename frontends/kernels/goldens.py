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
    "decode_attention",
    "embedding",
    "gelu_erf",
    "gelu_tanh",
    "linear",
    "linear_projection",
    "linear_projection_quant",
    "mean_last",
    "moe_routing_sigmoid",
    "moe_routing_softmax",
    "quantize_symmetric_int8",
    "repeat_kv",
    "rms_norm_f32",
    "rms_norm_rope",
    "rope_half_split",
    "rope_interleave",
    "rope_rotate_half",
    "rope_tables",
    "type_as",
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


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------


def decode_attention(q, k, v, scale, out_dtype=BF16):
    """GQA decode: ``softmax(q k^T * scale) v`` per head, query head ``h`` -> KV head ``h // G``.

    ``q``: ``[NQ, D]``; ``k``, ``v``: ``[NKV, S2, D]``; exact (whole-row) softmax.
    """
    nkv, _, d = k.shape
    q3 = _f64(q).reshape(nkv, -1, d)
    scores = np.einsum("hgd,hsd->hgs", q3, _f64(k)) * scale
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = np.einsum("hgs,hsd->hgd", p, _f64(v))
    return _round(o.reshape(q.shape), out_dtype)


# --------------------------------------------------------------------------------------------
# MoE routing
# --------------------------------------------------------------------------------------------


def _topk_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores per row, in descending score order."""
    return np.argsort(-scores, axis=-1, kind="stable")[..., :k]


def moe_routing_sigmoid(logits, bias, top_k):
    """Sigmoid gating: select by ``sigmoid(x) + bias``, weight by normalised ``sigmoid(x)``.

    Returns ``(weights f32 [T, k], indices i32 [T, k])``.
    """
    s = 1.0 / (1.0 + np.exp(-_f64(logits)))
    idx = _topk_desc(s + _f64(bias)[None, :], top_k)
    w = np.take_along_axis(s, idx, axis=-1)
    return (w / w.sum(axis=-1, keepdims=True)).astype(np.float32), idx.astype(np.int32)


def moe_routing_softmax(logits, top_k):
    """Softmax gating: ``topk(softmax(x))``, weights renormalised over the selected experts."""
    x = _f64(logits)
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    idx = _topk_desc(p, top_k)
    w = np.take_along_axis(p, idx, axis=-1)
    return (w / w.sum(axis=-1, keepdims=True)).astype(np.float32), idx.astype(np.int32)


# --------------------------------------------------------------------------------------------
# Linear, embedding, repeat_kv, mean, type_as
# --------------------------------------------------------------------------------------------


def linear(x, w, bias, out_dtype=BF16):
    """``x @ w^T + bias`` (nn.Linear layout ``w: [N, K]``)."""
    return _round(_f64(x) @ _f64(w).T + _f64(bias), out_dtype)


def embedding(weight, ids):
    """``weight[ids]``: rows of the table, for ids of any rank."""
    return np.asarray(weight)[np.asarray(ids).astype(np.int64)]


def repeat_kv(kv, groups):
    """``[B, NKV, S, D] -> [B, NKV * groups, S, D]``, each KV head repeated ``groups`` times."""
    return np.repeat(np.asarray(kv), groups, axis=1)


def mean_last(x, out_dtype=BF16):
    """Mean over the last axis, keeping it."""
    return _round(_f64(x).mean(axis=-1, keepdims=True), out_dtype)


def type_as(a, other_dtype):
    """``a.type_as(other)``: ``a`` converted to ``other``'s dtype (round to nearest even)."""
    return _round(np.asarray(a), other_dtype)


# --------------------------------------------------------------------------------------------
# SK-03 linear projection and its quant variant
# --------------------------------------------------------------------------------------------


def rms_norm_f32(x, gamma, eps):
    """RMSNorm over the last axis in float32 arithmetic, the kernel's rounding point.

    The kernel rounds the normalised activations (to bf16, or to int8 in the quant
    variant) before the matmul; computing them in float32 like the kernel keeps those
    roundings on the same side.
    """
    xf = np.asarray(x).astype(np.float32)
    mean_sq = (xf * xf).sum(axis=-1, keepdims=True, dtype=np.float32) * np.float32(
        1.0 / xf.shape[-1]
    )
    inv_rms = np.float32(1.0) / np.sqrt(mean_sq + np.float32(eps))
    return (xf * inv_rms) * np.asarray(gamma).astype(np.float32)


def linear_projection(x, gamma, w, eps, out_dtype=BF16):
    """``bf16(rms_norm(x, gamma)) @ w^T``, then rounded to ``out_dtype``."""
    normed = rms_norm_f32(x, gamma, eps).astype(BF16)
    return _round(_f64(normed) @ _f64(w).T, out_dtype)


def quantize_symmetric_int8(y, qmax=127.0):
    """Per-row symmetric int8 quantisation in float32: ``(q int8, dequant_scale f32 [.., 1])``.

    ``scale = qmax / max|y|``, ``q = rint(y * scale)`` (half to even), saturated to int8.
    """
    y = np.asarray(y).astype(np.float32)
    scale = np.float32(qmax) / np.abs(y).max(axis=-1, keepdims=True)
    q = np.clip(np.rint(y * scale), -128, 127).astype(np.int8)
    return q, np.float32(1.0) / scale


def linear_projection_quant(x, gamma, w_q, w_scale, eps, out_dtype=BF16):
    """RMSNorm -> per-token int8 quant -> int8 matmul (exact int32) -> dequant."""
    q, dequant_scale = quantize_symmetric_int8(rms_norm_f32(x, gamma, eps))
    acc = q.astype(np.int64) @ np.asarray(w_q).astype(np.int64).T
    return _round(acc.astype(np.float64) * _f64(dequant_scale) * _f64(w_scale)[None, :], out_dtype)
