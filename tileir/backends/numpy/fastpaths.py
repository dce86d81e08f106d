"""Shortcuts that give exactly the bits of a `semantics` function, only faster.

`semantics` is written to be obviously right: its `cast` rounds through exact integer
arithmetic on the significand (tens of numpy passes), and its float32 arithmetic
converts every operand with `astype` first (a copy even when it already is float32).
On the conversions and dtypes below numpy's own routines are already exact, so the
back end calls them directly and falls back to `semantics` for everything else:

- exact widening float casts (bf16 / f16 / fp8 -> f32): every value is representable;
- f32 -> bf16 / f16 with round-to-nearest-even and no saturation (what `CAST_NONE` and
  `CAST_RINT` mean there): `ml_dtypes` and numpy round to nearest even, overflow to
  infinity and round subnormals the IEEE way, as `semantics.round_to_dtype` does;
- `index` / `i64` `addi subi muli maxsi minsi` on Python ints that do not wrap: the
  Python operation (`arith_semantics` reads, wraps and canonicalises every operand);
- float32 `+ - * /`, `maximum`, `minimum` and comparisons on float32 operands: the ufunc
  on the arrays themselves (a float32 scalar is the RNE rounding of the double);
- `view` of a window that is fully valid and inside its source: a plain copy, or no copy
  at all of memory that nothing writes (read-only kernel inputs); `assemble`
  of a fully valid tile inside its destination: a plain slice assignment;
- float32 transcendentals (`exp`, `log`, `sqrt`, `rsqrt`, `reciprocal`, `tanh`,
  `sigmoid`, `erf`) and reductions (`sum`, `amax`, `amin`): the semantics' own float64
  formulas (`semantics.FLOAT64_FORMULAS` / `FLOAT64_REDUCTIONS`), without its per-call
  checks (they cost more than the work on small tiles);
- float32 arithmetic and transcendentals at the last use of an operand that nothing
  else can see (`spare`): the result goes into that operand's buffer, as numpy reuses
  temporaries, with the same ufunc and the same rounding;
- 2-D float matmul without bias: the same float64 product, but the float64 copy of an
  operand is made once per tile object, so a loop-invariant weight tile is widened once
  instead of once per iteration.

Like numpy, the shortcuts leave floating-point warnings (overflow to infinity, NaN
conversions) to the caller: the interpreter runs with them off, because IEEE results are
the meaning there, and entering `np.errstate` costs more than a small tile's work.
NaN lanes are handed to `semantics` (which returns a canonical NaN where numpy would
keep the payload), so even NaN bits agree. The tests compare each shortcut with the
semantics function over every 16-bit pattern and over edge-case sets of float32.
"""

from __future__ import annotations

import functools
import operator
import sys
import weakref
from collections.abc import Callable, Sequence
from math import isnan
from typing import Any

import ml_dtypes
import numpy as np

from tileir.backends.numpy import arith_semantics, semantics

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
_F32_MAX = float(np.finfo(np.float32).max)

_WIDENS_TO_F32 = {
    BF16,
    F16,
    np.dtype(ml_dtypes.float8_e4m3fn),
    np.dtype(ml_dtypes.float8_e5m2),
}


def cast(x: np.ndarray, dtype: np.dtype, mode: str = "none", satmode: bool = False) -> np.ndarray:
    """`semantics.cast`, with numpy's conversion where it is provably the same."""
    dst = np.dtype(dtype)
    route = _cast_route(x.dtype, dst, mode, satmode)
    if route == "widen":
        out = x.astype(F32)
        return _patch_nan(out, out, x, dst, mode, satmode)
    if route == "narrow":
        out = x.astype(dst)
        return _patch_nan(out, x, x, dst, mode, satmode)
    return semantics.cast(x, dst, mode, satmode)


def caster(
    src: np.dtype, dst: np.dtype, mode: str = "none", satmode: bool = False
) -> Callable[[np.ndarray], np.ndarray]:
    """`cast(x, dst, mode, satmode)` for arrays of dtype `src`, with the route chosen
    once (the interpreter knows both dtypes when it lowers a `pto.cast`)."""
    src, dst = np.dtype(src), np.dtype(dst)
    route = _cast_route(src, dst, mode, satmode)
    if route == "widen":

        def widen(x: np.ndarray) -> np.ndarray:
            if x.dtype != src:
                return cast(x, dst, mode, satmode)
            out = x.astype(F32)
            if out.size and isnan(_max(out, None)):
                return _patch_nan(out, out, x, dst, mode, satmode)
            return out

        return widen
    if route == "narrow":

        def narrow(x: np.ndarray) -> np.ndarray:
            if x.dtype != src:
                return cast(x, dst, mode, satmode)
            out = x.astype(dst)
            if x.size and isnan(_max(x, None)):
                return _patch_nan(out, x, x, dst, mode, satmode)
            return out

        return narrow
    return lambda x: semantics.cast(x, dst, mode, satmode)


