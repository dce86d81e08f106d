"""Results written into the buffer of an operand at its last use (`fastpaths.spare`)
have the semantics' bits, and a buffer anything else can still see is never reused."""

from __future__ import annotations

import numpy as np
import pytest

from tileir.backends.numpy import compile_kernel, fastpaths, semantics
from tileir.backends.numpy.rules import elementwise
from tileir.ir import parse_module

F32 = np.dtype(np.float32)

SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.5, 1e-45, -1e-40, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, 0.1, 7.0],
    F32,
)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def test_only_an_array_nothing_else_refers_to_is_spare():
    fresh = np.ones(8, F32)
    assert fastpaths.spare(fresh) is fresh
    window = fresh[2:]
    assert fastpaths.spare(fresh) is None  # a view of it is alive
    assert fastpaths.spare(window) is None  # and a view does not own its memory
    del window
    kept = [fresh]
    assert fastpaths.spare(fresh) is None  # another container holds it
    assert fastpaths.spare(fresh, held=2) is fresh  # ... unless the caller counts it
    kept.clear()
    fresh.flags.writeable = False
    assert fastpaths.spare(fresh) is None
    assert fastpaths.spare(1.5) is None


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum"])
@pytest.mark.parametrize("side", [0, 1])
def test_binary_into_a_spare_operand(name, side):
    a = np.repeat(SPECIAL, SPECIAL.size)
    b = np.tile(SPECIAL, SPECIAL.size)
    with np.errstate(all="ignore"):
        want = getattr(semantics, name)(a, b)
        buffers = [a.copy(), b.copy()]
        target = buffers[side]
        got = fastpaths.binary(name)(buffers[0], buffers[1], target)
        assert got is target
        np.testing.assert_array_equal(bits(got), bits(want))
        for scalar in (0.1, -0.0, 3.0e38):
            want = getattr(semantics, name)(a, scalar)
            x = a.copy()
            got = fastpaths.binary(name)(x, scalar, x)
            assert got is x
            np.testing.assert_array_equal(bits(got), bits(want))


def test_a_broadcast_operand_does_not_take_the_result():
    row = np.ones((1, 4), F32)
    full = np.arange(12, dtype=F32).reshape(3, 4)
    got = fastpaths.binary("add")(row, full, row)
    assert got is not row and got.shape == (3, 4)
    np.testing.assert_array_equal(row, 1)
    np.testing.assert_array_equal(got, full + 1)
    # the full-shape operand takes it, whichever side it is on
    col = np.array([[0.5], [-0.0], [np.inf]], F32)
    for args, want in (((full, col), full - col), ((col, full), col - full)):
        target = next(a for a in args if a.shape == (3, 4)).copy()
        ops = tuple(target if a.shape == (3, 4) else a for a in args)
        got = fastpaths.binary("sub")(*ops, target)
        assert got is target
        np.testing.assert_array_equal(bits(got), bits(semantics.sub(*args)))
        np.testing.assert_array_equal(bits(got), bits(want))


def test_comparisons_never_write_into_a_float_buffer():
    a = SPECIAL.copy()
    got = fastpaths.binary("lt")(a, SPECIAL, a)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(bits(a), bits(SPECIAL))


