"""Each semantics function against an independent reference: Python `math` / `fractions`,
torch where torch has the same semantics, numpy written another way, or values printed
in the PyPTO docs. The exhaustive cast checks are in test_cast_exhaustive.py."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import semantics as S
from tileir.backends.numpy.semantics import SemanticsError
from tileir.backends.numpy.semantics.elementwise import _erf64

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
I8, I32, I64 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int64)


# ----------------------------------------------------------------------------- helpers


def to_torch(x: np.ndarray) -> torch.Tensor:
    if x.dtype == BF16:
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x).copy())


def from_torch(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(BF16)
    return t.numpy()


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))


def assert_bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and bits; any NaN matches any NaN."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
        return
    with np.errstate(invalid="ignore"):
        g64, w64 = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g64), np.isnan(w64)
    np.testing.assert_array_equal(nan_g, nan_w)
    bad = ~nan_w & (bits(got) != bits(want))
    if bad.any():
        k = np.flatnonzero(bad.ravel())[:5]
        raise AssertionError(f"{bad.sum()} differ: got {g64.ravel()[k]} want {w64.ravel()[k]}")


def rand(shape, dtype, seed=0, scale=3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def per_element(fn, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Apply a Python float function element by element; float64 -> float32 -> dtype."""
    out = np.array([fn(float(v)) for v in x.astype(np.float64).ravel()], np.float64)
    with np.errstate(over="ignore"):
        return out.astype(np.float32).astype(dtype).reshape(x.shape)


# ----------------------------------------------------------------------------- cast


def test_cast_examples_from_the_pypto_docs():
    x = np.array([300.0, -300.0, 50.0], np.float16)
    assert S.cast(x, I8, satmode=True).tolist() == [127, -128, 50]
    assert S.cast(x, I8, satmode=False).tolist() == [44, -44, 50]
    assert S.cast(np.array([2.0, 3.0], np.float32), F16).tolist() == [2.0, 3.0]


@pytest.mark.parametrize(
    ("src", "dst", "mode", "want"),
    [
        (F32, I32, "none", "trunc"),
        (F16, I8, "none", "trunc"),
        (F32, BF16, "none", "rint"),
        (I32, F32, "none", "rint"),
        (F32, F16, "odd", "odd"),
        (F32, BF16, "odd", "rint"),
        (BF16, F16, "odd", "rint"),
        (F32, I32, "odd", "trunc"),
        (F32, I32, "CAST_FLOOR", "floor"),
        (F32, F32, "ceil", "ceil"),
    ],
)
def test_resolve_cast_mode(src, dst, mode, want):
    assert S.resolve_cast_mode(src, dst, mode) == want


def test_cast_none_is_trunc_for_float_to_int_and_rint_otherwise():
    x = np.array([2.5, -2.5, 3.5, -0.7, 0.7], np.float32)
    assert S.cast(x, I32).tolist() == [math.trunc(v) for v in x.tolist()]
    ints = np.array([2**24 + 1, 2**24 + 3, -(2**24 + 1)], np.int32)
    # 2**24 + 1 is a tie between 2**24 and 2**24 + 2: nearest even picks 2**24.
    assert S.cast(ints, F32).tolist() == [2.0**24, 2.0**24 + 4, -(2.0**24)]


def test_cast_odd_only_for_f32_to_f16():
    # 1 + 2**-12 lies below the midpoint of f16 1.0 and 1 + 2**-10: nearest gives 1.0,
    # odd gives the neighbour whose last bit is 1.
    v = 1.0 + 2.0**-12
    x = np.array([v], np.float32)
    assert S.cast(x, F16, "odd").astype(np.float64)[0] == 1.0 + 2.0**-10  # odd neighbour
    assert S.cast(x, F16, "rint").astype(np.float64)[0] == 1.0
    # f32 -> bf16 has no ODD: PyPTO falls back to the default RINT
    y = np.array([1.0 + 2.0**-9], np.float32)
    assert_bits_equal(S.cast(y, BF16, "odd"), y.astype(BF16))


def test_cast_same_dtype():
    x = np.array([1.5, -1.5, 2.5, np.nan], np.float32)
    same = S.cast(x, F32)
    assert_bits_equal(same, x)
    assert same is not x
    assert_bits_equal(S.cast(x, F32, "floor"), np.floor(x))
    assert_bits_equal(S.cast(x, F32, "trunc"), np.trunc(x))
    assert_bits_equal(S.cast(x, F32, "round"), np.array([2.0, -2.0, 3.0, np.nan], np.float32))
    assert_bits_equal(S.cast(x, F32, "odd"), np.rint(x))  # ODD falls back to RINT
    i = np.array([3, -3], np.int32)
    assert_bits_equal(S.cast(i, I32, "floor"), i)


