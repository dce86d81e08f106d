"""The back end's shortcuts give exactly the bits of the semantics functions.

Each shortcut is compared with `semantics` and with an independent reference (integer
bit arithmetic, or a different numpy conversion path): exhaustively over every 16-bit
and 8-bit source pattern, and over every float32 rounding class for the narrowing casts.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tileir.backends.numpy import fastpaths, semantics

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    diff = np.nonzero(bits(a) != bits(b))[0]
    assert diff.size == 0, (
        f"{diff.size} differ, first at {diff[0]}: {a[diff[0]]!r} vs {b[diff[0]]!r}"
    )


@pytest.mark.parametrize(
    "dtype",
    [BF16, F16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)],
)
@pytest.mark.parametrize("mode", ["none", "rint", "floor"])
def test_widening_to_f32_every_pattern(dtype, mode):
    n = 1 << (8 * dtype.itemsize)
    x = np.arange(n, dtype=np.dtype(f"u{dtype.itemsize}")).view(dtype)
    got = fastpaths.cast(x, F32, mode)
    same_bits(got, semantics.cast(x, F32, mode))
    # independent: the value through float64 (exact), except NaN whose bits the
    # semantics define (checked above)
    finite = ~np.isnan(got)
    with np.errstate(invalid="ignore"):
        same_bits(got[finite], x.astype(F64).astype(F32)[finite])
    if dtype == BF16:
        expected = (bits(x).astype(np.uint32) << 16).view(F32)
        same_bits(got[finite], expected[finite])


def f32_rounding_classes() -> np.ndarray:
    """Every sign / exponent / upper-mantissa pattern of bf16, with the low 16 bits at
    each rounding boundary (0, 1, just below / at / above the half, all ones) and a few
    random ones: every case round-to-nearest-even distinguishes."""
    upper = np.arange(1 << 16, dtype=np.uint32) << 16
    rng = np.random.default_rng(0)
    lows = [0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, *rng.integers(0, 1 << 16, 4)]
    return np.concatenate([upper | np.uint32(low) for low in lows]).view(F32)


@pytest.mark.parametrize("mode", ["none", "rint"])
def test_f32_to_bf16_rne(mode):
    x = f32_rounding_classes()
    with np.errstate(over="ignore", invalid="ignore"):  # the caller's business (module doc)
        got = fastpaths.cast(x, BF16, mode)
    same_bits(got, semantics.cast(x, BF16, mode))
    u = bits(x)
    finite = ~np.isnan(x)
    rne = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    same_bits(bits(got)[finite], rne[finite])


def f16_rounding_classes() -> np.ndarray:
    """For every pair of adjacent float16 values: both ends, the midpoint and its
    float32 neighbours (ties, just below, just above), plus beyond the largest finite."""
    h = np.arange(1 << 16, dtype=np.uint16).view(F16)
    v = np.sort(h[np.isfinite(h)].astype(F32))
    v = np.unique(v)
    mid = ((v[:-1].astype(F64) + v[1:].astype(F64)) / 2).astype(F32)
    near = [np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))]
    big = np.array([65504.0, 65519.0, 65520.0, 70000.0, 1e30, np.inf, -np.inf, np.nan], F32)
    return np.concatenate([v, mid, *near, big, -big])


@pytest.mark.parametrize("mode", ["none", "rint"])
def test_f32_to_f16_rne(mode):
    x = f16_rounding_classes()
    with np.errstate(over="ignore", invalid="ignore"):
        got = fastpaths.cast(x, F16, mode)
    same_bits(got, semantics.cast(x, F16, mode))
    finite = ~np.isnan(x)
    with np.errstate(over="ignore"):
        same_bits(got[finite], x.astype(F64).astype(F16)[finite])


@pytest.mark.parametrize(
    "src, dst, mode, sat",
    [
        (BF16, F32, "none", False),
        (F16, F32, "rint", False),
        (np.dtype(ml_dtypes.float8_e4m3fn), F32, "none", False),
        (F32, BF16, "rint", False),
        (F32, BF16, "none", False),
        (F32, F16, "rint", False),
        (F32, F16, "rint", True),
        (F32, BF16, "floor", False),
        (BF16, F16, "none", False),
    ],
)
def test_caster_has_the_bits_of_the_semantics(src, dst, mode, sat):
    """The cast with its route chosen once, for a known source dtype: every 16-bit pattern
    (as bf16 / f16 sources, or the float32 rounding classes), NaN payloads included."""
    if src == F32:
        x = np.concatenate([f32_rounding_classes(), f16_rounding_classes()])
    else:
        n = 1 << (8 * src.itemsize)
        x = np.arange(n, dtype=np.dtype(f"u{src.itemsize}")).view(src)
    with np.errstate(all="ignore"):
        got = fastpaths.caster(src, dst, mode, sat)(x)
        same_bits(got, semantics.cast(x, dst, mode, sat))
        # an operand of another dtype than declared still gets the semantics' answer
        other = x.astype(F64)
        same_bits(
            fastpaths.caster(src, dst, mode, sat)(other), semantics.cast(other, dst, mode, sat)
        )
    # without NaN (no patching), the same bits as the conversion through float64 / RNE
    if dst == F32:
        with np.errstate(all="ignore"):
            finite = x[~np.isnan(x)]
            same_bits(fastpaths.caster(src, dst, mode, sat)(finite), finite.astype(F64).astype(F32))


def test_other_casts_use_the_semantics():
    x = f16_rounding_classes()
    for dst, mode, sat in [(F16, "odd", False), (F16, "rint", True), (BF16, "floor", False)]:
        same_bits(fastpaths.cast(x, dst, mode, sat), semantics.cast(x, dst, mode, sat))


SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.5, 1e-45, -1e-40, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, 0.1, 7.0],
    F32,
)


@pytest.mark.parametrize(
    "name", ["add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"]
)
def test_f32_binary_fast_path(name):
    slow = getattr(semantics, name)
    fast = fastpaths.binary(name)
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    with np.errstate(all="ignore"):
        same_bits(fast(a, b), slow(a, b))
        for scalar in (0.1, -0.0, 1e-45, 3.0e38, 1e39, float("inf")):
            same_bits(fast(a, scalar), slow(a, scalar))
            same_bits(fast(scalar, a), slow(scalar, a))


def test_binary_fast_path_leaves_other_dtypes_to_the_semantics():
    a = SPECIAL.astype(BF16)
    same_bits(fastpaths.binary("add")(a, a), semantics.add(a, a))
    same_bits(fastpaths.binary("mul")(a, 3), semantics.mul(a, 3))


@pytest.mark.parametrize(
    "dtype, out", [(BF16, F32), (BF16, BF16), (F16, F32), (F16, F16), (F32, F32)]
)
@pytest.mark.parametrize("a_trans", [False, True])
@pytest.mark.parametrize("b_trans", [False, True])
def test_matmul_fast_path(dtype, out, a_trans, b_trans):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 260)).astype(dtype)  # large enough to be cached
    b = rng.standard_normal((260, 70)).astype(dtype)
    a_in = np.ascontiguousarray(a.T) if a_trans else a
    b_in = np.ascontiguousarray(b.T) if b_trans else b
    expected = semantics.matmul(a_in, b_in, out, a_trans, b_trans)
    for _ in range(2):  # the second call uses the cached float64 copies
        same_bits(fastpaths.matmul(a_in, b_in, out, a_trans, b_trans).ravel(), expected.ravel())
    for keep in [(False, True), (True, False), (False, False)]:
        got = fastpaths.matmul(a_in, b_in, out, a_trans, b_trans, keep=keep)
        same_bits(got.ravel(), expected.ravel())


def test_matmul_fast_path_defers_to_the_semantics():
    a = np.ones((2, 3), F32)
    with pytest.raises(semantics.SemanticsError, match="K differs"):
        fastpaths.matmul(a, a, F32)
    bias = np.ones((1, 3), F32)
    same_bits(
        fastpaths.matmul(a, a.T.copy(), F32, bias=bias[:, :2]).ravel(),
        semantics.matmul(a, a.T.copy(), F32, bias=bias[:, :2]).ravel(),
    )


@pytest.mark.parametrize(
    "offsets, shape, valid",
    [
        ((0, 0), (4, 8), None),
        ((2, 3), (4, 5), (4, 5)),
        ((5, 0), (4, 8), (1, 8)),
        ((1, 1), (2, 2), (0, 2)),
    ],
)
def test_read_window_fast_path(offsets, shape, valid):
    src = np.arange(48, dtype=F32).reshape(6, 8)
    got = fastpaths.read_window(src, offsets, shape, valid)
    same_bits(got.ravel(), semantics.read_window(src, offsets, shape, valid).ravel())
    assert got.base is None or not np.shares_memory(got, src)


@pytest.mark.parametrize(
    "shape, within",
    [
        ((2, 3), (4, 5)),
        ((4, 5), (4, 5)),
        ((5, 1), (4, 5)),
        ((3,), (6,)),
        ((1, 2, 2), (2, 3, 4)),
        ((2,), (2, 2)),
    ],
)
def test_windower_covers_what_the_offsets_name(shape, within):
    """Every offset from just below 0 to just past the end, against the elements a
    window of `shape` at those offsets holds, counted by hand."""
    region_at = fastpaths.windower(shape, within)
    src = np.arange(int(np.prod(within))).reshape(within)
    ranges = [range(-2, w + 2) for w in within] if len(shape) == len(within) else [range(-1, 3)] * 2
    for offsets in np.ndindex(*(len(r) for r in ranges)):
        at = tuple(r[i] for r, i in zip(ranges, offsets))
        inside = len(shape) == len(within) == len(at) and all(
            0 <= o and o + n <= w for o, n, w in zip(at, shape, within)
        )
        region = region_at(at)
        assert (region is not None) == inside, (at, region)
        if inside:
            expected = [
                src[idx]
                for idx in np.ndindex(*within)
                if all(o <= i < o + n for i, o, n in zip(idx, at, shape))
            ]
            assert src[region].ravel().tolist() == expected
    assert region_at((0,) * (len(within) + 1)) is None


def test_read_window_fast_path_reports_out_of_bounds_like_the_semantics():
    src = np.zeros((6, 8), F32)
    with pytest.raises(semantics.SemanticsError, match="outside"):
        fastpaths.read_window(src, (4, 0), (4, 8))


@pytest.mark.parametrize(
    "offsets, shape, valid",
    [
        ((0, 0), (4, 8), None),
        ((2, 3), (4, 5), None),
        ((5, 0), (4, 8), (1, 8)),
        ((1, 1), (2, 2), (0, 2)),
    ],
)
def test_write_window_fast_path(offsets, shape, valid):
    tile = -np.arange(1, 1 + int(np.prod(shape)), dtype=F32).reshape(shape)
    got, want = np.zeros((6, 8), F32), np.zeros((6, 8), F32)
    fastpaths.write_window(got, tile, offsets, valid)
    semantics.write_window(want, tile, offsets, valid)
    same_bits(got.ravel(), want.ravel())


@pytest.mark.parametrize("offsets", [(3, 0), (0, -1)])
def test_write_window_fast_path_reports_errors_like_the_semantics(offsets):
    with pytest.raises(semantics.SemanticsError):
        fastpaths.write_window(np.zeros((6, 8), F32), np.ones((4, 8), F32), offsets)
    with pytest.raises(semantics.SemanticsError, match="dtype"):
        fastpaths.write_window(np.zeros((6, 8), F32), np.ones((4, 8), F64), (0, 0))


VALUES = np.concatenate(
    [
        SPECIAL,
        np.random.default_rng(1).standard_normal(4000).astype(F32) * 30,
        [1e-38, 88.7, 89.0, -104.0],
    ]
).astype(F32)


@pytest.mark.parametrize(
    "name", ["exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "neg", "erf"]
)
def test_unary_fast_path(name):
    with np.errstate(all="ignore"):
        same_bits(fastpaths.unary(name)(VALUES), getattr(semantics, name)(VALUES))
        bf = VALUES.astype(BF16)
        same_bits(fastpaths.unary(name)(bf), getattr(semantics, name)(bf))


@pytest.mark.parametrize("name", ["sum", "amax", "amin"])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False), (-2, True)])
def test_reduction_fast_path(name, dim, keepdim):
    x = np.resize(VALUES, (37, 120))
    y = np.abs(x[:, 5:])  # no NaN / inf in some rows: finite sums too
    for a in (x, y, x.astype(BF16)):
        with np.errstate(all="ignore"):  # inf + -inf in a row is NaN, as it should be
            got = fastpaths.reduction(name)(a, dim, keepdim)
            want = getattr(semantics, name)(a, dim, keepdim)
        same_bits(got.ravel(), want.ravel())


def test_read_window_can_share_a_read_only_source():
    src = np.arange(48, dtype=F32).reshape(6, 8)
    src.flags.writeable = False
    shared = fastpaths.read_window(src, (1, 2), (2, 3), None, share=True)
    assert np.shares_memory(shared, src) and not shared.flags.writeable
    same_bits(shared.ravel(), semantics.read_window(src, (1, 2), (2, 3)).ravel())
    # a tail window still needs its zero fill: a fresh array
    tail = fastpaths.read_window(src, (5, 0), (2, 8), (1, 8), share=True)
    assert not np.shares_memory(tail, src)


I64_EDGES = [
    0,
    1,
    -1,
    2,
    3,
    7,
    -8,
    1 << 31,
    -(1 << 31),
    (1 << 62) + 5,
    -(1 << 62),
    (1 << 63) - 1,
    -(1 << 63),
    (1 << 63) - 2,
    1 << 32,
    123456789,
]


def wrap64(v: int) -> int:
    """Independent reference: two's-complement wrap to 64 bits."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