@functools.cache
def _cast_route(src: np.dtype, dst: np.dtype, mode: str, satmode: bool) -> str:
    """Which conversion is numpy's own: an exact widening to float32, a float32 ->
    bf16 / f16 round to nearest even without saturation, or neither ("semantics")."""
    if dst == F32 and src in _WIDENS_TO_F32:
        return "widen"
    if (
        src == F32
        and dst in (BF16, F16)
        and not satmode
        and semantics.resolve_cast_mode(src, dst, mode) == "rint"
    ):
        return "narrow"
    return "semantics"


_max, _min, _abs = np.maximum.reduce, np.minimum.reduce, np.abs
"""The ufuncs themselves: `arr.max()` / `arr.min()` add a Python wrapper per call. (A
reduction's one float is tested with `math.isnan`: `np.isnan` of a scalar costs ~8x.)"""


def _patch_nan(
    out: np.ndarray, probe: np.ndarray, x: np.ndarray, dst: np.dtype, mode: str, satmode: bool
) -> np.ndarray:
    """Give NaN lanes (found in the float32 array `probe`) the semantics' bits. `max`
    propagates NaN, so one read-only pass tells whether there is any."""
    if probe.size and isnan(_max(probe, None)):
        nan = np.isnan(probe)
        out[nan] = semantics.cast(x[nan], dst, mode, satmode)
    return out


_F32_UFUNCS: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


_ARITHMETIC = frozenset({"add", "sub", "mul", "div", "maximum", "minimum"})
"""The ufuncs above whose result is float32 again (the others give bool)."""


def binary(name: str) -> Callable[..., np.ndarray]:
    """`semantics.<name>`, computed by the ufunc itself on float32 operands. `spare`
    (see `spare`: one of the operands, which the caller will not read again) is where
    an arithmetic result of its shape is written, instead of a new array."""
    slow: Callable[[Any, Any], np.ndarray] = getattr(semantics, name)
    ufunc = _F32_UFUNCS.get(name)
    if ufunc is None:
        return lambda x, y, spare=None: slow(x, y)
    into = name in _ARITHMETIC

    def fn(x: Any, y: Any, spare: np.ndarray | None = None) -> np.ndarray:
        # `type(..) is ndarray` and `dtype is F32` (numpy's float32 dtype is one object):
        # anything else, a subclass or a byte-swapped float32 too, takes the general route.
        if type(x) is np.ndarray and x.dtype is F32:
            if type(y) is np.ndarray:
                if y.dtype is F32:
                    if into and spare is not None and _fits(spare, x.shape, y.shape):
                        _forget(spare)
                        return ufunc(x, y, out=spare)
                    return ufunc(x, y)
            elif _plain_f32_scalar(y):
                if into and spare is not None:
                    _forget(spare)
                    return ufunc(x, np.float32(y), out=spare)
                return ufunc(x, np.float32(y))
        elif type(y) is np.ndarray and y.dtype is F32 and _plain_f32_scalar(x):
            if into and spare is not None:
                _forget(spare)
                return ufunc(np.float32(x), y, out=spare)
            return ufunc(np.float32(x), y)
        return slow(x, y)

    return fn