def test_cast_to_and_from_bool():
    assert S.cast(np.array([0.0, -0.0, 2.5, np.nan], np.float32), np.bool_).tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert S.cast(np.array([True, False]), F32).tolist() == [1.0, 0.0]
    assert S.cast(np.array([True, False]), I8).tolist() == [1, 0]


def test_cast_rejects_unknown_modes_and_types():
    with pytest.raises(SemanticsError, match="mode"):
        S.cast(np.zeros(2, np.float32), F16, "nearest")
    with pytest.raises(SemanticsError, match="not supported"):
        S.cast(np.zeros(2, np.float32), np.dtype(ml_dtypes.float8_e8m0fnu))


def test_cast_ceil_f32_to_bf16_against_fractions():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(200) * 1e3).astype(np.float32)
    got = S.cast(x, BF16, "ceil").astype(np.float64)
    for v, g in zip(x.tolist(), got.tolist()):
        f = Fraction(v)
        # the result is >= v, representable in bf16, and the next bf16 below it is < v
        assert Fraction(g) >= f
        below = np.nextafter(np.array(g, BF16), np.array(-np.inf, BF16)).astype(np.float64)
        assert Fraction(float(below)) < f or Fraction(g) == f


# ----------------------------------------------------------------------------- unary


UNARY_MATH = {
    "exp": lambda v: math.exp(v) if v < 700 else math.inf,
    "log": lambda v: math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan),
    "sqrt": lambda v: math.sqrt(v) if v >= 0 else math.nan,
    "rsqrt": lambda v: 1 / math.sqrt(v) if v > 0 else (math.inf if v == 0 else math.nan),
    "reciprocal": lambda v: 1 / v if v != 0 else math.copysign(math.inf, v),
    "tanh": math.tanh,
    "sigmoid": lambda v: 1 / (1 + math.exp(-v)) if v > -700 else 0.0,
    "erf": math.erf,
}


@pytest.mark.parametrize("name", sorted(UNARY_MATH))
@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
def test_unary_against_python_math(name, dtype):
    x = rand((40, 25), dtype, seed=11, scale=4.0)
    if name in ("log", "sqrt", "rsqrt"):
        x = S.abs(x)
    got = getattr(S, name)(x)
    assert_bits_equal(got, per_element(UNARY_MATH[name], x, dtype))


@pytest.mark.parametrize(
    ("name", "inputs", "outputs"),
    [
        ("exp", [-np.inf, np.inf, 0.0, 100.0], [0.0, np.inf, 1.0, np.inf]),
        ("log", [0.0, -1.0, 1.0, np.inf], [-np.inf, np.nan, 0.0, np.inf]),
        ("sqrt", [-1.0, -0.0, np.inf], [np.nan, -0.0, np.inf]),
        ("rsqrt", [0.0, 4.0, np.inf], [np.inf, 0.5, 0.0]),
        ("erf", [np.inf, -np.inf, -0.0, np.nan], [1.0, -1.0, -0.0, np.nan]),
        ("sigmoid", [-np.inf, np.inf, 0.0, -200.0], [0.0, 1.0, 0.5, 0.0]),
        ("tanh", [np.inf, -np.inf], [1.0, -1.0]),
        ("reciprocal", [0.0, -0.0, 4.0], [np.inf, -np.inf, 0.25]),
    ],
)
def test_unary_special_values(name, inputs, outputs):
    got = getattr(S, name)(np.array(inputs, np.float32))
    assert_bits_equal(got, np.array(outputs, np.float32))


def test_erf64_matches_math_erf_closely():
    x = np.concatenate([np.linspace(-7, 7, 40001), np.geomspace(1e-12, 6, 2000)])
    got = _erf64(x)
    want = np.array([math.erf(v) for v in x.tolist()])
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    assert rel.max() < 1e-14, (rel.max(), x[rel.argmax()])