@pytest.mark.parametrize(
    "name", ["exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf"]
)
def test_unary_into_a_spare_operand(name):
    values = np.concatenate([SPECIAL, np.linspace(-90, 90, 999, dtype=F32)])
    with np.errstate(all="ignore"):
        want = getattr(semantics, name)(values)
        x = values.copy()
        got = fastpaths.unary(name)(x, x)
    assert got is x
    np.testing.assert_array_equal(bits(got), bits(want))
    # independent: the float64 value rounded once (NaN lanes: the semantics' bits)
    ref = {
        "exp": np.exp,
        "log": np.log,
        "sqrt": np.sqrt,
        "rsqrt": lambda v: 1 / np.sqrt(v),
        "reciprocal": lambda v: 1 / v,
        "tanh": np.tanh,
        "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    }.get(name)
    if ref is not None:
        with np.errstate(all="ignore"):
            expected = ref(values.astype(np.float64)).astype(F32)
        ok = ~np.isnan(expected)
        np.testing.assert_array_equal(bits(got)[ok], bits(expected)[ok])


def test_a_reused_buffer_is_not_a_stale_matmul_operand():
    """The matmul fast path remembers the float64 copy of a large tile; a result written
    into that tile's buffer must not be multiplied as the old values."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(F32)
    w = rng.standard_normal((256, 8)).astype(F32)
    first = fastpaths.matmul(a, w, F32)
    np.testing.assert_array_equal(first, semantics.matmul(a, w, F32))
    b = fastpaths.binary("mul")(a, 2.0, a)
    assert b is a
    np.testing.assert_array_equal(fastpaths.matmul(b, w, F32), semantics.matmul(b, w, F32))


KERNEL = """
pto.kernel @k(%x: memref<{r}x8xf32>, %o1: memref<{r}x8xf32>, %o2: memref<{r}x4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %three = arith.constant 3.0 : f32
  pto.loop %i = %c0 to %cn step %c1 name "rows" idx_name "i" {{
    %row = arith.muli %i, %c1 : index
    %t = pto.view %x[%row, 0] : memref<{r}x8xf32> -> tensor<1x8xf32>
    %f = pto.mul %t, %two : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    %v = pto.view %f[0, 0] : tensor<1x8xf32> -> tensor<1x4xf32>
    %g = pto.add %f, %one : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    pto.assemble %g into %o1[%row, 0] : tensor<1x8xf32>, memref<{r}x8xf32>
    %w = pto.mul %v, %three : tensor<1x4xf32>, f32 -> tensor<1x4xf32>
    %e = pto.exp %w : tensor<1x4xf32>
    %s = pto.sub %e, %e : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
    %u = pto.add %s, %w : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
    pto.assemble %u into %o2[%row, 0] : tensor<1x4xf32>, memref<{r}x4xf32>
  }}
}}
"""


@pytest.mark.parametrize("vectorize", [True, False])
def test_a_tile_a_live_view_shares_is_not_overwritten(vectorize, monkeypatch):
    """%f dies at the add, but the view %v of it is read afterwards: the add must not
    write into %f's buffer. %e dies at a sub that reads it twice. (Donors on these small
    tiles too: by default only tiles of `DONOR_MIN_BYTES` take a result.)"""
    monkeypatch.setattr(elementwise, "DONOR_MIN_BYTES", 0)
    rows = 6
    x = np.random.default_rng(1).standard_normal((rows, 8)).astype(F32)
    module = parse_module(KERNEL.format(r=rows, n=rows))
    plan = compile_kernel(module, vectorize=vectorize)
    out = plan({"x": x})
    f = x * np.float32(2)
    np.testing.assert_array_equal(out["o1"], f + np.float32(1))
    w = f[:, :4] * np.float32(3)
    e = np.exp(w.astype(np.float64)).astype(F32)
    np.testing.assert_array_equal(out["o2"], (e - e) + w)
    if vectorize:
        assert plan.batched_runs == 1


@pytest.mark.parametrize("name, pick", [("amax", max), ("amin", min)])
def test_float32_max_min_fast_path_keeps_nan_bits_and_zero_signs(name, pick):
    """amax / amin reduce float32 directly; rows whose result is NaN (a signalling
    payload) or a zero (-0.0 next to +0.0) are the semantics' business."""
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((40, 33)).astype(F32)
    rows[3, 7] = np.array([0x7F800001], np.uint32).view(F32)[0]  # signalling NaN
    rows[5, 1] = np.array([0xFFC01234], np.uint32).view(F32)[0]  # quiet, payload, sign
    rows[8] = 0.0
    rows[8, ::2] = -0.0
    rows[9] = -0.0
    rows[9, 5] = 0.0
    fast = fastpaths.reduction(name)
    for dim, keepdim in ((1, False), (-1, True), (0, False)):
        got = fast(rows, dim, keepdim)
        want = getattr(semantics, name)(rows, dim, keepdim)
        np.testing.assert_array_equal(bits(got.ravel()), bits(want.ravel()))
    ordinary = [r for r in range(40) if r not in (3, 5, 8, 9)]
    got = fast(rows[ordinary], 1, False)
    assert got.tolist() == [pick(rows[r].tolist()) for r in ordinary]


def test_only_large_tiles_take_a_result_outside_batched_loops(monkeypatch):
    """The donor choice is made when lowering: a 1x8 tile (32 bytes) dying at an add
    gets a fresh result by default, the same op on a tile over `DONOR_MIN_BYTES` writes
    into its operand; both give the bits of the add."""
    calls: list[object] = []
    real = fastpaths.spare
    monkeypatch.setattr(
        fastpaths, "spare", lambda arr, held=1: calls.append(arr) or real(arr, held + 1)
    )
    x = np.arange(6 * 8, dtype=F32).reshape(6, 8)
    module = parse_module(KERNEL.format(r=6, n=6))
    out = compile_kernel(module, vectorize=False)({"x": x})
    assert calls == []
    np.testing.assert_array_equal(out["o1"], x * np.float32(2) + np.float32(1))
    monkeypatch.setattr(elementwise, "DONOR_MIN_BYTES", 32)
    compile_kernel(module, vectorize=False)({"x": x})
    assert calls  # the 1x8 f32 tiles are 32 bytes: donors now
