"""`pypto.cast` and the exact rounding routines every op uses to reach a narrow type."""

from __future__ import annotations

import builtins

import numpy as np

from tileir.backends.numpy.semantics.common import (
    _FLOAT_FORMATS,
    _ROUNDING_MODES,
    CAST_MODES,
    F32,
    F64,
    SemanticsError,
    _check_dtype,
    _is_bool,
    _is_float,
    _is_int,
    _require_float,
    _widen,
)

# --------------------------------------------------------------------------------------
# cast
#
# Sources relied on (facts only): hicann/pypto docs/zh/api/datatype/CastMode.md,
# docs/zh/api/datatype/SaturationMode.md and docs/zh/api/operation/pypto-cast.md, and the
# `pypto.cast` wrapper of the pypto 0.2.0 wheel:
# - RINT: nearest, ties to even; ROUND: nearest, ties away from zero; FLOOR / CEIL /
#   TRUNC: towards -inf / +inf / zero; ODD: truncate, then set the last kept bit when any
#   dropped bit was set (von Neumann rounding). The docs define each on the dropped bits
#   of the significand, i.e. rounding to the destination's precision, not to integers.
# - CAST_NONE is "the default of the conversion": TRUNC for float -> int, RINT otherwise.
#   A mode the conversion does not support falls back to that default without an error;
#   ODD is supported only for FP32 -> FP16. Widening conversions ignore the mode.
# - SaturationMode (float -> int): OFF keeps the low bits of the integer ("binary
#   truncation": fp16 300 -> int8 44, -300 -> -44, the docs' example); ON clamps to the
#   destination's range (300 -> 127, -300 -> -128).
# - pypto.cast returns its input unchanged when the dtype is the same, the mode is NONE
#   and saturation is OFF; FP32 -> FP32 with a mode is "rounding within the type", i.e.
#   to an integral value.
# Decisions where the docs are silent (documented on the functions below): NaN -> int is
# 0; +-inf -> int is the max / min in both saturation modes; float -> narrower float
# without saturation follows IEEE 754 overflow for the rounding direction, and with
# saturation clamps to the largest finite value (like PTX `.satfinite`).
# --------------------------------------------------------------------------------------


def _normalize_mode(mode: str) -> str:
    m = str(mode).lower()
    if m.startswith("castmode."):
        m = m[len("castmode.") :]
    if m.startswith("cast_"):
        m = m[len("cast_") :]
    if m not in CAST_MODES:
        raise SemanticsError(
            f"cast: unknown rounding mode {mode!r} (one of {', '.join(CAST_MODES)})"
        )
    return m


def resolve_cast_mode(src: np.dtype, dst: np.dtype, mode: str) -> str:
    """The rounding mode PyPTO really applies when casting `src` to `dst` with `mode`.

    CAST_NONE means the conversion's default (TRUNC for float -> int, RINT otherwise), and
    a mode the conversion does not support silently becomes that default; of the modes
    tileir models only ODD is restricted (FP32 -> FP16 only). Returns one of `rint`,
    `round`, `floor`, `ceil`, `trunc`, `odd`.

    >>> resolve_cast_mode(np.dtype("float32"), np.dtype("int32"), "none")
    'trunc'
    >>> resolve_cast_mode(np.dtype("float32"), BF16, "odd")
    'rint'
    """
    m = _normalize_mode(mode)
    src, dst = np.dtype(src), np.dtype(dst)
    default = "trunc" if _is_float(src) and (_is_int(dst) or _is_bool(dst)) else "rint"
    if m == "none":
        return default
    if m == "odd" and not (src == F32 and dst == np.dtype(np.float16)):
        return default
    return m


def _bit_length(m: np.ndarray) -> np.ndarray:
    """Bit length of each uint64 (0 for 0), exactly."""
    _, k = np.frexp(m.astype(F64))
    k = k.astype(np.int64)
    # Converting to float64 may round m up to the next power of two; undo that.
    shift = np.clip(k - 1, 0, 63).astype(np.uint64)
    too_big = (k > 0) & ((m >> shift) == 0)
    return k - too_big