def test_neg_and_abs_are_exact_on_every_bf16():
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(BF16)
    with np.errstate(invalid="ignore"):  # signalling-NaN codes flag "invalid" when widened
        v = x.astype(np.float64)
        n = S.neg(x).astype(np.float64)
        a = S.abs(x).astype(np.float64)
    keep = ~np.isnan(v)
    np.testing.assert_array_equal(n[keep], -v[keep])
    np.testing.assert_array_equal(np.signbit(n)[keep], ~np.signbit(v)[keep])
    np.testing.assert_array_equal(a[keep], np.abs(v)[keep])
    assert not np.signbit(a).any()
    assert np.isnan(n[~keep]).all() and np.isnan(a[~keep]).all()


def test_integer_neg_abs_relu_wrap():
    x = np.array([-128, -5, 0, 7, 127], np.int8)
    assert S.neg(x).tolist() == [-128, 5, 0, -7, -127]
    assert S.abs(x).tolist() == [-128, 5, 0, 7, 127]
    assert S.relu(x).tolist() == [0, 0, 0, 7, 127]
    assert S.neg(x).dtype == I8


def test_relu_against_torch():
    x = rand((16, 32), BF16, seed=5)
    assert_bits_equal(S.relu(x), from_torch(torch.relu(to_torch(x))))
    special = S.relu(np.array([np.nan, -0.0, -1.0], np.float32))
    assert np.isnan(special[0]) and special[1:].tolist() == [0.0, 0.0]


def test_transcendental_ops_reject_integers():
    with pytest.raises(SemanticsError, match="exp"):
        S.exp(np.arange(4, dtype=np.int32))


# ----------------------------------------------------------------------------- binary


TORCH_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}


@pytest.mark.parametrize("name", sorted(TORCH_BINARY))
@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
def test_float_binary_against_torch(name, dtype):
    x = rand((8, 33), dtype, seed=1)
    y = rand((8, 33), dtype, seed=2)
    y[0, :3] = 0  # division by zero: +-inf / NaN
    x[1, 0] = np.nan
    want = from_torch(TORCH_BINARY[name](to_torch(x), to_torch(y)))
    assert_bits_equal(getattr(S, name)(x, y), want)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_broadcasting_against_torch(dtype):
    x = rand((4, 1, 8), dtype, seed=3)
    y = rand((3, 1), dtype, seed=4)
    want = from_torch(torch.mul(to_torch(x), to_torch(y)))
    got = S.mul(x, y)
    assert got.shape == (4, 3, 8)
    assert_bits_equal(got, want)


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    drop=st.lists(st.booleans(), min_size=4, max_size=4),
    lead=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_broadcast_shapes_property(shape, drop, lead, seed):
    # y has the trailing dims of x, some set to 1: numpy's rule (tested by hand below)
    other = [1 if d else s for s, d in zip(shape[lead:], drop)]
    x = rand(tuple(shape), F32, seed)
    y = rand(tuple(other), F32, seed + 1)
    got = S.add(x, y)
    assert got.shape == tuple(shape)
    ys = y.reshape((1,) * (len(shape) - len(other)) + tuple(other))
    for idx in np.ndindex(*shape):
        yi = tuple(0 if ys.shape[k] == 1 else i for k, i in enumerate(idx))
        assert got[idx] == np.float32(x[idx] + ys[yi])


def test_broadcast_mismatch_names_the_shapes():
    with pytest.raises(SemanticsError, match=r"add: shapes \[2, 8\] and \[3, 8\]"):
        S.add(np.zeros((2, 8), np.float32), np.zeros((3, 8), np.float32))


def test_scalars_on_either_side():
    x = rand((3, 5), F32, seed=9)
    assert_bits_equal(S.sub(2.0, x), from_torch(2.0 - to_torch(x)))
    assert_bits_equal(S.div(1.0, x), from_torch(1.0 / to_torch(x)))
    assert_bits_equal(S.maximum(0.5, x), from_torch(torch.clamp(to_torch(x), min=0.5)))
    assert_bits_equal(S.add(x, 2), from_torch(to_torch(x) + 2.0))


def test_scalar_is_rounded_to_the_tensor_dtype_first():
    x = rand((4, 4), BF16, seed=6)
    point_one = torch.tensor(0.1, dtype=torch.bfloat16)  # 0.10009765625
    assert_bits_equal(S.mul(x, 0.1), from_torch(to_torch(x) * point_one))
    assert_bits_equal(S.add(x, 0.1), from_torch(to_torch(x) + point_one))