def _fits(out: np.ndarray, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether `out`, which has shape `a` or `b`, has the broadcast shape of both: the
    same rank, and every size of either is 1 or `out`'s (without numpy's slower
    `broadcast_shapes`, on the path of every small op)."""
    if a == b:
        return True
    shape = out.shape
    if len(a) != len(shape) or len(b) != len(shape):
        return False
    for p, q, o in zip(a, b, shape):
        if (p != o and p != 1) or (q != o and q != 1):
            return False
    return True


def _refs(arr: np.ndarray) -> int:
    return sys.getrefcount(arr)


def _own_refs() -> int:
    """What `sys.getrefcount` sees in `spare` beyond the caller's references (its own
    argument and the call's), measured once; -1 (never spare) if the count does not
    grow by one per reference, as it does in the CPython versions tileir runs on."""
    probe = [np.empty(1)]
    alone = _refs(probe[0]) - 1
    return alone if _refs(probe[0]) == alone + 1 else -1


_OWN_REFS = _own_refs()


def spare(arr: Any, held: int = 1) -> np.ndarray | None:
    """`arr` if the caller's `held` references (local variables) are the only ones to it
    and it owns its memory, else None.

    Then no tile, view, memref or input can see the array, so an op at the last use of
    that operand may write its result into it: the way numpy reuses the temporary of
    `a * b` in `a * b + c`, and why hand-written numpy allocates (and touches fresh
    pages for) fewer arrays than a plan holding every tile in its environment. The
    caller must drop its environment's reference first.
    """
    if (
        type(arr) is np.ndarray
        and arr.base is None
        and arr.flags.writeable
        and sys.getrefcount(arr) == held + _OWN_REFS
    ):
        return arr
    return None


def _forget(arr: np.ndarray) -> None:
    """Drop the float64 copy `_widened` remembers of `arr`, which is about to change."""
    if _WIDE:
        _WIDE.pop(id(arr), None)


def _plain_f32_scalar(v: Any) -> bool:
    return type(v) is float and abs(v) <= _F32_MAX


_INT64_BINARY: dict[str, Callable[[int, int], int]] = {
    "addi": operator.add,
    "subi": operator.sub,
    "muli": operator.mul,
    "maxsi": max,
    "minsi": min,
}
"""The `arith` ops whose result on in-range signed 64-bit values is the Python result
whenever that is in range too (no wrap happened)."""
_I64_MIN, _I64_END = -(1 << 63), 1 << 63


def int_binary(
    name: str, width: int, flags: frozenset[str] = frozenset()
) -> Callable[[Any, Any], Any]:
    """`arith_semantics.int_binary_elementwise(name, width, a, b, flags)`: on `index` /
    `i64` Python ints without overflow flags, the plain Python operation when neither
    the operands nor the result leave the signed 64-bit range (then there is nothing to
    wrap); everything else (arrays, bools, wrapping, flags) goes to the spec."""

    def slow(a: Any, b: Any) -> Any:
        return arith_semantics.int_binary_elementwise(name, width, a, b, flags)

    op = _INT64_BINARY.get(name)
    if op is None or width != 64 or flags:
        return slow

    def fn(a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:
            v = op(a, b)
            if _I64_MIN <= v < _I64_END and _I64_MIN <= a < _I64_END and _I64_MIN <= b < _I64_END:
                return v
        return slow(a, b)

    return fn


_WIDE: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray]] = {}
_CACHE_MIN_SIZE = 1 << 16


def _widened(x: np.ndarray, keep: bool = True) -> np.ndarray:
    """x as float64, remembered while the tile `x` lives (a tile is written in place
    only as a `spare` buffer, which `_forget`s its copy first) unless not `keep`."""
    if not keep:
        return x.astype(F64)
    key = id(x)
    hit = _WIDE.get(key)
    if hit is not None and hit[0]() is x:
        return hit[1]
    wide = x.astype(F64)
    if x.size >= _CACHE_MIN_SIZE:
        _WIDE[key] = (weakref.ref(x, lambda _: _WIDE.pop(key, None)), wide)
    return wide


_MATMUL_DTYPES = frozenset({BF16, F16, F32})


def matmuler(
    out_dtype: np.dtype,
    a_trans: bool = False,
    b_trans: bool = False,
    keep: tuple[bool, bool] = (True, True),
    has_bias: bool = False,
    **fixpipe: Any,
) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    """`matmul` for one op, its static choices (out dtype, transposes, bias, fixpipe)
    made once when the kernel is lowered: the returned `fn(a, b, bias)` tests only
    what depends on the tiles (a matmul in a loop runs once per iteration, and these
    tests cost as much as the multiply of a small tile)."""
    out = np.dtype(out_dtype)

    def general(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        return semantics.matmul(a, b, out, a_trans, b_trans, bias, **fixpipe)

    if (
        has_bias
        or fixpipe.get("scale") is not None
        or fixpipe.get("relu")
        or fixpipe.get("trans_mode") is not None
    ):
        return general
    ka, kb = (0 if a_trans else 1), (1 if b_trans else 0)
    keep_a, keep_b = keep
    to_f32 = out is F32

    def fn(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        dtype = a.dtype
        if (
            a.ndim == 2
            and b.ndim == 2
            and dtype == b.dtype
            and dtype in _MATMUL_DTYPES
            and (to_f32 or out == dtype)
            and a.shape[ka] == b.shape[kb]
        ):
            am, bm = _widened(a, keep_a), _widened(b, keep_b)
            acc = np.matmul(am.T if a_trans else am, bm.T if b_trans else bm).astype(F32)
            return acc if to_f32 else acc.astype(out)
        return general(a, b, bias)

    return fn


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    out_dtype: np.dtype,
    a_trans: bool = False,
    b_trans: bool = False,
    bias: np.ndarray | None = None,
    keep: tuple[bool, bool] = (True, True),
    **fixpipe: Any,
) -> np.ndarray:
    """`semantics.matmul`, widening each large operand tile to float64 only once. `keep`
    says whether `a` / `b` may be multiplied again (a loop-invariant tile): only then is
    its float64 copy worth remembering. The fixpipe options `scale` / `relu` /
    `trans_mode`, when given, take the general path. (`matmuler` makes the choices once.)"""
    fn = matmuler(out_dtype, a_trans, b_trans, keep, bias is not None, **fixpipe)
    return fn(a, b, bias)


def window(
    offsets: Sequence[int], shape: Sequence[int], within: Sequence[int]
) -> tuple[slice, ...] | None:
    """The region a window of `shape` at `offsets` covers in an array of shape `within`,
    or None when the ranks differ or the window does not lie inside."""
    if len(offsets) != len(within) or len(shape) != len(within):
        return None
    region = []
    for o, n, size in zip(offsets, shape, within):
        if o < 0 or o + n > size:
            return None
        region.append(slice(o, o + n))
    return tuple(region)


def windower(
    shape: Sequence[int], within: Sequence[int]
) -> Callable[[Sequence[int]], tuple[slice, ...] | None]:
    """`window(offsets, shape, within)` for a fixed `shape` and `within`, the bounds
    worked out once (a view in a loop reads a window at new offsets every iteration)."""
    rank = len(within)
    if len(shape) != rank:
        return lambda offsets: None
    if rank == 2:
        (n0, n1), (w0, w1) = shape, within
        h0, h1 = w0 - n0, w1 - n1

        def window2(offsets: Sequence[int]) -> tuple[slice, ...] | None:
            if len(offsets) == 2:
                o0, o1 = offsets
                if 0 <= o0 <= h0 and 0 <= o1 <= h1:
                    return (slice(o0, o0 + n0), slice(o1, o1 + n1))
            return None

        return window2
    return lambda offsets: window(offsets, shape, within)


def read_window(
    src: np.ndarray,
    offsets: tuple[int, ...],
    shape: tuple[int, ...],
    valid_shape: tuple[int, ...] | None = None,
    share: bool = False,
) -> np.ndarray:
    """`semantics.read_window`; a fully valid window inside `src` is a plain copy (no
    zero fill needed), or with `share` (for memory nothing writes while the tile
    lives) the window itself."""
    if valid_shape is None or valid_shape == shape:
        region = window(offsets, shape, src.shape)
        if region is not None:
            w = src[region]
            return w if share else w.copy()
    return semantics.read_window(src, offsets, shape, valid_shape)


def write_window(
    dst: np.ndarray,
    tile: np.ndarray,
    offsets: tuple[int, ...],
    valid_shape: tuple[int, ...] | None = None,
) -> None:
    """`semantics.write_window`; a fully valid tile of the destination's dtype and rank
    inside it is a plain slice assignment."""
    if valid_shape is None and tile.dtype == dst.dtype:
        region = window(offsets, tile.shape, dst.shape)
        if region is not None:
            dst[region] = tile
            return None
    return semantics.write_window(dst, tile, offsets, valid_shape)


def unary(name: str) -> Callable[..., np.ndarray]:
    """`semantics.<name>`; on float32 the semantics' float64 formula, rounded once.
    `spare` (see `spare`) is an operand buffer the result may be written into."""
    slow: Callable[[np.ndarray], np.ndarray] = getattr(semantics, name)
    fn64 = semantics.FLOAT64_FORMULAS.get(name)
    if fn64 is None:
        return lambda x, spare=None: slow(x)

    def fn(x: np.ndarray, spare: np.ndarray | None = None) -> np.ndarray:
        if x.dtype is F32:
            wide = fn64(x.astype(F64))
            if spare is not None and spare.dtype is F32 and spare.shape == wide.shape:
                _forget(spare)
                np.copyto(spare, wide, casting="unsafe")  # the rounding `astype` does
                return spare
            return wide.astype(F32)
        return slow(x)

    return fn


def reduction(name: str) -> Callable[[np.ndarray, int, bool], np.ndarray]:
    """`semantics.<name>(x, dim, keepdim)`; on a non-empty float32 slice, float64
    accumulation rounded once. `amax` / `amin` reduce the float32 values themselves
    (exact either way) unless a result is NaN or zero: a NaN's bits, and which zero
    wins between -0.0 and +0.0, depend on the reduction order, which differs by dtype."""
    slow: Callable[[np.ndarray, int, bool], np.ndarray] = getattr(semantics, name)
    fn64 = semantics.FLOAT64_REDUCTIONS.get(name)
    if fn64 is None:
        return slow
    exact = name != "sum"

    def fn(x: np.ndarray, dim: int, keepdim: bool = False) -> np.ndarray:
        if x.dtype is F32 and x.size and -x.ndim <= dim < x.ndim:
            if exact:
                out = np.asarray(fn64(x, axis=dim, keepdims=keepdim))
                # No zero and no NaN: the smallest magnitude is > 0 (a NaN propagates
                # through `minimum` and compares false).
                if _min(_abs(out), None) > 0:
                    return out
                return slow(x, dim, keepdim)
            return np.asarray(fn64(x.astype(F64), axis=dim, keepdims=keepdim)).astype(F32)
        return slow(x, dim, keepdim)

    return fn