def _decompose(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split finite values into sign, integer significand m (uint64), exponent e and the
    exponent of the leading bit, so that |x| = m * 2**e exactly. Non-finite lanes get
    m = 0."""
    if _is_float(x.dtype):
        x64 = _widen(x)
        neg = np.signbit(x64)
        finite = np.isfinite(x64)
        frac, k = np.frexp(np.where(finite, np.abs(x64), 0.0))
        m = np.ldexp(frac, 53).astype(np.uint64)
        e = k.astype(np.int64) - 53
        top = k.astype(np.int64) - 1
        return neg, m, e, top
    xi = x.astype(np.int64) if x.dtype != np.dtype(np.uint64) else x
    if xi.dtype == np.dtype(np.uint64):
        neg = np.zeros(x.shape, dtype=bool)
        m = xi.copy()
    else:
        neg = xi < 0
        # ~x = -x - 1 is non-negative for negative x, so this is exact even for INT64_MIN.
        m = np.where(neg, (~xi).astype(np.uint64) + np.uint64(1), xi.astype(np.uint64))
    e = np.zeros(x.shape, dtype=np.int64)
    return neg, m, e, _bit_length(m) - 1


def _round_magnitude(
    m: np.ndarray, e: np.ndarray, q: np.ndarray, neg: np.ndarray, mode: str
) -> np.ndarray:
    """Round m * 2**e to a multiple of 2**q with `mode`; return the multiple t (uint64).

    Exact integer arithmetic on the dropped bits: `r` is what is dropped, `half` the
    weight of the first dropped bit. Where q <= e nothing is dropped and t = m << (e - q)
    (callers only use those lanes when t is small).
    """
    s = q - e
    sc = np.clip(s, 1, 62).astype(np.uint64)
    one = np.uint64(1)
    t = m >> sc
    r = m & ((one << sc) - one)
    half = one << (sc - one)
    odd = (t & one) == one
    inexact = r != 0
    if mode == "rint":
        up = (r > half) | ((r == half) & odd)
    elif mode == "round":
        up = r >= half
    elif mode == "floor":
        up = neg & inexact
    elif mode == "ceil":
        up = ~neg & inexact
    elif mode == "trunc":
        up = np.zeros(m.shape, dtype=bool)
    elif mode == "odd":
        up = inexact & ~odd
    else:
        raise SemanticsError(f"cast: {mode!r} is not a rounding direction")
    rounded = t + up.astype(np.uint64)
    exact = m << np.clip(-s, 0, 63).astype(np.uint64)
    return np.where(s <= 0, exact, rounded)


def _overflow_to_inf(mode: str, neg: np.ndarray) -> np.ndarray:
    """IEEE 754 overflow: which lanes round to infinity (the rest to the largest finite)."""
    if mode in ("rint", "round"):
        return np.ones(neg.shape, dtype=bool)
    if mode == "floor":
        return neg.copy()
    if mode == "ceil":
        return ~neg
    return np.zeros(neg.shape, dtype=bool)  # trunc, odd


def _to_float(
    x: np.ndarray, dst: np.dtype, mode: str, satmode: bool, integral: bool = False
) -> np.ndarray:
    fmt = _FLOAT_FORMATS[dst]
    neg, m, e, top = _decompose(x)
    q = np.maximum(top, fmt.emin) - (fmt.precision - 1)
    if integral:
        q = np.maximum(q, 0)
    t = _round_magnitude(m, e, q, neg, mode)
    mag = np.ldexp(t.astype(F64), np.clip(q, -1100, 1100).astype(np.int32))
    overflow = mag > fmt.max
    inf_value = np.inf if fmt.has_inf else np.nan
    if satmode:
        mag = np.where(overflow, fmt.max, mag)
    else:
        to_inf = _overflow_to_inf(mode, neg)
        mag = np.where(overflow, np.where(to_inf, inf_value, fmt.max), mag)
    if _is_float(x.dtype):
        x64 = _widen(x)
        mag = np.where(np.isinf(x64), fmt.max if satmode else inf_value, mag)
        mag = np.where(np.isnan(x64), np.nan, mag)
    return np.copysign(mag, np.where(neg, -1.0, 1.0)).astype(dst)


def _to_int(x: np.ndarray, dst: np.dtype, mode: str, satmode: bool) -> np.ndarray:
    info = np.iinfo(dst)
    if not _is_float(x.dtype):
        xi = x.astype(np.int64) if _is_bool(x.dtype) else x
        if satmode:
            src = np.iinfo(xi.dtype)
            xi = np.clip(xi, builtins.max(info.min, src.min), builtins.min(info.max, src.max))
        return xi.astype(dst)
    x64 = _widen(x)
    neg, m, e, _ = _decompose(x)
    fraction = (e < 0) & np.isfinite(x64)  # |x| < 2**53: rounding may drop bits
    t = _round_magnitude(m, e, np.zeros_like(e), neg, mode)
    if satmode:
        rounded = np.where(fraction, np.where(neg, -1.0, 1.0) * t.astype(F64), x64)
        # The bounds as exact floats: max + 1 and min are powers of two (or zero).
        high = rounded >= float(info.max + 1)
        low = rounded < float(info.min)
        inside = np.where(high | low | np.isnan(rounded), 0.0, rounded)
        out = inside.astype(np.int64 if info.min < 0 else np.uint64).astype(dst)
        out = np.where(high, np.array(info.max, dst), np.where(low, np.array(info.min, dst), out))
    else:
        # The integer modulo 2**64: m << e keeps the low bits; e >= 64 leaves none.
        shifted = m << np.clip(e, 0, 63).astype(np.uint64)
        low_bits = np.where(e >= 64, np.uint64(0), shifted)
        u = np.where(fraction, t, low_bits)
        u = np.where(neg, ~u + np.uint64(1), u)
        out = u.view(np.int64).astype(dst)
        out = np.where(np.isposinf(x64), np.array(info.max, dst), out)
        out = np.where(np.isneginf(x64), np.array(info.min, dst), out)
    return np.where(np.isnan(x64), np.zeros((), dst), out).astype(dst)


def round_to_dtype(x: np.ndarray, dtype: np.dtype, mode: str, satmode: bool = False) -> np.ndarray:
    """Convert `x` to `dtype` rounding in the one direction `mode` (no PyPTO defaults).

    `mode` is one of `rint`, `round`, `floor`, `ceil`, `trunc`, `odd` and is applied as
    given, even where PyPTO would fall back to a default; `cast` is the PyPTO op. The
    result is exact where `x` is representable; otherwise:

    - float -> float: rounds to the destination's precision (subnormals included). On
      overflow without saturation: IEEE 754 for the direction (rint/round -> inf; trunc
      and odd -> max finite; floor -> max / -inf; ceil -> inf / -max); e4m3fn has no
      infinity and gives NaN instead. With saturation, overflow and +-inf give +-max
      finite. NaN stays NaN. Zero signs are kept (a negative value rounding to zero is -0).
    - float -> int: rounds to an integer; then `satmode` False keeps the low bits
      (two's complement wrap), True clamps. NaN -> 0, +-inf -> max / min in both modes.
    - int -> float: as float -> float on the exact integer value.
    - int -> int: wrap, or clamp with `satmode`. bool -> 0 / 1; anything -> bool is `!= 0`.

    >>> round_to_dtype(np.array([1.0 + 2.0**-8], np.float32), BF16, "ceil").astype(np.float32)
    array([1.0078125], dtype=float32)
    """
    dst = np.dtype(dtype)
    x = np.asarray(x)
    _check_dtype("cast", x.dtype)
    _check_dtype("cast", dst)
    if mode not in _ROUNDING_MODES:
        raise SemanticsError(f"cast: {mode!r} is not a rounding direction {_ROUNDING_MODES}")
    if _is_bool(dst):
        return _widen(x) != 0 if _is_float(x.dtype) else x != 0
    if _is_float(dst):
        if x.dtype == dst:
            return x.copy()
        return _to_float(x, dst, mode, satmode)
    return _to_int(x, dst, mode, satmode)


def round_integral(x: np.ndarray, mode: str, satmode: bool = False) -> np.ndarray:
    """Round a float tensor to integral values in its own dtype (PyPTO's same-type cast,
    `cast(x_f32, DT_FP32, CAST_FLOOR)`); `mode` as in `round_to_dtype`.

    >>> round_integral(np.array([-2.5, 2.5], np.float32), "round")
    array([-3.,  3.], dtype=float32)
    """
    x = np.asarray(x)
    _require_float("cast", x)
    if mode not in _ROUNDING_MODES:
        raise SemanticsError(f"cast: {mode!r} is not a rounding direction {_ROUNDING_MODES}")
    return _to_float(x, x.dtype, mode, satmode, integral=True)


def cast(x: np.ndarray, dtype: np.dtype, mode: str = "none", satmode: bool = False) -> np.ndarray:
    """`pypto.cast(x, dtype, mode, satmode)`.

    The mode is first resolved with PyPTO's rules (`resolve_cast_mode`: NONE is TRUNC for
    float -> int and RINT otherwise; ODD only exists for FP32 -> FP16), then applied by
    `round_to_dtype`, whose docstring gives the overflow, NaN and saturation rules. A
    same-type cast is the identity when `mode` is none (PyPTO returns the input; we return
    a copy); with a mode, a float tensor is rounded to integral values (`round_integral`).

    >>> cast(np.array([300.0, -300.0, 50.0], np.float16), np.dtype(np.int8))
    array([ 44, -44,  50], dtype=int8)
    >>> cast(np.array([300.0, -300.0, 50.0], np.float16), np.dtype(np.int8), satmode=True)
    array([ 127, -128,   50], dtype=int8)
    """
    x = np.asarray(x)
    dst = np.dtype(dtype)
    _check_dtype("cast", x.dtype)
    _check_dtype("cast", dst)
    m = _normalize_mode(mode)
    if x.dtype == dst:
        if m == "none" or not _is_float(dst):
            return x.copy()
        return round_integral(x, resolve_cast_mode(x.dtype, dst, m), satmode)
    return round_to_dtype(x, dst, resolve_cast_mode(x.dtype, dst, m), satmode)