def test_add_and_sub_alpha():
    x = rand((5, 7), F32, seed=1)
    y = rand((5, 7), F32, seed=2)
    # with a tensor y: add(x, mul(y, alpha)), each rounded to float32
    scaled = (y.astype(np.float64) * np.float64(np.float32(0.3))).astype(np.float32)
    want = (x.astype(np.float64) + scaled.astype(np.float64)).astype(np.float32)
    assert_bits_equal(S.add(x, y, alpha=0.3), want)
    want_sub = (x.astype(np.float64) - scaled.astype(np.float64)).astype(np.float32)
    assert_bits_equal(S.sub(x, y, alpha=0.3), want_sub)
    # bf16: alpha and the product are each rounded to bf16, as two bf16 ops in torch
    xb, yb = rand((5, 7), BF16, seed=3), rand((5, 7), BF16, seed=4)
    alpha_b = torch.tensor(0.3, dtype=torch.bfloat16)
    want_b = to_torch(xb) + to_torch(yb) * alpha_b
    assert_bits_equal(S.add(xb, yb, alpha=0.3), from_torch(want_b))
    # with a scalar y the product is taken first: 3 * 2 = 6
    assert_bits_equal(S.add(x, 3.0, alpha=2), (x.astype(np.float64) + 6).astype(np.float32))
    i = np.array([1, 2, 3], np.int32)
    assert S.sub(i, np.array([1, 1, 1], np.int32), alpha=5).tolist() == [-4, -3, -2]


def test_integer_arithmetic_wraps():
    x = np.array([100, -100, 127, -128], np.int8)
    y = np.array([100, -100, 1, -1], np.int8)
    wrap = [((a + b + 128) % 256) - 128 for a, b in zip(x.tolist(), y.tolist())]
    assert S.add(x, y).tolist() == wrap
    wrapm = [((a * b + 128) % 256) - 128 for a, b in zip(x.tolist(), y.tolist())]
    assert S.mul(x, y).tolist() == wrapm
    assert S.add(x, y).dtype == I8


def test_integer_div_truncates_like_torch():
    rng = np.random.default_rng(8)
    a = rng.integers(-1000, 1000, size=500).astype(np.int32)
    b = rng.integers(1, 50, size=500).astype(np.int32) * rng.choice([-1, 1], size=500).astype(
        np.int32
    )
    want = torch.div(torch.from_numpy(a), torch.from_numpy(b), rounding_mode="trunc").numpy()
    got = S.div(a, b)
    assert got.dtype == I32
    np.testing.assert_array_equal(got, want)
    assert S.div(np.array([7, -7], np.int32), 2).tolist() == [3, -3]
    with pytest.raises(SemanticsError, match="division by zero"):
        S.div(a, np.zeros_like(a))


def test_pow():
    x = S.abs(rand((6, 9), F32, seed=2)) + np.float32(0.1)
    y = rand((6, 9), F32, seed=3)
    want = np.array([math.pow(a, b) for a, b in zip(x.ravel().tolist(), y.ravel().tolist())])
    assert_bits_equal(S.pow(x, y), want.astype(np.float32).reshape(x.shape))
    assert_bits_equal(S.pow(np.array([-8.0], np.float32), 1 / 3), np.array([np.nan], np.float32))
    assert S.pow(np.array([3, -2], np.int32), 3).tolist() == [27, -8]
    with pytest.raises(SemanticsError, match="non-negative"):
        S.pow(np.array([3], np.int32), -1)


def test_binary_operand_errors():
    f = np.zeros(3, np.float32)
    with pytest.raises(SemanticsError, match="dtypes differ"):
        S.add(f, np.zeros(3, np.float16))
    with pytest.raises(SemanticsError, match="float scalar"):
        S.add(np.zeros(3, np.int32), 2.5)
    with pytest.raises(SemanticsError, match="does not fit"):
        S.add(np.zeros(3, np.int8), 300)
    with pytest.raises(SemanticsError, match="tensor"):
        S.add(1.0, 2.0)
    with pytest.raises(SemanticsError, match="not defined"):
        S.add(np.zeros(3, bool), np.zeros(3, bool))


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal}
COMPARE |= {"gt": np.greater, "ge": np.greater_equal}
TORCH_COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le}
TORCH_COMPARE |= {"gt": torch.gt, "ge": torch.ge}


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparisons_against_torch(name):
    x = rand((6, 8), BF16, seed=1, scale=1.0).astype(np.float32).round(0).astype(BF16)
    y = rand((6, 1), BF16, seed=2, scale=1.0).astype(np.float32).round(0).astype(BF16)
    x[0, 0] = np.nan
    got = getattr(S, name)(x, y)
    want = TORCH_COMPARE[name](to_torch(x), to_torch(y)).numpy()
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        getattr(S, name)(x, 0.0), TORCH_COMPARE[name](to_torch(x), 0.0).numpy()
    )


