"""Elementwise ops: unary (abs, exp, sigmoid, erf, ...) and binary (add ... pow,
comparisons), `full` and `where`."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence

import numpy as np

from tileir.backends.numpy.semantics.common import (
    F32,
    F64,
    ArrayFn,
    Operand,
    Scalar,
    SemanticsError,
    _check_dtype,
    _from_f32,
    _from_f64,
    _is_bool,
    _is_float,
    _is_int,
    _require_float,
    _widen,
    broadcast_shape,
)
from tileir.backends.numpy.semantics.scalars import _operands, _scalar_to_dtype

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


def _sign_op(name: str, x: np.ndarray, on_ints: ArrayFn) -> np.ndarray:
    """`neg` / `abs`: floats by their sign bit (exact), integers by `on_ints` (wrapping)."""
    _check_dtype(name, x.dtype)
    if _is_float(x.dtype):
        return _flip_sign_bits(x, name)
    if not _is_int(x.dtype):
        raise SemanticsError(f"{name}: not defined on {x.dtype}")
    with np.errstate(over="ignore"):
        return on_ints(x)


def neg(x: np.ndarray) -> np.ndarray:
    """`pypto.neg`: -x. Exact for floats (sign flip); integers wrap (-INT_MIN = INT_MIN)."""
    return _sign_op("neg", x, np.negative)


def abs(x: np.ndarray) -> np.ndarray:
    """`pypto.abs`: |x|. Exact for floats (sign cleared); integers wrap (|INT_MIN| = INT_MIN)."""
    return _sign_op("abs", x, np.abs)


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


def clone(x: np.ndarray) -> np.ndarray:
    """`pypto.clone(x)`: a copy with x's shape, dtype and bits."""
    return np.array(x, copy=True)


def _silu64(w: np.ndarray) -> np.ndarray:
    e = np.exp(np.negative(w))
    np.add(e, 1.0, out=e)
    return np.divide(w, e, out=w)


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
