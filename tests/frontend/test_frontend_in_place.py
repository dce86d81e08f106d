"""In-place PyPTO functions on computed tiles: `y.axpy_(x, alpha)` (newer PyPTO's AXPY,
read as its composition) and `t.scatter_(...)` rebind the local variable that holds the
tile, as PyPTO's update of the tensor in memory is seen through that name. Goldens are
numpy written step by step in float32 (each PyPTO op is one IEEE float32 operation, so
the bits must agree)."""

from __future__ import annotations

import ast

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_source
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto.emitter import emit_module
from tileir.diagnostics import TileirError

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32

MIX_ROWS = """\
import pypto


@pypto.frontend.jit
def mix_rows(
    x: pypto.Tensor([6, 4, 32], pypto.DT_BF16),
    w: pypto.Tensor([6, 4, 4], pypto.DT_FP32),
    base: pypto.Tensor([6, 4, 32], pypto.DT_FP32),
    out: pypto.Tensor([6, 4, 32], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, 4, 32)
    for r, n in pypto.loop_unroll(0, 6, 1, name="ROWS", idx_name="r", unroll_list=[4, 2, 1]):
        xs = pypto.cast(x[r : r + n, :, :], pypto.DT_FP32)
        ws = w[r : r + n, :, :]
        acc = base[r : r + n, :, :] * 0.5
        for k in range(4):
            wk = pypto.view(ws, [n, 4, 1], [0, 0, k])
            xk = pypto.view(xs, [n, 1, 32], [0, k, 0])
            acc.axpy_(wk * xk, alpha=1.0 if k % 2 == 0 else -0.75)
        pypto.assemble(pypto.cast(acc, pypto.DT_BF16), [r, 0, 0], out)
"""


def _mix_rows_golden(x: np.ndarray, w: np.ndarray, base: np.ndarray) -> np.ndarray:
    xf = x.astype(F32)
    out = np.empty(x.shape, BF16)
    for b in range(x.shape[0]):
        acc = base[b] * F32(0.5)
        for k in range(4):
            term = w[b, :, k : k + 1] * xf[b, k : k + 1, :]  # [4, 1] * [1, 32], float32
            if k % 2:
                term = term * F32(-0.75)
            acc = acc + term
        out[b] = acc.astype(BF16)
    return out


def test_axpy_on_a_named_tile_accumulates_in_place() -> None:
    module = load_source(MIX_ROWS, "mix_rows.py")
    rng = np.random.default_rng(5)
    inputs = {
        "x": rng.standard_normal((6, 4, 32)).astype(BF16),
        "w": rng.standard_normal((6, 4, 4)).astype(F32),
        "base": rng.standard_normal((6, 4, 32)).astype(F32),
    }
    got = run_numpy(module, inputs)["out"]
    want = _mix_rows_golden(**inputs)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    # PyPTO 0.2.0 has no axpy_: the written-back kernel holds its composition
    text = emit_module(module)
    ast.parse(text)
    assert "axpy_" not in text


AXPY_DTYPES = """\
import pypto


@pypto.frontend.jit
def k(
    y: pypto.Tensor([4, 16], pypto.DT_{Y}),
    x: pypto.Tensor([4, {XC}], pypto.DT_{X}),
    out: pypto.Tensor([4, 16], pypto.DT_{Y}),
):
    pypto.set_vec_tile_shapes(4, 16)
    t = pypto.view(y, [4, 16], [0, 0])
    pypto.axpy_(t, pypto.view(x, [4, {XC}], [0, 0]), {ALPHA})
    out[:] = t
"""


@pytest.mark.parametrize(
    ("y", "x", "cols", "alpha"),
    [("BF16", "BF16", 16, 2.0), ("FP32", "FP16", 16, 1.0), ("FP16", "FP16", 1, -3.0)],
)
def test_axpy_dtypes_and_broadcast_match_the_docs_definition(
    y: str, x: str, cols: int, alpha: float
) -> None:
    """BF16 computes in FP32 and rounds once at the end; an FP16 x widens into an FP32 y;
    x broadcasts along y's columns; FP16 rounds after the product and after the sum."""
    src = AXPY_DTYPES.format(Y=y, X=x, XC=cols, ALPHA=alpha)
    module = load_source(src, "axpy.py")
    np_dt = {"BF16": BF16, "FP32": np.dtype(F32), "FP16": np.dtype(np.float16)}
    rng = np.random.default_rng(1)
    yv = rng.standard_normal((4, 16)).astype(np_dt[y])
    xv = rng.standard_normal((4, cols)).astype(np_dt[x])
    got = run_numpy(module, {"y": yv, "x": xv})["out"]
    if y == "BF16":
        want = (yv.astype(F32) + xv.astype(F32) * F32(alpha)).astype(BF16)
    elif y == "FP32":
        want = yv + xv.astype(F32)
    else:  # float16 ops round to float16 after each step (each is exact in float32 first)
        prod = (xv.astype(F32) * F32(alpha)).astype(np.float16)
        want = (yv.astype(F32) + prod.astype(F32)).astype(np.float16)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


SCATTER_NAMED = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([4, 8], pypto.DT_FP32),
    i: pypto.Tensor([1, 8], pypto.DT_INT64),
    out: pypto.Tensor([4, 8], pypto.DT_FP32),
):
    t = pypto.view(x, [4, 8], [0, 0])
    before = pypto.sum(t, 0, keepdim=True)
    t.scatter_(0, pypto.view(i, [1, 8], [0, 0]), 9.0)
    out[:] = t + before
"""


def test_scatter_on_a_named_tile_updates_later_reads_only() -> None:
    """Readers before the call see the old tile (they ran first), readers after it the
    new one."""
    module = load_source(SCATTER_NAMED, "scatter.py")
    x = np.arange(32, dtype=F32).reshape(4, 8)
    idx = np.array([[0, 3, 1, 2, 0, 3, 3, 1]], np.int64)
    got = run_numpy(module, {"x": x, "i": idx})["out"]
    new = x.copy()
    new[idx[0], np.arange(8)] = 9.0
    np.testing.assert_array_equal(got, new + x.sum(axis=0, keepdims=True))


def test_an_in_place_update_through_a_stored_method_is_a_located_error() -> None:
    src = SCATTER_NAMED.replace(
        "    t.scatter_(0, pypto.view(i, [1, 8], [0, 0]), 9.0)\n",
        "    f = t.scatter_\n    f(0, pypto.view(i, [1, 8], [0, 0]), 9.0)\n",
    )
    with pytest.raises(TileirError, match=r"scatter\.py:13:\d+: error: pypto\.scatter_ updates"):
        load_source(src, "scatter.py")