def test_where():
    rng = np.random.default_rng(0)
    cond = rng.random((4, 1, 6)) > 0.5
    x = rand((4, 5, 6), BF16, seed=1)
    y = rand((5, 6), BF16, seed=2)
    want = from_torch(torch.where(torch.from_numpy(cond), to_torch(x), to_torch(y)))
    assert_bits_equal(S.where(cond, x, y), want)
    got = S.where(cond, x, 0.1)
    assert got.dtype == BF16
    sel = np.broadcast_to(cond, x.shape)
    assert (got.astype(np.float32)[~sel] == np.float32(np.array(0.1, BF16))).all()
    both = S.where(cond, 1.0, 0.0)
    assert both.dtype == F32 and both.shape == (4, 1, 6)
    np.testing.assert_array_equal(both, cond.astype(np.float32))
    with pytest.raises(SemanticsError, match="bool"):
        S.where(cond.astype(np.int32), x, y)
    with pytest.raises(SemanticsError, match="dtypes differ"):
        S.where(cond, x, y.astype(np.float32))


def test_full():
    got = S.full([2, 3], 0.1, BF16)
    assert got.shape == (2, 3) and got.dtype == BF16
    assert (bits(got) == bits(np.array([0.1], np.float32).astype(BF16))[0]).all()
    assert S.full([4], 7, I32).tolist() == [7, 7, 7, 7]
    assert np.isnan(S.full([1], 1e6, E4M3).astype(np.float32)[0])  # e4m3fn has no inf
    with pytest.raises(SemanticsError, match="float scalar"):
        S.full([2], 1.5, I32)
    with pytest.raises(SemanticsError, match="> 0"):
        S.full([2, 0], 1.0, F32)


# ----------------------------------------------------------------------------- reductions


def fsum_reference(x: np.ndarray, dim: int, keepdim: bool, dtype: np.dtype) -> np.ndarray:
    moved = np.moveaxis(x.astype(np.float64), dim, -1)
    sums = np.array([math.fsum(row) for row in moved.reshape(-1, moved.shape[-1])])
    out = sums.reshape(moved.shape[:-1]).astype(np.float32).astype(dtype)
    return np.expand_dims(out, dim) if keepdim else out


@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
    dtype=st.sampled_from([F32, BF16, F16]),
    keepdim=st.booleans(),
)
def test_sum_against_fsum(shape, data, dtype, keepdim):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = rand(tuple(shape), dtype, seed=len(shape) + shape[0])
    got = S.sum(x, dim, keepdim)
    assert_bits_equal(got, fsum_reference(x, dim % len(shape), keepdim, dtype))


def test_sum_accumulates_beyond_the_input_precision():
    # 1 + 4096 * 2**-12 in bf16 steps would stay 1; an FP32 accumulator reaches 2
    x = np.concatenate([[1.0], np.full(4096, 2.0**-12)]).astype(BF16)[None, :]
    assert S.sum(x, 1).astype(np.float32).tolist() == [2.0]


def test_integer_sum_wraps():
    x = np.full((2, 300), 100, np.int8)
    assert S.sum(x, -1).tolist() == [(300 * 100 + 128) % 256 - 128] * 2
    assert S.sum(x, 0, keepdim=True).shape == (1, 300)


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin_against_torch(name):
    x = rand((3, 4, 5), BF16, seed=4)
    x[0, 1, 2] = np.nan
    for dim in (-1, 0, 1):
        for keepdim in (False, True):
            want = from_torch(getattr(torch, name)(to_torch(x), dim=dim, keepdim=keepdim))
            assert_bits_equal(getattr(S, name)(x, dim, keepdim), want)
    i = rand((4, 6), I32, seed=1)
    np.testing.assert_array_equal(
        getattr(S, name)(i, 1), getattr(torch, name)(torch.from_numpy(i), 1)
    )


def test_reduction_dim_out_of_range():
    with pytest.raises(SemanticsError, match="dim 2"):
        S.sum(np.zeros((2, 3), np.float32), 2)


# ----------------------------------------------------------------------------- matmul