@pytest.mark.parametrize("name", ["addi", "subi", "muli", "maxsi", "minsi", "divsi", "andi"])
def test_int_binary_fast_path(name):
    from tileir.backends.numpy import arith_semantics

    fast = fastpaths.int_binary(name, 64)
    exact = {
        "addi": lambda a, b: a + b,
        "subi": lambda a, b: a - b,
        "muli": lambda a, b: a * b,
        "maxsi": max,
        "minsi": min,
    }.get(name)
    for a in I64_EDGES:
        for b in I64_EDGES:
            if name == "divsi" and (b == 0 or (a == -(1 << 63) and b == -1)):
                continue
            got = fast(a, b)
            assert type(got) is int
            assert got == arith_semantics.int_binary(name, 64, a, b)
            if exact is not None:
                assert got == wrap64(exact(a, b)), (name, a, b)
    # operands outside the 64-bit range are read by their low bits, as the spec does
    assert fast(1 << 64, 3) == arith_semantics.int_binary(name, 64, 1 << 64, 3)
    # bools (i1 values), other widths, flags and arrays go to the spec
    arr = np.array([1, -(1 << 63), (1 << 63) - 1], np.int64)
    np.testing.assert_array_equal(
        fast(arr, 3), arith_semantics.int_binary_elementwise(name, 64, arr, 3)
    )
    assert fastpaths.int_binary("addi", 32)((1 << 31) - 1, 1) == -(1 << 31)
    with pytest.raises(arith_semantics.Poison):
        fastpaths.int_binary("addi", 64, frozenset({"nsw"}))((1 << 63) - 1, 1)
    with pytest.raises(arith_semantics.Poison):
        fastpaths.int_binary("addi", 64, frozenset({"nuw"}))(-1, 1)
