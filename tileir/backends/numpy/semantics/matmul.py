"""`matmul` and `scaled_mm` (an ideal FP32 accumulator; fixpipe scale, TF32, relu)."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from tileir.backends.numpy.semantics.cast import round_to_dtype
from tileir.backends.numpy.semantics.common import (
    F8E4M3,
    F8E5M2,
    F32,
    SemanticsError,
    _from_f32,
    _widen,
    broadcast_shape,
)

# --------------------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------------------

_I8 = np.dtype(np.int8)
_I32 = np.dtype(np.int32)


def _matmul_allowed(inputs: np.dtype, scaled: bool = False) -> tuple[np.dtype, ...]:
    """The out dtypes PyPTO allows for `inputs` (`scaled`: with a scale): the dialect's
    rule (the verifier applies the same one, so a verified op never fails here)."""
    from tileir.dialect.shapes import matmul_out_dtypes

    return _as_numpy(inputs, lambda short: matmul_out_dtypes(short, scaled=scaled))


def _bias_allowed(inputs: np.dtype) -> tuple[np.dtype, ...]:
    """The bias dtypes PyPTO's docs allow for `inputs` (the dialect's table)."""
    from tileir.dialect.shapes import MATMUL_OUT_DTYPES

    return _as_numpy(inputs, lambda short: MATMUL_OUT_DTYPES.get(short, ()))


def _as_numpy(inputs: np.dtype, names: Callable[[str], tuple[str, ...]]) -> tuple[np.dtype, ...]:
    """The dialect's short dtype names for `inputs` (by its short name), as numpy dtypes."""
    from tileir.dialect.dtypes import BY_NUMPY, BY_SHORT

    row = BY_NUMPY.get(inputs)
    return tuple(BY_SHORT[n].numpy for n in names(row.short)) if row is not None else ()