def matmul_reference(a, b, out_dtype, bias=None):
    """Exact dot products (fsum of float64 products, which are exact for these inputs),
    rounded to float32, plus bias in float32, then to out_dtype."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    m, k = a64.shape
    n = b64.shape[1]
    acc = np.array(
        [[math.fsum(a64[i, t] * b64[t, j] for t in range(k)) for j in range(n)] for i in range(m)]
    ).astype(np.float32)
    if bias is not None:
        acc = (acc.astype(np.float64) + bias.astype(np.float64).reshape(1, n)).astype(np.float32)
    return acc.astype(out_dtype)


@pytest.mark.parametrize(
    ("dtype", "out"),
    [(BF16, F32), (BF16, BF16), (F16, F16), (F16, F32), (F32, F32), (E4M3, F32), (E5M2, BF16)],
)
def test_matmul_2d_against_exact_dot_products(dtype, out):
    a = rand((5, 24), dtype, seed=1, scale=2.0)
    b = rand((24, 7), dtype, seed=2, scale=2.0)
    assert_bits_equal(S.matmul(a, b, out), matmul_reference(a, b, out))


def test_matmul_transposes_and_bias():
    a = rand((6, 16), BF16, seed=3)
    b = rand((16, 8), BF16, seed=4)
    bias = rand((1, 8), F32, seed=5)
    want = matmul_reference(a, b, BF16, bias)
    a_t = np.ascontiguousarray(a.T)
    b_t = np.ascontiguousarray(b.T)
    assert_bits_equal(S.matmul(a_t, b_t, BF16, a_trans=True, b_trans=True, bias=bias), want)
    assert_bits_equal(S.matmul(a, b, BF16, bias=bias.reshape(8)), want)
    bias16 = rand((1, 8), BF16, seed=6)
    assert_bits_equal(S.matmul(a, b, F32, bias=bias16), matmul_reference(a, b, F32, bias16))


def test_matmul_batched_with_broadcast():
    a = rand((1, 4, 16), F16, seed=1)
    b = rand((3, 16, 5), F16, seed=2)
    got = S.matmul(a, b, F32)
    assert got.shape == (3, 4, 5)
    for i in range(3):
        assert_bits_equal(got[i], matmul_reference(a[0], b[i], F32))
    a4 = rand((2, 1, 3, 8), BF16, seed=3)
    b4 = rand((1, 2, 8, 4), BF16, seed=4)
    got4 = S.matmul(a4, b4, F32)
    assert got4.shape == (2, 2, 3, 4)
    assert_bits_equal(got4[1, 0], matmul_reference(a4[1, 0], b4[0, 0], F32))


def test_matmul_int8():
    a = rand((4, 64), I8, seed=1)
    b = rand((64, 3), I8, seed=2)
    bias = np.array([[1, -2, 2**30]], np.int32)
    got = S.matmul(a, b, I32, bias=bias)
    al, bl = a.astype(int).tolist(), b.astype(int).tolist()
    for i in range(4):
        for j in range(3):
            exact = sum(al[i][t] * bl[t][j] for t in range(64)) + int(bias[0, j])
            assert int(got[i, j]) == exact
    assert got.dtype == I32


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "a_dt", "b_dt", "out", "match"),
    [
        ((2, 3), (1, 3, 4), BF16, BF16, F32, "same rank"),
        ((2, 3), (3, 4), BF16, F16, F32, "dtypes differ"),
        ((2, 3), (3, 4), F16, F16, BF16, "cannot produce"),
        ((2, 3), (4, 5), BF16, BF16, F32, "K differs"),
        ((2, 2, 3), (3, 3, 4), F16, F16, F16, "do not broadcast"),
    ],
)
def test_matmul_errors(a_shape, b_shape, a_dt, b_dt, out, match):
    with pytest.raises(SemanticsError, match=match):
        S.matmul(np.zeros(a_shape, a_dt), np.zeros(b_shape, b_dt), out)


def test_matmul_bias_errors():
    a, b = np.zeros((2, 3), BF16), np.zeros((3, 4), BF16)
    with pytest.raises(SemanticsError, match="bias"):
        S.matmul(a, b, F32, bias=np.zeros((2, 4), np.float32))
    with pytest.raises(SemanticsError, match="bias dtype"):
        S.matmul(a, b, F32, bias=np.zeros((1, 4), np.float16))


# ----------------------------------------------------------------------------- layout


def test_layout_ops_against_torch():
    x = rand((2, 3, 4), BF16, seed=1)
    t = to_torch(x)
    assert_bits_equal(S.reshape(x, [6, 4]), from_torch(t.reshape(6, 4)))
    assert_bits_equal(S.transpose(x, -1, 0), from_torch(t.transpose(-1, 0)))
    assert_bits_equal(S.unsqueeze(x, -1), from_torch(t.unsqueeze(-1)))
    assert_bits_equal(S.unsqueeze(x, 1), from_torch(t.unsqueeze(1)))
    y = rand((2, 5, 4), BF16, seed=2)
    assert_bits_equal(S.concat([x, y, x], 1), from_torch(torch.cat([t, to_torch(y), t], 1)))
    z = rand((3, 1), F32, seed=3)
    assert_bits_equal(S.expand_clone(z, [3, 4]), torch.from_numpy(z).expand(3, 4).numpy())


def test_layout_results_are_copies():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for out in (S.reshape(x, [3, 2]), S.transpose(x, 0, 1), S.unsqueeze(x, 0)):
        out[...] = -1
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda x: S.reshape(x, [5, 5]), "cannot reshape"),
        (lambda x: S.reshape(x, [-1, 6]), "cannot reshape"),
        (lambda x: S.transpose(x, 0, 3), "dim 3"),
        (lambda x: S.unsqueeze(x, 4), "dim 4"),
        (lambda x: S.concat([x, x[:, :2]], 0), "differ outside"),
        (lambda x: S.concat([x, x.astype(np.float16)], 0), "dtypes differ"),
        (lambda x: S.expand_clone(x, [4, 6]), "cannot expand"),
        (lambda x: S.expand_clone(x, [1, 2, 6]), "cannot expand"),
    ],
)
def test_layout_errors(call, match):
    with pytest.raises(SemanticsError, match=match):
        call(np.zeros((2, 6), np.float32))


# ----------------------------------------------------------------------------- indexing


@pytest.mark.parametrize("mode", range(1, 8))
def test_gathermask(mode):
    x = rand((3, 16), BF16, seed=mode)
    period, offset = {1: (2, 0), 2: (2, 1), 7: (1, 0)}.get(mode, (4, mode - 3))
    rows = [
        [r[j] for j in range(16) if j % period == offset] for r in x.astype(np.float32).tolist()
    ]
    got = S.gathermask(x, mode)
    assert got.shape == (3, 16 // period)
    assert got.astype(np.float32).tolist() == rows


def test_gathermask_example_and_errors():
    x = np.arange(18, dtype=np.int32).reshape(3, 6)
    assert S.gathermask(x, 1).tolist() == [[0, 2, 4], [6, 8, 10], [12, 14, 16]]
    with pytest.raises(SemanticsError, match="multiple of 4"):
        S.gathermask(x, 3)
    with pytest.raises(SemanticsError, match="1..7"):
        S.gathermask(x, 8)


def test_gather_docs_example():
    x = np.arange(15, dtype=np.int32).reshape(3, 5)
    index = np.array([[0, 1, 2, 0], [1, 2, 0, 1], [2, 2, 1, 0]], np.int32)
    want = [[0, 6, 12, 3], [5, 11, 2, 8], [10, 11, 7, 3]]
    assert S.gather(x, 0, index).tolist() == want


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_against_torch(dim):
    x = rand((4, 5, 6), F32, seed=1)
    rng = np.random.default_rng(dim + 7)
    ishape = [3, 4, 5]
    ishape[dim] = 7
    index = rng.integers(0, x.shape[dim], size=ishape).astype(np.int64)
    want = torch.gather(torch.from_numpy(x), dim, torch.from_numpy(index)).numpy()
    assert_bits_equal(S.gather(x, dim, index.astype(np.int32)), want)


def test_gather_errors_name_the_bad_index():
    x = np.zeros((3, 5), np.float32)
    with pytest.raises(SemanticsError, match=r"index value 3 at position \[1, 0\]"):
        S.gather(x, 0, np.array([[0, 1], [3, 0]], np.int32))
    with pytest.raises(SemanticsError, match="index value -1"):
        S.gather(x, 1, np.array([[0, -1]], np.int32))
    with pytest.raises(SemanticsError, match="rank"):
        S.gather(x, 0, np.array([0, 1], np.int32))
    with pytest.raises(SemanticsError, match="no larger"):
        S.gather(x, 0, np.zeros((2, 6), np.int32))


def test_index_select_docs_example_and_torch():
    x = np.array(
        [[0.1427, 0.0231, -0.5414, -1.0009], [-0.4664, 0.2647, -0.1228, -1.1068]]
        + [[-1.1734, -0.6571, 0.7230, -0.6004]],
        np.float32,
    )
    idx = np.array([0, 2], np.int32)
    assert S.index_select(x, 0, idx).tolist() == [x[0].tolist(), x[2].tolist()]
    assert S.index_select(x, 1, idx).tolist() == [[r[0], r[2]] for r in x.tolist()]
    t = torch.index_select(torch.from_numpy(x), 1, torch.from_numpy(idx.astype(np.int64)))
    assert_bits_equal(S.index_select(x, -1, idx), t.numpy())


def test_index_select_2d_index_inserts_its_shape():
    weight = rand((10, 4), F32, seed=2)  # an embedding table [V, H]
    ids = np.array([[1, 9, 0], [4, 4, 2]], np.int32)  # [B, S]
    got = S.index_select(weight, 0, ids)
    assert got.shape == (2, 3, 4)
    for b in range(2):
        for s in range(3):
            assert got[b, s].tolist() == weight[ids[b, s]].tolist()
    with pytest.raises(SemanticsError, match="index value 10"):
        S.index_select(weight, 0, np.array([10], np.int32))


def test_topk_docs_example():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], np.float32)
    values, indices = S.topk(x, 2, -1, True)
    assert values.tolist() == [[3.0, 2.0], [3.0, 2.0]]
    assert indices.tolist() == [[2, 1], [2, 1]] and indices.dtype == I32


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [-1, 0])
def test_topk_against_torch_on_distinct_values(largest, dim):
    rng = np.random.default_rng(1)
    x = rng.permutation(6 * 20).reshape(6, 20).astype(np.float32) / 8
    v, i = S.topk(x, 5, dim, largest)
    tv, ti = torch.topk(torch.from_numpy(x), 5, dim=dim, largest=largest, sorted=True)
    assert_bits_equal(v, tv.numpy())
    np.testing.assert_array_equal(i, ti.numpy())


def test_topk_ties_nan_and_errors():
    x = np.array([[1.0, 3.0, np.nan, 3.0, -0.0, 0.0]], np.float32)
    v, i = S.topk(x, 4)
    assert i.tolist() == [[2, 1, 3, 0]]  # NaN is largest; equal values by lower index
    assert np.isnan(v[0, 0]) and v[0, 1:].tolist() == [3.0, 3.0, 1.0]
    v, i = S.topk(x, 6, largest=False)
    assert i.tolist() == [[4, 5, 0, 1, 3, 2]]  # -0.0 and 0.0 tie; NaN last
    b = np.array([[5, 5, 1, 5]], np.int32)
    assert S.topk(b, 2)[1].tolist() == [[0, 1]]
    with pytest.raises(SemanticsError, match="k = 7"):
        S.topk(x, 7)


# ----------------------------------------------------------------------------- windows


def test_read_window_full_and_tail():
    src = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    full = S.read_window(src, [1, 2], [3, 4])
    assert full.tolist() == [[src[r][c] for c in range(2, 6)] for r in range(1, 4)]
    tail = S.read_window(src, [3, 4], [4, 4], valid_shape=[2, 3])
    want = [[src[3 + r][4 + c] if r < 2 and c < 3 else 0.0 for c in range(4)] for r in range(4)]
    assert tail.tolist() == want
    assert tail.dtype == src.dtype


def test_read_window_bounds_errors():
    src = np.zeros((5, 7), np.float32)
    with pytest.raises(SemanticsError, match=r"offsets \[3, 4\].*\[5, 7\]"):
        S.read_window(src, [3, 4], [4, 4])
    with pytest.raises(SemanticsError, match="valid_shape"):
        S.read_window(src, [0, 0], [2, 2], valid_shape=[3, 2])
    with pytest.raises(SemanticsError, match="rank"):
        S.read_window(src, [0], [2])


def test_write_window_writes_only_the_valid_region():
    dst = np.full((4, 6), -1, np.int32)
    tile = np.arange(9, dtype=np.int32).reshape(3, 3)
    S.write_window(dst, tile, [2, 4], valid_shape=[2, 2])
    want = [[-1] * 6 for _ in range(4)]
    for r in range(2):
        for c in range(2):
            want[2 + r][4 + c] = int(tile[r, c])
    assert dst.tolist() == want
    S.write_window(dst, tile, [0, 0])
    assert dst[:3, :3].tolist() == tile.tolist()
    with pytest.raises(SemanticsError, match="bounds"):
        S.write_window(dst, tile, [2, 4])
    with pytest.raises(SemanticsError, match="dtype"):
        S.write_window(dst, tile.astype(np.int64), [0, 0])
