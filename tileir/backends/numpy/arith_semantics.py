"""MLIR's `arith` dialect on scalars, as the numpy back end computes it: the emulator is
the spec.

Every function here is MLIR's meaning of one `arith` op on one scalar (the numpy back
end's rules are thin shims over them, and `tests/backends/test_arith_mlir_oracle.py`
checks them against the real `mlir-opt --canonicalize` folding). The module needs only
Python and numpy, no xDSL, so it can be read, tested and reused on its own.

Values. An integer of width N (`index` is 64 bits wide, as MLIR folds it) is held as
the Python int of its *signed* two's-complement value, in [-2**(N-1), 2**(N-1)); an `i1`
is a Python bool (its signed value is -1 for true, so `cmpi slt, true, false` is true and
`maxsi true, false` is false). Functions accept any Python int (or bool) and read only
its low N bits; they return canonical values. Unsigned ops (`divui`, `cmpi ult`,
`extui`, `uitofp`, ...) read the same bits as an unsigned number. Floats are Python
floats holding a value of their declared type (numpy dtype `dtype`): each op computes in
that type and rounds once.

Undefined behaviour and poison. Where MLIR makes the result poison or the behaviour
undefined, the back end raises `Poison` (the interpreter turns it into a located
error) instead of inventing a value:

- division by zero in `divsi divui remsi remui ceildivsi ceildivui floordivsi`;
- signed division overflow (`MIN / -1`) in `divsi ceildivsi floordivsi` (`remsi MIN,
  -1` is 0: MLIR folds it so);
- a shift amount, read unsigned, of at least the bit width (`shli shrsi shrui`);
- an `overflow<nsw>` / `overflow<nuw>` flag that the exact result violates;
- `fptosi` / `fptoui` of NaN or of a value whose truncation does not fit the type;
- a `fastmath<nnan>` / `fastmath<ninf>` flag that an operand or result violates.

A run that raises has no defined outputs, so no pass can be "wrong" on it (translation
validation skips programs the back end rejects before the pass), while a pass that
introduces such a case into a program that ran is reported. Wrapping is the defined
behaviour of plain `addi` / `subi` / `muli` / `shli` / `trunci` / `index_cast`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

INDEX_WIDTH = 64
"""The width `index` values are computed in (MLIR's constant folding uses 64 bits)."""


class Poison(ArithmeticError):
    """The op's result is poison or its behaviour undefined in MLIR."""

    def __str__(self) -> str:
        return f"undefined behaviour in MLIR (poison): {self.args[0]}"


# --------------------------------------------------------------------------- bit patterns


def signed(v: int, width: int) -> int:
    """The signed value of the low `width` bits of `v`."""
    u = int(v) & ((1 << width) - 1)
    return u - (1 << width) if u >> (width - 1) else u


def unsigned(v: int, width: int) -> int:
    """The unsigned value of the low `width` bits of `v`."""
    return int(v) & ((1 << width) - 1)


def value(v: int, width: int) -> int | bool:
    """The canonical runtime value of the low `width` bits of `v` (a bool for i1)."""
    if width == 1:
        return bool(int(v) & 1)
    return signed(v, width)


# --------------------------------------------------------------------------- integer ops


def _check_divisor(b: int) -> None:
    if b == 0:
        raise Poison("division by zero")


def _check_signed_div(a: int, b: int, width: int) -> None:
    _check_divisor(b)
    if b == -1 and a == -(1 << (width - 1)):
        raise Poison(f"signed division overflow ({a} / -1 does not fit i{width})")


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _divsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _check_signed_div(a, b, w)
    return _trunc_div(a, b)


def _divui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _check_divisor(b)
    return a // b


def _remsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _check_divisor(b)
    return a - b * _trunc_div(a, b)


def _remui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _check_divisor(b)
    return a % b


def _floordivsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _check_signed_div(a, b, w)
    return a // b


def _ceildivsi(a: int, b: int, w: int) -> int:
    a, b = signed(a, w), signed(b, w)
    _check_signed_div(a, b, w)
    return -(-a // b)


def _ceildivui(a: int, b: int, w: int) -> int:
    a, b = unsigned(a, w), unsigned(b, w)
    _check_divisor(b)
    return -(-a // b)


def _shift_amount(b: int, w: int) -> int:
    n = unsigned(b, w)
    if n >= w:
        raise Poison(f"shift amount {n} is not less than the bit width {w}")
    return n


def _shli(a: int, b: int, w: int) -> int:
    return signed(a, w) << _shift_amount(b, w)


def _shrsi(a: int, b: int, w: int) -> int:
    return signed(a, w) >> _shift_amount(b, w)


def _shrui(a: int, b: int, w: int) -> int:
    return unsigned(a, w) >> _shift_amount(b, w)


def _signed_op(fn: Callable[[int, int], int]) -> Callable[[int, int, int], int]:
    return lambda a, b, w: fn(signed(a, w), signed(b, w))


def _unsigned_op(fn: Callable[[int, int], int]) -> Callable[[int, int, int], int]:
    return lambda a, b, w: fn(unsigned(a, w), unsigned(b, w))


INT_BINARY: dict[str, Callable[[int, int, int], int]] = {
    "addi": _signed_op(lambda a, b: a + b),
    "subi": _signed_op(lambda a, b: a - b),
    "muli": _signed_op(lambda a, b: a * b),
    "divsi": _divsi,
    "divui": _divui,
    "remsi": _remsi,
    "remui": _remui,
    "floordivsi": _floordivsi,
    "ceildivsi": _ceildivsi,
    "ceildivui": _ceildivui,
    "andi": _unsigned_op(lambda a, b: a & b),
    "ori": _unsigned_op(lambda a, b: a | b),
    "xori": _unsigned_op(lambda a, b: a ^ b),
    "shli": _shli,
    "shrsi": _shrsi,
    "shrui": _shrui,
    "maxsi": _signed_op(max),
    "minsi": _signed_op(min),
    "maxui": _unsigned_op(max),
    "minui": _unsigned_op(min),
}
"""op name (without `arith.`) -> the exact result of the op on width-w operands, before
wrapping to w bits."""

_EXACT: dict[str, tuple[Callable[[int, int], int], Callable[[int, int], int]]] = {
    "addi": (lambda a, b: a + b, lambda a, b: a + b),
    "subi": (lambda a, b: a - b, lambda a, b: a - b),
    "muli": (lambda a, b: a * b, lambda a, b: a * b),
    "shli": (lambda a, b: a << b, lambda a, b: a << b),
}
"""The ops that take overflow flags: (signed exact result, unsigned exact result)."""


def int_binary(name: str, width: int, a: int, b: int, flags: frozenset[str] = frozenset()) -> Any:
    """`arith.<name> a, b : i<width>` (flags: a subset of {"nsw", "nuw"})."""
    exact = INT_BINARY[name](a, b, width)
    if flags:
        signed_fn, unsigned_fn = _EXACT[name]
        if name == "shli":  # the flags speak of the shifted-out bits
            n = _shift_amount(b, width)
            sa, ua, sb, ub = signed(a, width), unsigned(a, width), n, n
        else:
            sa, ua, sb, ub = (
                signed(a, width),
                unsigned(a, width),
                signed(b, width),
                unsigned(b, width),
            )
        if "nsw" in flags and signed(signed_fn(sa, sb), width) != signed_fn(sa, sb):
            raise Poison(f"'{name}' with overflow<nsw> overflows i{width} (signed)")
        if "nuw" in flags and unsigned(unsigned_fn(ua, ub), width) != unsigned_fn(ua, ub):
            raise Poison(f"'{name}' with overflow<nuw> overflows i{width} (unsigned)")
    return value(exact, width)


CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""In the order of MLIR's `arith::CmpIPredicate` values."""

_ORDER: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def cmpi(predicate: str, width: int, a: int, b: int) -> bool:
    """`arith.cmpi <predicate>, a, b : i<width>`."""
    read = unsigned if predicate[0] == "u" else signed
    return _ORDER[predicate.lstrip("su")](read(a, width), read(b, width))


def extsi(a: int, width: int, to: int) -> Any:
    """`arith.extsi` (and `index_cast` from a narrower type): sign extension."""
    return value(signed(a, width), to)


def extui(a: int, width: int, to: int) -> Any:
    """`arith.extui` (and `index_castui` from a narrower type): zero extension."""
    return value(unsigned(a, width), to)


def trunci(a: int, width: int, to: int) -> Any:
    """`arith.trunci`: keep the low `to` bits."""
    return value(a, to)


def index_cast(a: int, width: int, to: int) -> Any:
    """`arith.index_cast` between `index` and `i<n>`: sign-extends or truncates."""
    return extsi(a, width, to) if to > width else trunci(a, width, to)


def index_castui(a: int, width: int, to: int) -> Any:
    """`arith.index_castui`: zero-extends or truncates."""
    return extui(a, width, to) if to > width else trunci(a, width, to)


def addui_extended(width: int, a: int, b: int) -> tuple[Any, bool]:
    """`arith.addui_extended`: the wrapped sum and whether the unsigned add carried."""
    s = unsigned(a, width) + unsigned(b, width)
    return value(s, width), s >> width != 0


def mului_extended(width: int, a: int, b: int) -> tuple[Any, Any]:
    """`arith.mului_extended`: low and high halves of the unsigned 2w-bit product."""
    p = unsigned(a, width) * unsigned(b, width)
    return value(p, width), value(p >> width, width)


def mulsi_extended(width: int, a: int, b: int) -> tuple[Any, Any]:
    """`arith.mulsi_extended`: low and high halves of the signed 2w-bit product."""
    p = signed(a, width) * signed(b, width)
    return value(p, width), value(p >> width, width)


def select(cond: Any, a: Any, b: Any) -> Any:
    """`arith.select cond, a, b` on scalars."""
    return a if cond else b


# --------------------------------------------------------------------------- floats


def _round(x: Any, dtype: np.dtype) -> float:
    """x (a float or numpy scalar) rounded once to `dtype`, as a Python float."""
    with np.errstate(over="ignore"):  # overflow rounds to an infinity
        return float(np.asarray(x, dtype=np.float64).astype(dtype))


def _max_zero_aware(a: float, b: float) -> float:
    """max that orders -0.0 below +0.0 (MLIR's maximumf / maxnumf)."""
    if a == b == 0.0:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def _min_zero_aware(a: float, b: float) -> float:
    if a == b == 0.0:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def _nan_propagating(fn: Callable[[float, float], float]) -> Callable[[float, float], float]:
    return lambda a, b: math.nan if math.isnan(a) or math.isnan(b) else fn(a, b)


def _nan_ignoring(fn: Callable[[float, float], float]) -> Callable[[float, float], float]:
    def run(a: float, b: float) -> float:
        if math.isnan(a):
            return b
        if math.isnan(b):
            return a
        return fn(a, b)

    return run


_IEEE: dict[str, Callable[[Any, Any], Any]] = {
    "addf": lambda a, b: a + b,
    "subf": lambda a, b: a - b,
    "mulf": lambda a, b: a * b,
    "divf": lambda a, b: a / b,
}
_MINMAX: dict[str, Callable[[float, float], float]] = {
    "maximumf": _nan_propagating(_max_zero_aware),
    "minimumf": _nan_propagating(_min_zero_aware),
    "maxnumf": _nan_ignoring(_max_zero_aware),
    "minnumf": _nan_ignoring(_min_zero_aware),
}
FLOAT_BINARY = (*_IEEE, *_MINMAX)


def _check_fastmath(name: str, flags: frozenset[str], *values: float) -> None:
    if "nnan" in flags and any(math.isnan(v) for v in values):
        raise Poison(f"'{name}' with fastmath<nnan> sees a NaN")
    if "ninf" in flags and any(math.isinf(v) for v in values):
        raise Poison(f"'{name}' with fastmath<ninf> sees an infinity")


def float_binary(
    name: str, dtype: np.dtype, a: float, b: float, flags: frozenset[str] = frozenset()
) -> float:
    """`arith.<name> a, b` on floats of `dtype`: IEEE, computed in `dtype`, rounded once."""
    _check_fastmath(name, flags, a, b)
    if name in _MINMAX:
        r = _MINMAX[name](float(a), float(b))
    else:
        t = np.dtype(dtype).type
        with np.errstate(all="ignore"):
            r = float(t(_IEEE[name](t(a), t(b))))
    _check_fastmath(name, flags, r)
    return r


def negf(a: float) -> float:
    """`arith.negf`: flips the sign bit (of zeros and NaNs too)."""
    return -float(a)


CMPF_PREDICATES = (
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
)
"""In the order of MLIR's `arith::CmpFPredicate` values."""


def cmpf(predicate: str, a: float, b: float, flags: frozenset[str] = frozenset()) -> bool:
    """`arith.cmpf <predicate>, a, b`: `o*` is false and `u*` true when either is NaN."""
    _check_fastmath("cmpf", flags, a, b)
    if predicate in ("false", "true"):
        return predicate == "true"
    unordered = math.isnan(a) or math.isnan(b)
    if predicate == "ord":
        return not unordered
    if predicate == "uno":
        return unordered
    if unordered:
        return predicate[0] == "u"
    rel = {"eq": "eq", "ne": "ne", "gt": "gt", "ge": "ge", "lt": "lt", "le": "le"}[predicate[1:]]
    return _ORDER[rel](a, b)


def _int_to_float(n: int, dtype: np.dtype) -> float:
    """The integer `n` rounded once (to nearest, ties to even) to `dtype`."""
    dt = np.dtype(dtype)
    bits = _finfo(dt).nmant + 1
    mag = abs(n)
    extra = mag.bit_length() - bits
    if extra > 0:  # keep `bits` significant bits, round half to even
        q, r = divmod(mag, 1 << extra)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        mag = q << extra
    try:
        exact = float(mag if n >= 0 else -mag)
    except OverflowError:
        exact = math.inf if n >= 0 else -math.inf
    return _round(exact, dt)


def _finfo(dt: np.dtype) -> Any:
    if dt.kind == "f":
        return np.finfo(dt)
    import ml_dtypes

    return ml_dtypes.finfo(dt)


def sitofp(a: int, width: int, dtype: np.dtype) -> float:
    """`arith.sitofp`: the signed value, rounded to `dtype`."""
    return _int_to_float(signed(a, width), dtype)


def uitofp(a: int, width: int, dtype: np.dtype) -> float:
    """`arith.uitofp`: the unsigned value, rounded to `dtype`."""
    return _int_to_float(unsigned(a, width), dtype)


def fptosi(x: float, width: int) -> Any:
    """`arith.fptosi`: truncation toward zero; poison when it does not fit i<width>."""
    if math.isnan(x) or math.isinf(x):
        raise Poison(f"fptosi of {x} to i{width}")
    t = math.trunc(x)
    if not -(1 << (width - 1)) <= t < (1 << (width - 1)):
        raise Poison(f"fptosi: {x} does not fit i{width}")
    return value(t, width)


def fptoui(x: float, width: int) -> Any:
    """`arith.fptoui`: truncation toward zero; poison when it does not fit u<width>."""
    if math.isnan(x) or math.isinf(x):
        raise Poison(f"fptoui of {x} to i{width}")
    t = math.trunc(x)
    if not 0 <= t < (1 << width):
        raise Poison(f"fptoui: {x} does not fit unsigned i{width}")
    return value(t, width)


def extf(x: float, dtype: np.dtype) -> float:
    """`arith.extf`: exact."""
    return _round(x, dtype)


def truncf(x: float, dtype: np.dtype) -> float:
    """`arith.truncf`: rounded once to nearest, ties to even."""
    return _round(x, dtype)


def bitcast(x: Any, source: np.dtype | int, target: np.dtype | int) -> Any:
    """`arith.bitcast` between types of one bit width: an int width or a float dtype
    on each side."""
    if isinstance(source, int):
        bits = unsigned(x, source)
        width = source
    else:
        dt = np.dtype(source)
        width = dt.itemsize * 8
        bits = int(np.asarray(x, dtype=np.float64).astype(dt).view(f"u{dt.itemsize}"))
    if isinstance(target, int):
        return value(bits, target)
    dt = np.dtype(target)
    assert dt.itemsize * 8 == width
    return float(np.asarray(bits, dtype=f"u{dt.itemsize}").view(dt))


# --------------------------------------------------------------------------- arrays


_NUMPY_INT64: dict[str, Callable[[Any, Any], Any]] = {
    "addi": np.add,
    "subi": np.subtract,
    "muli": np.multiply,
    "andi": np.bitwise_and,
    "ori": np.bitwise_or,
    "xori": np.bitwise_xor,
    "maxsi": np.maximum,
    "minsi": np.minimum,
}
"""Ops whose numpy int64 form is exactly the width-64 op (numpy arrays wrap)."""


def elementwise(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn` (a scalar function above) applied to each element of numpy array arguments
    (the back end's batched loops hold one index value per iteration); scalars pass
    straight through. Results are int64 (bool for i1) arrays."""
    if not any(isinstance(a, np.ndarray) for a in args):
        return fn(*args)
    out = np.frompyfunc(fn, len(args), 1)(*args)
    if isinstance(out, tuple):
        return tuple(_typed(o) for o in out)
    return _typed(out)


def _typed(out: Any) -> Any:
    if not isinstance(out, np.ndarray):
        return out
    if out.size and isinstance(out.flat[0], bool):
        return out.astype(bool)
    return out.astype(np.int64)


def int_binary_elementwise(
    name: str, width: int, a: Any, b: Any, flags: frozenset[str] = frozenset()
) -> Any:
    """`int_binary` on scalars or arrays (one value per batched iteration)."""
    if width == INDEX_WIDTH and not flags and name in _NUMPY_INT64:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return _NUMPY_INT64[name](np.asarray(a, np.int64), np.asarray(b, np.int64))
    return elementwise(lambda x, y: int_binary(name, width, x, y, flags), a, b)


_NUMPY_INT64_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "slt": np.less,
    "sle": np.less_equal,
    "sgt": np.greater,
    "sge": np.greater_equal,
}


def cmpi_elementwise(predicate: str, width: int, a: Any, b: Any) -> Any:
    """`cmpi` on scalars or arrays (one value per batched iteration)."""
    if width == INDEX_WIDTH and predicate in _NUMPY_INT64_CMP:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return _NUMPY_INT64_CMP[predicate](np.asarray(a, np.int64), np.asarray(b, np.int64))
    return elementwise(lambda x, y: cmpi(predicate, width, x, y), a, b)