def fixpipe_scale(scale: float) -> np.float32:
    """The per-tensor scale as PyPTO's fixpipe uses it: "1 sign + 8 exponent + 10 mantissa
    bits" of the float32 value (the low 13 mantissa bits dropped, i.e. truncated).

    >>> float(fixpipe_scale(0.2))
    0.199951171875
    """
    bits = np.array([scale], F32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(F32)[0]


def to_tf32(x: np.ndarray, mode: str) -> np.ndarray:
    """FP32 values rounded to TF32 (10 mantissa bits), as PyPTO's matmul `trans_mode`:
    `CAST_RINT` to nearest, ties to even; `CAST_ROUND` to nearest, ties away from zero.
    inf and NaN are kept; a carry into the exponent rounds up to the next binade (or inf).

    >>> to_tf32(np.array([1 + 2**-11, 1 + 3 * 2**-11], np.float32), "CAST_RINT").tolist()
    [1.0, 1.001953125]
    >>> to_tf32(np.array([1 + 2**-11], np.float32), "CAST_ROUND").tolist()
    [1.0009765625]
    """
    if x.dtype != F32:
        raise SemanticsError(f"matmul: trans_mode needs float32 inputs, got {x.dtype}")
    bits = x.view(np.uint32).astype(np.uint64)
    low = np.uint64(0x1FFF)
    if mode == "CAST_RINT":
        bits = bits + np.uint64(0x0FFF) + ((bits >> np.uint64(13)) & np.uint64(1))
    elif mode == "CAST_ROUND":
        bits = bits + np.uint64(0x1000)
    else:
        raise SemanticsError(f"matmul: trans_mode {mode!r} is not CAST_RINT or CAST_ROUND")
    rounded = (bits & ~low).astype(np.uint32).view(F32)
    return np.where(np.isfinite(x), rounded, x)


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    out_dtype: np.dtype,
    a_trans: bool = False,
    b_trans: bool = False,
    bias: np.ndarray | None = None,
    *,
    scale: float | None = None,
    relu: bool = False,
    trans_mode: str | None = None,
) -> np.ndarray:
    """`pypto.matmul(a, b, out_dtype, a_trans=, b_trans=, extend_params={"bias_tensor": bias,
    "scale": scale, "relu_type": ReLuType.RELU, "trans_mode": mode})`.

    Rules from the PyPTO matmul docs: a and b have the same rank (2, 3 or 4) and dtype
    (fp8 may mix e4m3 / e5m2); batch dims broadcast (1 against n); `a_trans` / `b_trans`
    swap the last two dims. Dtypes: f16 -> f16/f32, bf16 -> bf16/f32, f32 -> f32,
    int8 -> int32, fp8 -> f16/bf16/f32; the bias has one of the same dtypes, last dim N,
    the dim before it 1 (or a 1-D [N]).

    Floats: products are exact in float32 for 16- and 8-bit inputs; the FP32 accumulator is
    modelled as an ideal one (float64 sum, rounded once to float32); the bias is added in
    float32; then one RNE rounding to `out_dtype`. int8: exact int32 accumulation (wrapping),
    bias added in int32.

    PyPTO's docs, the fixpipe on the way out: `relu` zeroes negative accumulators; `scale`
    (the quantising tables: int8 -> f16 / int8, floats -> int8) gives `out_dtype(ReLU(acc) *
    fixpipe_scale(scale))`, the product one float32 rounding (an int32 accumulator
    converted to float32 first), then RNE to `out_dtype`, saturating for int8.
    `trans_mode` rounds float32 inputs to TF32 first (`to_tf32`).
    """
    out_dt = np.dtype(out_dtype)
    if trans_mode is not None:
        a, b = to_tf32(a, trans_mode), to_tf32(b, trans_mode)
    if a.ndim != b.ndim or a.ndim not in (2, 3, 4):
        raise SemanticsError(
            f"matmul: operands must have the same rank, 2 to 4; got {list(a.shape)} and {list(b.shape)}"
        )
    fp8 = {F8E4M3, F8E5M2}
    if a.dtype != b.dtype and not (a.dtype in fp8 and b.dtype in fp8):
        raise SemanticsError(f"matmul: operand dtypes differ ({a.dtype} and {b.dtype})")
    if out_dt not in _matmul_allowed(a.dtype, scaled=scale is not None):
        raise SemanticsError(
            f"matmul: {a.dtype} inputs cannot produce {out_dt}"
            f"{' with a scale' if scale is not None else ''}"
        )
    am = np.swapaxes(a, -1, -2) if a_trans else a
    bm = np.swapaxes(b, -1, -2) if b_trans else b
    if am.shape[-1] != bm.shape[-2]:
        raise SemanticsError(
            f"matmul: K differs: a is {list(am.shape)} and b is {list(bm.shape)} after transposes"
        )
    batch = broadcast_shape("matmul", am.shape[:-2], bm.shape[:-2])
    out_shape = (*batch, am.shape[-2], bm.shape[-1])
    if bias is not None:
        n = bm.shape[-1]
        if bias.dtype not in _bias_allowed(a.dtype):
            raise SemanticsError(
                f"matmul: bias dtype {bias.dtype} is not allowed with {a.dtype} inputs"
            )
        if (
            bias.shape[-1] != n
            or (bias.ndim >= 2 and bias.shape[-2] != 1)
            or bias.ndim > len(out_shape)
        ):
            raise SemanticsError(
                f"matmul: bias {list(bias.shape)} must be [N] or [..., 1, N] with N = {n}"
            )
        if broadcast_shape("matmul", out_shape, bias.shape) != out_shape:
            raise SemanticsError(
                f"matmul: bias {list(bias.shape)} does not broadcast to the result {list(out_shape)}"
            )
    if a.dtype == _I8:
        acc = np.matmul(am.astype(np.int64), bm.astype(np.int64)).astype(_I32)
        if bias is not None:
            with np.errstate(over="ignore"):
                acc = (acc + bias.astype(_I32)).astype(_I32)
    else:
        acc = np.matmul(_widen(am), _widen(bm)).astype(F32)
        if bias is not None:
            acc = acc + _widen(bias, F32)
    if relu:
        acc = np.maximum(acc, acc.dtype.type(0))
    if scale is None:
        return acc if acc.dtype == out_dt else _from_f32(acc, out_dt)
    product = (_widen(acc.astype(F32)) * np.float64(fixpipe_scale(scale))).astype(F32)
    if out_dt == _I8:
        return round_to_dtype(product, out_dt, "rint", satmode=True)
    return _from_f32(product, out_dt)


