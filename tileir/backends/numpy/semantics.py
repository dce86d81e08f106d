"""The numpy semantics of every PyPTO op that tileir models: the spec of the numpy back end.

Each function here is pure (arrays in, new arrays out; only `write_window` writes, and
only into the array it is given), has no xDSL imports, and is tested alone against
independent references. The interpreter calls them through one thin shim per op, so a
question about what an op *means* is answered here and nowhere else.

Element types are numpy / `ml_dtypes` dtypes: `bfloat16`, `float16`, `float32`,
`float8_e4m3fn`, `float8_e5m2`, `int8`/`int16`/`int32`/`int64` (unsigned too) and
`bool`. `float8_e8m0fnu` and PyPTO's hif8 / fp4 kinds are not supported: PyPTO's `cast`
does not list e8m0, and `ml_dtypes` has no hif8.

Numeric conventions, chosen once for every op (the reasons are in the functions):

- Low-precision floats (bf16, f16, fp8) are computed in float32 and rounded once to their
  own type (round to nearest even), the way PyPTO kernels widen bf16 to FP32 for math.
  For `+ - * /` and `sqrt` this equals a correctly rounded operation in the low-precision
  type, because float32 has at least 2p+2 significand bits for p = 8 (bf16) and p = 11
  (f16).
- The float32 result of a transcendental op is the float64 value rounded to float32, so it
  does not depend on which SIMD kernel numpy picks for float32 `exp`/`log` on a given CPU.
- Reductions and matmul model an FP32 accumulator as an ideal one: sum in float64, round
  once to float32. That is deterministic and independent of summation order; a float32
  loop in some particular order (as hardware runs) may differ in the last bits.
- Integer arithmetic wraps (two's complement), as the hardware does.
- Tensor-scalar ops convert the scalar to the tensor's dtype first, as PyPTO does
  (`pypto_impl.Element(input.dtype, other)` in its Python wrappers).

Errors a program can make (shapes that do not broadcast, an index out of range, a window
outside its tensor) raise `SemanticsError` with the op name and the offending values.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tileir.dialect.shapes import GATHERMASK_PATTERNS

__all__ = [
    "CAST_MODES",
    "arange",
    "clone",
    "fillpad",
    "index_put",
    "logical_not",
    "scatter",
    "scatter_update",
    "silu",
    "SemanticsError",
    "abs",
    "add",
    "amax",
    "amin",
    "broadcast_shape",
    "cast",
    "concat",
    "div",
    "eq",
    "erf",
    "exp",
    "expand_clone",
    "full",
    "gather",
    "gathermask",
    "ge",
    "gt",
    "index_select",
    "le",
    "log",
    "lt",
    "matmul",
    "maximum",
    "minimum",
    "mul",
    "ne",
    "neg",
    "pow",
    "read_window",
    "reciprocal",
    "relu",
    "reshape",
    "resolve_cast_mode",
    "round_integral",
    "round_to_dtype",
    "rsqrt",
    "sigmoid",
    "sqrt",
    "sub",
    "sum",
    "tanh",
    "topk",
    "transpose",
    "unsqueeze",
    "where",
    "write_window",
]


class SemanticsError(ValueError):
    """A program asked an op for something PyPTO does not define (bad shapes, dtypes,
    indices or windows). The message names the op and the offending values."""


Scalar = int | float | bool
Operand = np.ndarray | int | float | bool
ArrayFn = Callable[..., np.ndarray]

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
F8E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
F8E5M2 = np.dtype(ml_dtypes.float8_e5m2)

CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
"""PyPTO's `CastMode` members, lower case without the `CAST_` prefix."""

_ROUNDING_MODES = CAST_MODES[1:]


@dataclass(frozen=True)
class _FloatFormat:
    """What rounding needs to know about a binary float format."""

    precision: int
    """Significand bits including the hidden bit."""
    emin: int
    """Exponent of the smallest normal number."""
    max: float
    has_inf: bool


def _format(dtype: np.dtype, has_inf: bool = True) -> _FloatFormat:
    info = ml_dtypes.finfo(dtype)
    return _FloatFormat(int(info.nmant) + 1, int(info.minexp), float(info.max), has_inf)


_FLOAT_FORMATS: dict[np.dtype, _FloatFormat] = {
    BF16: _format(BF16),
    np.dtype(np.float16): _format(np.dtype(np.float16)),
    F32: _format(F32),
    F64: _format(F64),
    # e4m3fn is "finite + NaN": the all-ones pattern is NaN and there is no infinity.
    F8E4M3: _format(F8E4M3, has_inf=False),
    F8E5M2: _format(F8E5M2),
}


