"""Exhaustive and wide checks of the cast rounding in `semantics.round_to_dtype`.

The implementation rounds with integer arithmetic on the dropped significand bits. The
references here work differently:

- float targets: enumerate every finite value of the destination type, find the two grid
  neighbours of each source value with `searchsorted`, and pick one by the rounding rule
  (ties by the neighbour's last code bit); for nearest-even the result is also checked
  against `ml_dtypes` / numpy conversions, which are independent implementations;
- integer targets: float64 `floor`/`fmod` arithmetic (exact for these values);
- int64 -> float32: Python integers and `Fraction` with `numpy.nextafter` stepping.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import semantics as S

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
MODES = ("rint", "round", "floor", "ceil", "trunc", "odd")
HAS_INF = {BF16: True, F16: True, F32: True, E4M3: False, E5M2: True}


def _uint(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


def quiet():
    """The references widen signalling NaNs and round infinities: numpy flags those."""
    return np.errstate(all="ignore")


def widen(x: np.ndarray, via: np.dtype | None = None) -> np.ndarray:
    """x as float64, optionally after an independent (numpy / ml_dtypes) conversion."""
    with quiet():
        return (x if via is None else x.astype(via)).astype(np.float64)


def all_patterns(dtype: np.dtype) -> np.ndarray:
    n = dtype.itemsize * 8
    return np.arange(2**n, dtype=np.uint64).astype(_uint(dtype)).view(dtype)


@cache
def grid(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, float]:
    """Non-negative finite values of `dtype` ascending, with one phantom value above the
    largest (the next step, where overflow starts), and the parity of each code."""
    n = dtype.itemsize * 8
    codes = np.arange(2 ** (n - 1), dtype=np.uint64)
    with quiet():
        vals = codes.astype(_uint(dtype)).view(dtype).astype(np.float64)
    keep = np.isfinite(vals)
    vals, codes = vals[keep], codes[keep]
    order = np.argsort(vals, kind="stable")
    vals, codes = vals[order], codes[order]
    top = vals[-1]
    phantom = top + (vals[-1] - vals[-2])
    values = np.append(vals, phantom)
    odd = np.append(codes & 1, (codes[-1] + 1) & 1).astype(bool)
    return values, odd, float(top)


def choose(a, lo, hi, lo_odd, neg, mode):
    """Pick lo or hi (magnitudes around a) for one rounding rule; a == lo means exact."""
    exact = a == lo
    mid = (lo + hi) / 2
    if mode == "rint":
        up = (a > mid) | ((a == mid) & lo_odd)
    elif mode == "round":
        up = a >= mid
    elif mode == "floor":
        up = neg
    elif mode == "ceil":
        up = ~neg
    elif mode == "trunc":
        up = np.zeros_like(neg)
    else:  # odd: whichever neighbour has an odd last bit
        up = lo_odd == 0
    return np.where(exact, lo, np.where(up, hi, lo))


def reference_float(v: np.ndarray, dst: np.dtype, mode: str, sat: bool) -> np.ndarray:
    """Expected result (float64 values) of rounding float64 values v to dst."""
    with quiet():
        return _reference_float(v, dst, mode, sat)


def _reference_float(v: np.ndarray, dst: np.dtype, mode: str, sat: bool) -> np.ndarray:
    values, odd, top = grid(dst)
    phantom = values[-1]
    neg = np.signbit(v)
    a = np.abs(v)
    fin = np.isfinite(a)
    af = np.where(fin, a, 0.0)
    i = np.clip(np.searchsorted(values, af, side="right") - 1, 0, len(values) - 2)
    res = choose(af, values[i], values[i + 1], odd[i], neg, mode)
    overflow = (af >= phantom) | (res == phantom)
    big = np.inf if HAS_INF[dst] else np.nan
    if sat:
        over_value = np.full(v.shape, top)
    else:
        if mode in ("rint", "round"):
            to_inf = np.ones(v.shape, bool)
        elif mode == "floor":
            to_inf = neg
        elif mode == "ceil":
            to_inf = ~neg
        else:
            to_inf = np.zeros(v.shape, bool)
        over_value = np.where(to_inf, big, top)
    res = np.where(overflow, over_value, res)
    res = np.where(np.isinf(a), top if sat else big, res)
    res = np.where(np.isnan(a), np.nan, res)
    return np.where(neg, -res, res)


def assert_same_floats(got: np.ndarray, want64: np.ndarray, dst: np.dtype, src=None) -> None:
    assert got.dtype == dst
    with quiet():
        nan_got = np.isnan(got.astype(np.float64))
        w = want64.astype(dst).view(_uint(dst))
    nan_want = np.isnan(want64)
    bad = nan_got != nan_want
    g = got.view(_uint(dst))
    bad |= ~nan_want & (g != w)
    if bad.any():
        k = np.flatnonzero(bad.ravel())[:5]
        where = "" if src is None else f" source {src.ravel()[k]}"
        raise AssertionError(
            f"{bad.sum()} mismatches;{where} got {got.ravel()[k]} want {want64.ravel()[k]}"
        )


def reference_int(v: np.ndarray, dst: np.dtype, mode: str, sat: bool) -> np.ndarray:
    with quiet():
        return _reference_int(v, dst, mode, sat)


def _reference_int(v: np.ndarray, dst: np.dtype, mode: str, sat: bool) -> np.ndarray:
    info = np.iinfo(dst)
    n = info.bits
    neg = np.signbit(v)
    a = np.where(np.isfinite(v), np.abs(v), 0.0)
    fl = np.floor(a)
    frac = a - fl
    fl_odd = np.fmod(fl, 2) == 1
    inexact = frac > 0
    if mode == "trunc":
        mag = fl
    elif mode == "floor":
        mag = fl + (neg & inexact)
    elif mode == "ceil":
        mag = fl + (~neg & inexact)
    elif mode == "round":
        mag = fl + (frac >= 0.5)
    elif mode == "rint":
        mag = fl + ((frac > 0.5) | ((frac == 0.5) & fl_odd))
    else:
        mag = fl + (inexact & ~fl_odd)
    r = np.where(neg, -mag, mag)
    if sat:
        above = r >= (2.0 ** (n - 1) if info.min < 0 else 2.0**n)
        below = r < (-(2.0 ** (n - 1)) if info.min < 0 else 0.0)
        inside = np.where(above | below, 0.0, r).astype(np.int64)
        r = np.where(above, info.max, np.where(below, info.min, inside))
    else:
        # fmod is exact; fold into the signed range, then into [0, 2**n) if unsigned
        w = np.fmod(r, 2.0**n)
        w = np.where(w >= 2.0 ** (n - 1), w - 2.0**n, w)
        w = np.where(w < -(2.0 ** (n - 1)), w + 2.0**n, w)
        if info.min == 0:
            w = np.where(w < 0, w + 2.0**n, w)
        r = w.astype(np.int64)
    r = np.where(np.isposinf(v), info.max, np.where(np.isneginf(v), info.min, r))
    return np.where(np.isnan(v), 0, r).astype(np.int64)


# ------------------------------------------------------------------ 16-bit sources


SIXTEEN_BIT_PAIRS = [
    pytest.param(src, dst, id=f"{a}-{b}")
    for src, a in ((BF16, "bf16"), (F16, "f16"))
    for dst, b in ((BF16, "bf16"), (F16, "f16"), (E4M3, "e4m3"), (E5M2, "e5m2"))
    if src != dst
]


@pytest.mark.parametrize(("src", "dst"), SIXTEEN_BIT_PAIRS)
@pytest.mark.parametrize("sat", [False, True], ids=["nosat", "sat"])
def test_all_16bit_patterns_to_narrower_float(src, dst, sat):
    x = all_patterns(src)
    v = widen(x)
    for mode in MODES:
        got = S.round_to_dtype(x, dst, mode, satmode=sat)
        assert_same_floats(got, reference_float(v, dst, mode, sat), dst, x)


@pytest.mark.parametrize(("src", "dst"), SIXTEEN_BIT_PAIRS)
def test_all_16bit_patterns_nearest_even_matches_ml_dtypes(src, dst):
    x = all_patterns(src)
    assert_same_floats(S.round_to_dtype(x, dst, "rint"), widen(x, dst), dst)


@pytest.mark.parametrize("src", [BF16, F16, E4M3, E5M2], ids=["bf16", "f16", "e4m3", "e5m2"])
def test_widening_to_f32_is_exact_in_every_mode(src):
    x = all_patterns(src)
    want = widen(x)
    for mode in MODES:
        assert_same_floats(S.round_to_dtype(x, F32, mode), want, F32)


@pytest.mark.parametrize("src", [BF16, F16], ids=["bf16", "f16"])
@pytest.mark.parametrize("dst", [np.int8, np.int16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("sat", [False, True], ids=["wrap", "sat"])
def test_all_16bit_patterns_to_int(src, dst, sat):
    dst = np.dtype(dst)
    x = all_patterns(src)
    v = widen(x)
    for mode in MODES:
        got = S.round_to_dtype(x, dst, mode, satmode=sat)
        assert got.dtype == dst
        np.testing.assert_array_equal(got.astype(np.int64), reference_int(v, dst, mode, sat))


@pytest.mark.parametrize("src", [BF16, F16], ids=["bf16", "f16"])
def test_all_16bit_patterns_round_integral(src):
    x = all_patterns(src)
    v = widen(x)
    with quiet():
        half_away = np.copysign(np.floor(np.abs(v) + 0.5), v)
        expected = {
            "floor": np.floor(v),
            "ceil": np.ceil(v),
            "trunc": np.trunc(v),
            "rint": np.rint(v),
            "round": np.where(np.abs(v) >= 2.0**52, v, half_away),
        }
    for mode, want in expected.items():
        assert_same_floats(S.round_integral(x, mode), want, src, x)


# ------------------------------------------------------------------ float32 sources


def f32_edge_cases(dst: np.dtype) -> np.ndarray:
    """Every grid midpoint of dst and its f32 neighbours, plus f32 specials."""
    values, _, _ = grid(dst)
    with quiet():
        mids = ((values[:-1] + values[1:]) / 2).astype(np.float32)
        near = np.concatenate(
            [
                mids,
                np.nextafter(mids, np.float32(np.inf)),
                np.nextafter(mids, np.float32(0)),
                values.astype(np.float32),
            ]
        )
    specials = np.array(
        [0.0, np.inf, np.nan, 3.4028235e38, 1e-45, 1.1754942e-38, 1.1754944e-38, 1e30, 2.0**-150],
        np.float32,
    )
    both = np.concatenate([near, specials])
    return np.concatenate([both, -both])


@pytest.mark.parametrize("dst", [BF16, F16, E4M3, E5M2], ids=["bf16", "f16", "e4m3", "e5m2"])
@pytest.mark.parametrize("sat", [False, True], ids=["nosat", "sat"])
def test_f32_to_narrow_float(dst, sat):
    rng = np.random.default_rng(1234)
    random_bits = rng.integers(0, 2**32, size=60_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([random_bits.view(np.float32), f32_edge_cases(dst)])
    v = widen(x)
    for mode in MODES:
        got = S.round_to_dtype(x, dst, mode, satmode=sat)
        assert_same_floats(got, reference_float(v, dst, mode, sat), dst, x)
    if not sat:
        assert_same_floats(S.round_to_dtype(x, dst, "rint"), widen(x, dst), dst)


@pytest.mark.parametrize("dst", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("sat", [False, True], ids=["wrap", "sat"])
def test_f32_to_int(dst, sat):
    dst = np.dtype(dst)
    rng = np.random.default_rng(7)
    scale = 2.0 ** rng.integers(-4, 40, size=40_000)
    x = (rng.standard_normal(40_000) * scale).astype(np.float32)
    halves = (np.arange(-300, 300) + 0.5).astype(np.float32)
    specials = np.array([np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31), 2.0**62, -0.0], np.float32)
    x = np.concatenate([x, halves, specials])
    v = widen(x)
    for mode in MODES:
        got = S.round_to_dtype(x, dst, mode, satmode=sat)
        np.testing.assert_array_equal(got.astype(np.int64), reference_int(v, dst, mode, sat))


def test_f32_to_int64_wraps_beyond_2_to_63():
    # 2**64 + 2**41 modulo 2**64 is 2**41; -(2**63 + 2**40) wraps to 2**63 - 2**40.
    x = np.array([2.0**64 + 2.0**41, -(2.0**63 + 2.0**40), 2.0**100], np.float32)
    assert [int(v) for v in x.astype(np.float64)] == [2**64 + 2**41, -(2**63 + 2**40), 2**100]
    got = S.round_to_dtype(x, np.dtype(np.int64), "trunc")
    assert [int(g) for g in got] == [2**41, 2**63 - 2**40, 0]
    sat = S.round_to_dtype(x, np.dtype(np.int64), "trunc", satmode=True)
    assert [int(g) for g in sat] == [2**63 - 1, -(2**63), 2**63 - 1]


# ------------------------------------------------------------------ integer sources


def int_edge_values() -> np.ndarray:
    p = [2**k for k in range(31)]
    vals = [0, 1, -1, 2**31 - 1, -(2**31), 65504, 65519, 65520, 65536, 448, 464, 465, 480, 57344]
    vals += [q + d for q in p for d in (-1, 0, 1)]
    vals += [-(q + d) for q in p for d in (-1, 0, 1)]
    return np.array([v for v in vals if -(2**31) <= v < 2**31], np.int64)


@pytest.mark.parametrize("dst", [BF16, F16, E4M3, E5M2], ids=["bf16", "f16", "e4m3", "e5m2"])
@pytest.mark.parametrize("sat", [False, True], ids=["nosat", "sat"])
def test_int32_to_narrow_float(dst, sat):
    rng = np.random.default_rng(99)
    x = np.concatenate(
        [rng.integers(-(2**31), 2**31, size=20_000), rng.integers(-70_000, 70_000, size=20_000)]
    )
    x = np.concatenate([x, int_edge_values()]).astype(np.int32)
    v = widen(x)
    for mode in MODES:
        got = S.round_to_dtype(x, dst, mode, satmode=sat)
        assert_same_floats(got, reference_float(v, dst, mode, sat), dst, x)


def _f32_neighbours(v: int) -> tuple[np.float32, np.float32]:
    c = np.float32(float(v))
    up, down = np.float32(np.inf), np.float32(-np.inf)
    while Fraction(float(c)) > v:
        c = np.nextafter(c, down)
    while Fraction(float(np.nextafter(c, up))) <= v:
        c = np.nextafter(c, up)
    return c, np.nextafter(c, up)


def reference_int_to_f32(v: int, mode: str) -> float:
    lo, hi = _f32_neighbours(abs(v))
    if Fraction(float(lo)) == abs(v):
        mag = float(lo)
    else:
        lo_odd = bool(np.array(lo).view(np.uint32) & 1)
        mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
        a = Fraction(abs(v))
        neg = v < 0
        up = {
            "rint": a > mid or (a == mid and lo_odd),
            "round": a >= mid,
            "floor": neg,
            "ceil": not neg,
            "trunc": False,
            "odd": not lo_odd,
        }[mode]
        mag = float(hi if up else lo)
    return -mag if v < 0 else mag


@pytest.mark.parametrize("src", [np.int32, np.int64])
def test_int_to_f32(src):
    rng = np.random.default_rng(5)
    info = np.iinfo(src)
    vals = [int(v) for v in rng.integers(info.min, info.max, size=300, endpoint=True)]
    vals += [int(v) for v in rng.integers(-(2**30), 2**30, size=200)]
    vals += [info.min, info.max, info.max - 1, 2**24 + 1, 2**24 + 3, -(2**25 + 2), 0, 1, -1]
    vals += [2**k + 2 ** (k - 24) for k in range(25, 63) if 2**k + 2 ** (k - 24) <= info.max]
    vals += [2**k + 2 ** (k - 24) + 1 for k in range(26, 63) if 2**k + 2**k <= info.max]
    x = np.array(vals, dtype=src)
    for mode in MODES:
        got = S.round_to_dtype(x, F32, mode)
        want = np.array([reference_int_to_f32(int(v), mode) for v in x], np.float64)
        assert_same_floats(got, want, F32, x)


def test_int_to_int_wraps_or_saturates():
    x = np.array([300, -300, 127, -128, 2**40, -(2**40) - 5], np.int64)
    wrap = S.round_to_dtype(x, np.dtype(np.int8), "rint")
    assert [int(v) for v in wrap] == [(v + 128) % 256 - 128 for v in x.tolist()]
    sat = S.round_to_dtype(x, np.dtype(np.int8), "rint", satmode=True)
    assert [int(v) for v in sat] == [max(-128, min(127, v)) for v in x.tolist()]


def test_reference_grid_sanity():
    # The reference itself: its largest values and phantoms are the known ones.
    assert grid(BF16)[2] == float(ml_dtypes.finfo(BF16).max)
    assert grid(E4M3)[2] == 448.0 and grid(E4M3)[0][-1] == 480.0
    assert grid(E5M2)[0][-1] == 65536.0 and grid(F16)[0][-1] == 65536.0
    assert math.isclose(
        reference_float(np.array([1.0 + 2**-8]), BF16, "round", False)[0], 1.0078125
    )


@given(
    v=st.floats(width=32, allow_nan=False, allow_infinity=False),
    dst=st.sampled_from([BF16, F16, E4M3, E5M2]),
)
def test_directed_modes_bracket_the_value(v, dst):
    """floor <= v <= ceil with nothing representable in between, and every other mode
    picks one of the two (a property, independent of how either is computed)."""
    x = np.array([v], np.float32)
    lo = widen(S.round_to_dtype(x, dst, "floor", satmode=True))[0]
    hi = widen(S.round_to_dtype(x, dst, "ceil", satmode=True))[0]
    values = grid(dst)[0][:-1]
    top = values[-1]
    a = float(x[0])
    assert lo <= a <= hi or abs(a) > top
    if abs(a) <= top:
        both = np.concatenate([-values[::-1], values])
        assert np.count_nonzero((both > lo) & (both < hi)) == 0
        for mode in ("rint", "round", "trunc", "odd"):
            got = widen(S.round_to_dtype(x, dst, mode))[0]
            assert got in (lo, hi)
        toward_zero = lo if a >= 0 else hi
        assert widen(S.round_to_dtype(x, dst, "trunc"))[0] == toward_zero