def mx_scales(scale: np.ndarray, k: int, k_first: bool) -> np.ndarray:
    """A `pypto.scaled_mm` scale tensor as one float64 factor per element of K: `scale`
    is [R, K0, 2] (`k_first`: [K0, R, 2]) with K0 = ceil(K / 64), the pair [K0, 2] being
    the K / 32 MX blocks of a row in order. Returns [R, K], each block's e8m0 value
    repeated over its 32 elements (the last block cut at K)."""
    s = np.swapaxes(scale, 0, 1) if k_first and scale.ndim == 3 else scale
    if s.ndim != 3 or s.shape[2] != 2 or s.shape[1] != -(-k // 64):
        raise SemanticsError(
            f"scaled_mm: scale {list(scale.shape)} does not hold ceil({k} / 64) pairs of "
            f"MX scales per {'column' if k_first else 'row'}"
        )
    rows, k0 = s.shape[0], s.shape[1]
    return np.repeat(_widen(s.reshape(rows, 2 * k0)), 32, axis=1)[:, :k]


def scaled_mm(
    a: np.ndarray,
    b: np.ndarray,
    scale_a: np.ndarray,
    scale_b: np.ndarray,
    out_dtype: np.dtype,
    a_trans: bool = False,
    b_trans: bool = False,
    scale_a_trans: bool = False,
    scale_b_trans: bool = False,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """`pypto.scaled_mm(a, b, out_dtype, scale_a, scale_b, a_trans=, b_trans=,
    scale_a_trans=, scale_b_trans=, extend_params={"bias_tensor": bias})`, PyPTO's docs:
    `out = (a * scale_a) @ (b * scale_b)`, one e8m0 scale (2^e) per 32 elements of K
    (`mx_scales`). a, b: 2-D fp8 (e4m3 / e5m2, mixed allowed); scales e8m0.

    Each dequantised element (fp8 times a power of two) and each product of two is exact
    in float64 (at most 2^±272); as `matmul`, the FP32 accumulator is modelled as an ideal
    one (float64 sum, rounded once to float32), the bias is added in float32, then one RNE
    rounding to `out_dtype` (f16 / bf16 / f32). A NaN scale (0xFF) makes its block NaN.
    """
    from tileir.dialect.dtypes import BY_SHORT
    from tileir.dialect.shapes import SCALED_MM_OUT_DTYPES, ShapeError, matmul_bias

    out_dt = np.dtype(out_dtype)
    fp8, e8m0 = {F8E4M3, F8E5M2}, np.dtype(ml_dtypes.float8_e8m0fnu)
    if a.ndim != 2 or b.ndim != 2 or a.dtype not in fp8 or b.dtype not in fp8:
        raise SemanticsError(
            f"scaled_mm: operands must be 2-D fp8, got {a.dtype}{list(a.shape)} and "
            f"{b.dtype}{list(b.shape)}"
        )
    if scale_a.dtype != e8m0 or scale_b.dtype != e8m0:
        raise SemanticsError(
            f"scaled_mm: scales must be e8m0, got {scale_a.dtype}, {scale_b.dtype}"
        )
    allowed = tuple(BY_SHORT[n].numpy for n in SCALED_MM_OUT_DTYPES)
    if out_dt not in allowed or (bias is not None and bias.dtype not in allowed):
        raise SemanticsError(f"scaled_mm: out / bias dtype must be f16, bf16 or f32, got {out_dt}")
    am = a.T if a_trans else a
    bm = b.T if b_trans else b
    k = am.shape[1]
    if bm.shape[0] != k:
        raise SemanticsError(
            f"scaled_mm: K differs: a is {list(am.shape)} and b is {list(bm.shape)} after transposes"
        )
    sa = mx_scales(scale_a, k, k_first=scale_a_trans)  # [M, K]
    sb = mx_scales(scale_b, k, k_first=not scale_b_trans).T  # [K, N]
    if sa.shape[0] != am.shape[0] or sb.shape[1] != bm.shape[1]:
        raise SemanticsError(
            f"scaled_mm: scales {list(scale_a.shape)} / {list(scale_b.shape)} do not match "
            f"M={am.shape[0]} / N={bm.shape[1]}"
        )
    with np.errstate(invalid="ignore"):  # 0 * 2^e is 0; a NaN scale stays NaN
        acc = np.matmul(_widen(am) * sa, _widen(bm) * sb).astype(F32)
    if bias is not None:
        try:
            matmul_bias(bias.shape, acc.shape)
        except ShapeError as e:
            raise SemanticsError(f"scaled_mm: {e}") from None
        acc = acc + _widen(bias, F32)
    return _from_f32(acc, out_dt)


# --------------------------------------------------------------------------------------
# quant_mx
# --------------------------------------------------------------------------------------

_E4M3_EMAX = 8
"""The exponent of e4m3's largest finite value, 448 = 1.75 * 2^8 (the MX spec's emax_elem)."""

_E8M0_BIAS = 127


def quant_mx(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`pypto.quant_mx(x, DT_FP8E4M3, ROUND_DOWN, -1)`: MX quantisation along the last dim
    (hicann/pypto docs/zh/api/operation/pypto-quant_mx.md; the OCP MX rule it names). Each
    block of 32 elements `[32 j, 32 j + 32)` of a row shares one power of two `2^e`, with
    `amax` its largest |x|:

    - `e = floor(log2(amax)) - 8` (ROUND_DOWN: the exponent of `amax` itself, minus the
      exponent of e4m3's largest value), clamped to e8m0's [-127, 127]; a block of zeros
      takes -127 (its elements are 0 at any scale);
    - each element `x / 2^e` (exact) rounded to e4m3 to nearest even, saturating to
      +-448 (with `e` rounded down, `amax / 2^e` lies in [256, 512));
    - a block holding a NaN or an infinity: scale NaN (0xFF), elements NaN (tileir's
      choice; PyPTO's docs say nothing).

    `x`: f16 / bf16 / f32, last dim a multiple of 64. Returns `(quantized, scale)`:
    e4m3 of `x`'s shape, and e8m0 `[..., n / 64, 2]` (block `j` at `[..., j // 2, j % 2]`,
    the layout `mx_scales` reads)."""
    if x.dtype not in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), F32):
        raise SemanticsError(f"quant_mx: input must be f16, bf16 or f32, got {x.dtype}")
    if x.ndim < 1 or x.shape[-1] % 64:
        raise SemanticsError(
            f"quant_mx: the last dim must be a multiple of 64, got {list(x.shape)}"
        )
    n = x.shape[-1]
    blocks = _widen(x).reshape(*x.shape[:-1], n // 32, 32)
    amax = np.max(np.abs(blocks), axis=-1)  # NaN if the block holds one
    finite = np.isfinite(amax)
    _, p = np.frexp(np.where(finite, amax, 1.0))  # amax = m * 2^p, m in [0.5, 1)
    e = np.where(amax > 0, p - 1 - _E4M3_EMAX, -_E8M0_BIAS)
    e = np.clip(np.where(finite, e, 0), -_E8M0_BIAS, _E8M0_BIAS)
    # x * 2^-e is exact in float64 and below 2^9; float32 keeps it exact down to 2^-126,
    # far below e4m3's smallest step, so the one rounding below is the only one.
    scaled = (blocks * np.ldexp(1.0, -e)[..., None]).astype(F32)
    scaled[~finite] = np.nan
    quantized = round_to_dtype(scaled, F8E4M3, "rint", satmode=True).reshape(x.shape)
    codes = np.where(finite, e + _E8M0_BIAS, 0xFF).astype(np.uint8)
    scale = codes.view(ml_dtypes.float8_e8m0fnu).reshape(*x.shape[:-1], n // 64, 2)
    return quantized, scale