def _is_float(dtype: np.dtype) -> bool:
    return dtype in _FLOAT_FORMATS


def _is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def _is_bool(dtype: np.dtype) -> bool:
    return dtype.kind == "b"


def _check_dtype(op: str, dtype: np.dtype) -> None:
    if not (_is_float(dtype) or _is_int(dtype) or _is_bool(dtype)):
        raise SemanticsError(f"{op}: element type {dtype} is not supported")


def _require_float(op: str, x: np.ndarray) -> None:
    if not _is_float(x.dtype):
        raise SemanticsError(f"{op}: needs a floating-point tensor, got {x.dtype}")


def _widen(x: np.ndarray, dtype: np.dtype = F64) -> np.ndarray:
    """x converted exactly to a wider float type. Signalling-NaN codes of bf16 / fp8 raise
    numpy's "invalid value" flag on conversion; they are NaN all the same."""
    with np.errstate(invalid="ignore"):
        return x.astype(dtype)


def _from_f32(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round a float32 result once (nearest even) to `dtype`; float32 passes through."""
    r = np.asarray(r, dtype=F32)
    if dtype == F32:
        return r
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the meaning
        return r.astype(dtype)


def _from_f64(r: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The float32 result of a float64 computation, then rounded once to `dtype`."""
    with np.errstate(over="ignore"):
        r32 = np.asarray(r, dtype=F64).astype(F32)
    return _from_f32(r32, dtype)


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


# --------------------------------------------------------------------------------------
# scalars, shapes and operand checks
# --------------------------------------------------------------------------------------


def _scalar_to_dtype(op: str, value: object, dtype: np.dtype) -> np.ndarray:
    """A Python scalar as a 0-d array of `dtype`, as PyPTO's `Element(dtype, value)`:
    floats round to nearest even; an integer tensor takes only in-range integers (the
    PyPTO docs: a float scalar with an integer tensor is an error)."""
    if isinstance(value, np.ndarray) or not isinstance(value, (int, float, np.number, np.bool_)):
        raise SemanticsError(f"{op}: expected a scalar, got {type(value).__name__}")
    if _is_bool(dtype):
        if not isinstance(value, (bool, np.bool_)):
            raise SemanticsError(f"{op}: a bool tensor takes only a bool scalar, got {value!r}")
        return np.asarray(bool(value))
    if _is_int(dtype):
        if isinstance(value, (float, np.floating)):
            raise SemanticsError(
                f"{op}: a float scalar {value!r} cannot combine with an integer tensor ({dtype})"
            )
        iv = int(value)
        info = np.iinfo(dtype)
        if not info.min <= iv <= info.max:
            raise SemanticsError(f"{op}: scalar {iv} does not fit {dtype} [{info.min}, {info.max}]")
        return np.asarray(iv, dtype=dtype)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        iv = int(value)
        if -(2**63) <= iv < 2**63:
            return round_to_dtype(np.asarray(iv, dtype=np.int64), dtype, "rint")
    return round_to_dtype(np.asarray(float(value), dtype=F64), dtype, "rint")


def broadcast_shape(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting (right-aligned; equal or 1), which PyPTO 0.2.0 accepts for its
    elementwise ops ([2,8] with [8], [1,8], [2,1]; [2,1] with [1,8] -> [2,8]; checked by
    tracing kernels with the real package). Raises `SemanticsError` naming the shapes."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        listed = " and ".join(str(list(s)) for s in shapes)
        raise SemanticsError(f"{op}: shapes {listed} do not broadcast") from None


def _operands(op: str, x: Operand, y: Operand) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """Both operands as arrays of the tensor operand's dtype, shapes checked."""
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        if x.dtype != y.dtype:
            raise SemanticsError(f"{op}: operand dtypes differ ({x.dtype} and {y.dtype})")
        dtype = x.dtype
        xa, ya = x, y
    elif isinstance(x, np.ndarray):
        dtype = x.dtype
        xa, ya = x, _scalar_to_dtype(op, y, dtype)
    elif isinstance(y, np.ndarray):
        dtype = y.dtype
        xa, ya = _scalar_to_dtype(op, x, dtype), y
    else:
        raise SemanticsError(f"{op}: at least one operand must be a tensor")
    _check_dtype(op, dtype)
    broadcast_shape(op, xa.shape, ya.shape)
    return xa, ya, dtype


def _norm_dim(op: str, dim: int, ndim: int, *, extra: int = 0) -> int:
    """A dimension index in [-(ndim+extra), ndim+extra) as a non-negative index."""
    n = ndim + extra
    if not -n <= dim < n:
        raise SemanticsError(f"{op}: dim {dim} is out of range for rank {ndim}")
    return dim % n


# --------------------------------------------------------------------------------------
# elementwise unary
# --------------------------------------------------------------------------------------


def _flip_sign_bits(x: np.ndarray, mode: str) -> np.ndarray:
    """neg / abs of a float tensor on its sign bit: exact, NaN payloads kept."""
    bits = x.dtype.itemsize * 8
    u = x.view(np.dtype(f"uint{bits}"))
    sign = np.array(1 << (bits - 1), dtype=u.dtype)
    out = u ^ sign if mode == "neg" else u & ~sign
    return out.view(x.dtype)


def neg(x: np.ndarray) -> np.ndarray:
    """`pypto.neg`: -x. Exact for floats (sign flip); integers wrap (-INT_MIN = INT_MIN)."""
    _check_dtype("neg", x.dtype)
    if _is_float(x.dtype):
        return _flip_sign_bits(x, "neg")
    if not _is_int(x.dtype):
        raise SemanticsError(f"neg: not defined on {x.dtype}")
    with np.errstate(over="ignore"):
        return np.negative(x)


def abs(x: np.ndarray) -> np.ndarray:
    """`pypto.abs`: |x|. Exact for floats (sign cleared); integers wrap (|INT_MIN| = INT_MIN)."""
    _check_dtype("abs", x.dtype)
    if _is_float(x.dtype):
        return _flip_sign_bits(x, "abs")
    if not _is_int(x.dtype):
        raise SemanticsError(f"abs: not defined on {x.dtype}")
    with np.errstate(over="ignore"):
        return np.abs(x)


def relu(x: np.ndarray) -> np.ndarray:
    """`pypto.relu`: max(x, 0); NaN stays NaN and -0.0 stays -0.0 (only x < 0 becomes 0)."""
    _check_dtype("relu", x.dtype)
    if _is_int(x.dtype):
        return np.maximum(x, np.zeros((), x.dtype))
    _require_float("relu", x)
    x32 = _widen(x, F32)
    return _from_f32(np.where(x32 < 0, np.float32(0), x32), x.dtype)


def _rsqrt64(w: np.ndarray) -> np.ndarray:
    np.sqrt(w, out=w)
    return np.divide(1.0, w, out=w)


def _sigmoid64(w: np.ndarray) -> np.ndarray:
    np.negative(w, out=w)
    np.exp(w, out=w)
    np.add(w, 1.0, out=w)
    return np.divide(1.0, w, out=w)


def _unary_transcendental(op: str, x: np.ndarray) -> np.ndarray:
    _require_float(op, x)
    with np.errstate(all="ignore"):
        return _from_f64(FLOAT64_FORMULAS[op](_widen(x)), x.dtype)


def exp(x: np.ndarray) -> np.ndarray:
    """`pypto.exp`: e**x; float32 result correctly rounded from float64, then RNE to x's dtype."""
    return _unary_transcendental("exp", x)


def log(x: np.ndarray) -> np.ndarray:
    """`pypto.log`: natural log; log(0) = -inf, log(x<0) = NaN (IEEE). Precision as `exp`."""
    return _unary_transcendental("log", x)


def sqrt(x: np.ndarray) -> np.ndarray:
    """`pypto.sqrt`: correctly rounded (the float64 root rounds exactly to float32);
    sqrt(x<0) = NaN."""
    return _unary_transcendental("sqrt", x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    """`pypto.rsqrt`: 1/sqrt(x), as one rounding of the float64 value; rsqrt(0) = inf."""
    return _unary_transcendental("rsqrt", x)


def reciprocal(x: np.ndarray) -> np.ndarray:
    """`pypto.reciprocal`: 1/x, correctly rounded; 1/0 = inf."""
    return _unary_transcendental("reciprocal", x)


def tanh(x: np.ndarray) -> np.ndarray:
    """tanh (PyPTO 0.2.0 has no `pypto.tanh`; kernels write 2*sigmoid(2x)-1). Precision as `exp`."""
    return _unary_transcendental("tanh", x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """`pypto.sigmoid`: 1 / (1 + exp(-x)) evaluated in float64 (no overflow trouble:
    exp(-x) = inf gives 0), rounded once to float32, then RNE to x's dtype."""
    return _unary_transcendental("sigmoid", x)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 without scipy; relative error below 2e-15 (tested against `math.erf`).

    |x| < 2.5: erf(a) = 2/sqrt(pi) * exp(-a^2) * sum_n (2a^2)^n a / (2n+1)!!, a series of
    positive terms (no cancellation); 40 terms reach float64 precision on this range.
    |x| >= 2.5: 1 - erfc(a), with erfc from its continued fraction
    a + (1/2)/(a + 1/(a + (3/2)/(a + ...))) evaluated bottom-up to depth 40; erfc is below
    4.1e-4 there, so its relative error of ~4e-15 hardly reaches erf. +-inf give +-1 and
    NaN stays NaN through the same formulas.
    """
    a = np.abs(np.asarray(x, dtype=F64))
    out = np.empty_like(a)
    near = a < 2.5
    an = a[near]
    term = an.copy()
    total = an.copy()
    two_a2 = 2.0 * an * an
    for n in range(1, 40):
        term *= two_a2 / (2 * n + 1)
        total += term
    out[near] = _TWO_OVER_SQRT_PI * np.exp(-an * an) * total
    af = a[~near]
    with np.errstate(invalid="ignore"):
        frac = af.copy()
        for k in range(40, 0, -1):
            frac = af + (k / 2.0) / frac
        out[~near] = 1.0 - np.exp(-af * af) / (math.sqrt(math.pi) * frac)
    return np.copysign(out, x)


FLOAT64_FORMULAS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": lambda w: np.exp(w, out=w),
    "log": lambda w: np.log(w, out=w),
    "sqrt": lambda w: np.sqrt(w, out=w),
    "rsqrt": _rsqrt64,
    "reciprocal": lambda w: np.divide(1.0, w, out=w),
    "tanh": lambda w: np.tanh(w, out=w),
    "sigmoid": _sigmoid64,
    "erf": _erf64,
}
"""The float64 expression of each float unary op, applied to a float64 array the
function owns: each may overwrite its argument (in place, so that a large tile costs
one float64 buffer, not one per step) and returns the result. The float32 result is
that value rounded once; `fastpaths` calls the same formulas without the checks."""


def erf(x: np.ndarray) -> np.ndarray:
    """`pypto.erf`: the error function; float32 result rounded from a float64 evaluation
    (`_erf64`), then RNE to x's dtype."""
    return _unary_transcendental("erf", x)


# --------------------------------------------------------------------------------------
# elementwise binary
# --------------------------------------------------------------------------------------


def _arith(op: str, x: Operand, y: Operand, f32_fn: ArrayFn, int_fn: ArrayFn) -> np.ndarray:
    xa, ya, dtype = _operands(op, x, y)
    if _is_float(dtype):
        with np.errstate(all="ignore"):
            return _from_f32(f32_fn(_widen(xa, F32), _widen(ya, F32)), dtype)
    if _is_int(dtype):
        with np.errstate(over="ignore"):
            return np.asarray(int_fn(xa, ya)).astype(dtype)
    raise SemanticsError(f"{op}: not defined on {dtype}")


def add(x: Operand, y: Operand, alpha: int | float = 1) -> np.ndarray:
    """`pypto.add(x, y, alpha=)`: x + alpha*y, with numpy broadcasting; a scalar may be on
    either side. Floats compute in float32 and round once to the dtype; ints wrap.

    alpha != 1 follows PyPTO's wrapper exactly: with a tensor y it is
    add(x, mul(y, alpha)) (two roundings); with a scalar y the product y*alpha is taken in
    Python first and then converted to the tensor's dtype.
    """
    if alpha == 1:
        return _arith("add", x, y, np.add, np.add)
    if isinstance(y, np.ndarray):
        return add(x, mul(y, alpha))
    return add(x, y * alpha)


def sub(x: Operand, y: Operand, alpha: int | float = 1) -> np.ndarray:
    """`pypto.sub(x, y, alpha=)`: x - alpha*y; the same rules as `add`."""
    if alpha == 1:
        return _arith("sub", x, y, np.subtract, np.subtract)
    if isinstance(y, np.ndarray):
        return sub(x, mul(y, alpha))
    return sub(x, y * alpha)


def mul(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.mul`: x * y (rules as `add`)."""
    return _arith("mul", x, y, np.multiply, np.multiply)


def _int_div_trunc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise SemanticsError("div: integer division by zero")
    a64, b64 = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    with np.errstate(over="ignore"):
        q = a64 // b64
        # floor -> trunc: step back towards zero where the signs differ and it is inexact
        q = q + ((q * b64 != a64) & ((a64 < 0) != (b64 < 0)))
    return q


def div(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.div`: x / y. Floats: IEEE division in float32 (x/0 = +-inf, 0/0 = NaN), then
    RNE to the dtype. Integers: the quotient truncated towards zero, in the operand dtype.

    Integer division: pypto 0.2.0 types int32 / int32 as int32; the current docs say
    integer inputs are divided in FP32 (and, newer, give FP32), whose default conversion
    back to int is TRUNC. tileir keeps the operand dtype and computes the truncated
    quotient exactly (equal to the FP32 route while |x| < 2**24); division by zero raises.
    """
    return _arith("div", x, y, np.divide, _int_div_trunc)


def maximum(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.maximum`: elementwise max; a NaN operand gives NaN (as `numpy.maximum`)."""
    return _arith("maximum", x, y, np.maximum, np.maximum)


def minimum(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.minimum`: elementwise min; a NaN operand gives NaN."""
    return _arith("minimum", x, y, np.minimum, np.minimum)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b < 0):
        raise SemanticsError("pow: an integer tensor needs non-negative exponents")
    return np.power(a.astype(np.int64), b.astype(np.int64))


def pow(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.pow`: x ** y. Floats: evaluated in float64 and rounded once to float32 (then
    RNE to the dtype); a negative base with a non-integral exponent is NaN. Integers:
    exponents must be >= 0, and the result wraps."""
    xa, ya, dtype = _operands("pow", x, y)
    if _is_float(dtype):
        with np.errstate(all="ignore"):
            return _from_f64(np.power(_widen(xa), _widen(ya)), dtype)
    return _arith("pow", xa, ya, np.power, _int_pow)


def _compare(op: str, x: Operand, y: Operand, fn: ArrayFn) -> np.ndarray:
    xa, ya, dtype = _operands(op, x, y)
    if _is_float(dtype):
        xa, ya = _widen(xa), _widen(ya)
    return np.asarray(fn(xa, ya), dtype=bool)


def eq(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.eq` -> bool tensor. IEEE comparisons: NaN is unequal to everything, -0 == 0."""
    return _compare("eq", x, y, np.equal)


def ne(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.ne` -> bool tensor (NaN != NaN is True)."""
    return _compare("ne", x, y, np.not_equal)


def lt(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.lt` -> bool tensor (False where a NaN is involved)."""
    return _compare("lt", x, y, np.less)


def le(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.le` -> bool tensor."""
    return _compare("le", x, y, np.less_equal)


def gt(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.gt` -> bool tensor."""
    return _compare("gt", x, y, np.greater)


def ge(x: Operand, y: Operand) -> np.ndarray:
    """`pypto.ge` -> bool tensor."""
    return _compare("ge", x, y, np.greater_equal)


def full(shape: Sequence[int], value: Scalar, dtype: np.dtype) -> np.ndarray:
    """`pypto.full(shape, value, dtype)`: a tensor filled with `value` converted to `dtype`
    like any scalar operand (RNE for floats; an integer dtype needs an in-range int)."""
    dims = tuple(int(d) for d in shape)
    if builtins.any(d <= 0 for d in dims):
        raise SemanticsError(f"full: every dim must be > 0, got {list(dims)}")
    dt = np.dtype(dtype)
    _check_dtype("full", dt)
    return np.full(dims, _scalar_to_dtype("full", value, dt), dtype=dt)


def where(cond: np.ndarray, x: Operand, y: Operand, *, dtype: np.dtype | None = None) -> np.ndarray:
    """`pypto.where(cond, x, y)`: x where cond else y, all three broadcast together.

    x and y may be tensors or scalars. Two tensors must share a dtype; a scalar takes the
    tensor's dtype; with two scalars the result is float32 unless `dtype` says otherwise
    (pypto 0.2.0 types `where(c, 1.0, 0.0)` as FP32).
    """
    if not isinstance(cond, np.ndarray) or not _is_bool(cond.dtype):
        got = cond.dtype if isinstance(cond, np.ndarray) else type(cond).__name__
        raise SemanticsError(f"where: the condition must be a bool tensor, got {got}")
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        xa, ya, _ = _operands("where", x, y)
    else:
        dt = np.dtype(dtype) if dtype is not None else F32
        xa, ya = _scalar_to_dtype("where", x, dt), _scalar_to_dtype("where", y, dt)
    shape = broadcast_shape("where", cond.shape, xa.shape, ya.shape)
    return np.asarray(np.where(cond, xa, ya)).reshape(shape)


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


# --------------------------------------------------------------------------------------
# matmul
# --------------------------------------------------------------------------------------

_I8 = np.dtype(np.int8)
_I32 = np.dtype(np.int32)


def _matmul_allowed(inputs: np.dtype, scaled: bool = False) -> tuple[np.dtype, ...]:
    """The out / bias dtypes PyPTO allows for `inputs` (`scaled`: the out dtypes with a
    scale): the dialect's tables (the verifier applies the same ones, so a verified op
    never fails here)."""
    from tileir.dialect.dtypes import BY_NUMPY, BY_SHORT
    from tileir.dialect.shapes import MATMUL_OUT_DTYPES, MATMUL_SCALED_OUT_DTYPES

    row = BY_NUMPY.get(inputs)
    table = MATMUL_SCALED_OUT_DTYPES if scaled else MATMUL_OUT_DTYPES
    names = table.get(row.short, ()) if row is not None else ()
    return tuple(BY_SHORT[n].numpy for n in names)


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
    allowed = _matmul_allowed(a.dtype)
    if out_dt not in (_matmul_allowed(a.dtype, scaled=True) if scale is not None else allowed):
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
        if bias.dtype not in allowed:
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
            raise SemanticsError(
                f"{op}: dim {i}: need shape > 0, 0 <= valid_shape <= shape and offset >= 0; "
                f"got offsets {list(offs)}, shape {list(dims)}, valid_shape {list(valid)}"
            )
        if offs[i] + valid[i] > full_shape[i]:
            raise SemanticsError(
                f"{op}: window offsets {list(offs)} valid_shape {list(valid)} goes outside "
                f"the tensor's bounds {list(full_shape)} in dim {i}"
            )
    return offs, valid


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


# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------- scatter, index_put, arange, fillpad, deinterleave, silu, logical_not
# --------------------------------------------------------------------------------------


def clone(x: np.ndarray) -> np.ndarray:
    """`pypto.clone(x)`: a copy with x's shape, dtype and bits."""
    return np.array(x, copy=True)


def _silu64(w: np.ndarray) -> np.ndarray:
    e = np.exp(np.negative(w))
    np.add(e, 1.0, out=e)
    return np.divide(w, e, out=w)


FLOAT64_FORMULAS["silu"] = _silu64


def silu(x: np.ndarray) -> np.ndarray:
    """`pypto.silu(x)` = x * sigmoid(x) = x / (1 + exp(-x)), evaluated in float64 and
    rounded once to float32, then RNE to x's dtype (as `sigmoid`)."""
    return _unary_transcendental("silu", x)


def round(x: np.ndarray, decimals: int = 0) -> np.ndarray:  # noqa: A001 (PyPTO's name)
    """`pypto.round(x, decimals)`, as PyPTO 0.2.0 computes it (measured bit for bit in
    its interpreter on f32, f16, bf16 and decimals -2..3): in float32, `rint(x * 10^d) /
    10^d` (d < 0: `rint(x / 10^-d) * 10^-d`), `rint` halves to even, each step one float32
    rounding (so `x * 10^d` may overflow to inf), then RNE to x's dtype."""
    _require_float("round", x)
    x32 = _widen(x, F32)
    p = F32.type(10.0 ** builtins.abs(int(decimals)))
    with np.errstate(over="ignore", invalid="ignore"):
        if decimals >= 0:
            r = np.rint(x32 * p) / p
        else:
            r = np.rint(x32 / p) * p
    return _from_f32(r, x.dtype)


def logical_not(x: np.ndarray) -> np.ndarray:
    """`pypto.logical_not(x)`: `x == 0` (its docs: "input == 0 ? True : False"), so NaN
    gives False and -0.0 gives True; a bool tensor of x's shape."""
    _check_dtype("logical_not", x.dtype)
    return np.asarray(x == 0)


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


def deinterleave(x: np.ndarray, other: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`pypto.deinterleave(x, other=None)`: the elements at even and at odd positions of
    the last dim of x, or of the stream `concat([x, other], -1)` (its docs)."""
    stream = x if other is None else np.concatenate([x, other], axis=-1)
    if stream.shape[-1] % 2:
        raise SemanticsError(f"deinterleave: last dim of {list(stream.shape)} must be even")
    return np.ascontiguousarray(stream[..., 0::2]), np.ascontiguousarray(stream[..., 1::2])
