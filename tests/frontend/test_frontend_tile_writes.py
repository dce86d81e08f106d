"""Slice assignment into a tile, `pypto.clip`, lists of tiles and `set_cache_policy` on a
view (issue 14, PyPTO-Gym constructs). The kernels are in `data/jit/jit_tile_writes.py`,
written in the Gym's style; each result is checked against numpy written here."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import compile_kernel
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

DATA = Path(__file__).parent / "data" / "jit"
FILE = DATA / "jit_tile_writes.py"


def _run(kernel: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return compile_kernel(load_file(FILE, kernel=kernel))(inputs)


def test_a_tile_assigned_in_a_loop_carries_to_the_next_iteration() -> None:
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    out = _run("decay_carry", {"x": x, "y": np.zeros((4, 8), np.float32)})
    state = np.ones((4, 8))
    for s in range(4):
        state = state * 0.5 + x[4 * s : 4 * s + 4].astype(np.float64)
    state[1:3, 2:5] = -7.0
    np.testing.assert_allclose(out["y"], state, rtol=1e-6, atol=1e-6)


def test_rows_at_a_loop_index_and_a_write_under_a_runtime_if() -> None:
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    out = _run("row_fill", {"x": x, "y": np.zeros_like(x)})
    want = np.stack([3.0 * x[0], x[1] + x[0], x[2] + x[0], x[3] + x[0]])
    np.testing.assert_allclose(out["y"], want, rtol=1e-6)


def test_the_tile_moves_to_a_workspace_and_is_written_back_so() -> None:
    module = load_file(FILE, kernel="decay_carry")
    (k,) = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    names = [op.buffer_name.data for op in k.walk() if isinstance(op, pto.TensorOp)]
    assert names == ["state_mem1"]
    text = emit(module)
    ast.parse(text)
    assert 'pypto.tensor([4, 8], pypto.DT_FP32, "state_mem1")' in text
    # the loop body reads the workspace, not the tile made before the loop
    loop = text[text.index("for s_idx in pypto.loop") :]
    assert "pypto.mul(t, 0.5)" in loop and "t[:] = new_state" in loop


def test_emitted_tile_writes_read_back_to_the_same_numbers() -> None:
    again = DATA.parent / "_emitted_tile_writes.py"
    try:
        again.write_text(emit(load_file(FILE, kernel="decay_carry")))
        back = load_file(again, kernel="decay_carry")
    finally:
        again.unlink(missing_ok=True)
    x = np.arange(128, dtype=np.float32).reshape(16, 8) / 16.0
    out = compile_kernel(back)({"x": x, "y": np.zeros((4, 8), np.float32)})
    state = np.ones((4, 8))
    for s in range(4):
        state = state * 0.5 + x[4 * s : 4 * s + 4]
    state[1:3, 2:5] = -7.0
    np.testing.assert_allclose(out["y"], state, rtol=1e-6, atol=1e-6)


def test_clip_is_min_of_max_so_max_wins_when_the_bounds_cross() -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, 8)) * 3).astype(np.float32)
    x[0, 0] = np.nan
    lo = rng.standard_normal((4, 1)).astype(np.float32)
    z = np.zeros_like(x)
    out = _run("clipped", {"x": x, "lo": lo, "a": z, "b": z.copy(), "c": z.copy()})
    # PyPTO's definition, by hand: Y = MIN(MAX(X, min), max)
    a = np.where(x > 1.5, 1.5, x)
    np.testing.assert_array_equal(out["a"], a)  # NaN stays NaN
    np.testing.assert_array_equal(out["b"][:, 1:], np.full((4, 7), -1.5, np.float32))
    c = np.where(x < lo, lo, x) + x
    np.testing.assert_allclose(out["c"], c, rtol=1e-6)


def test_a_list_of_tiles_and_set_cache_policy_on_a_view() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 8)).astype(np.float32)
    w = rng.standard_normal((2, 4, 8)).astype(np.float32)
    module = load_file(FILE, kernel="gathered")
    out = compile_kernel(module)({"x": x, "w": w, "y": np.zeros_like(x)})
    parts = [x[2 * i : 2 * i + 2] * (i + 1) for i in range(4)]
    want = np.concatenate(parts[::-1]) + np.concatenate([w[1], w[1]])
    np.testing.assert_allclose(out["y"], want, rtol=1e-6)
    (k,) = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    # kept on the argument the view reads; the computed tile's hint is dropped
    assert list(k.attributes["cache_policies"].data) == ["w"]
    assert "w.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)" in emit(module)


_HEAD = "import pypto\n\n@pypto.frontend.jit\ndef k(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 8], pypto.DT_FP32)):\n"


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            "    t = x + 0.0\n    t[0:1, :] = pypto.full([1, 8], 1.0, pypto.DT_FP16)\n    y[:] = t\n",
            "k.py:6:5",
            "writes a f16 tile into a f32 tensor",
        ),
        (
            "    parts = [x + 0.0]\n    parts.index(x + 1.0)\n    y[:] = x\n",
            "k.py:6:5",
            "cannot take",
        ),
    ],
)
def test_bad_tile_writes_are_located_errors(body: str, where: str, message: str) -> None:
    with pytest.raises(TileirError, match=rf"{where}: error: .*({message})"):
        load_source(_HEAD + body, "k.py")


def test_the_matmul_operator_takes_the_right_operands_dtype() -> None:
    import ml_dtypes

    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    h = rng.standard_normal((8, 8)).astype(ml_dtypes.bfloat16)
    module = load_file(FILE, kernel="chained")
    mms = [op for op in module.walk() if isinstance(op, pto.MatmulOp)]
    # PyPTO 0.2.0's Tensor.__matmul__: out_dtype is the right operand's (f32, f32, bf16)
    assert [str(op.results[0].type.get_element_type()) for op in mms] == ["f32", "f32", "bf16"]
    out = compile_kernel(module)(
        {"a": a, "b": b, "h": h, "y": np.zeros_like(a), "z": np.zeros_like(h)}
    )
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out["y"], a64 @ b64 @ a64, rtol=1e-4, atol=1e-4)
    h64 = h.astype(np.float64)
    np.testing.assert_allclose(out["z"].astype(np.float64), h64 @ h64, rtol=1e-2, atol=5e-2)
    assert "pypto.matmul(" in emit(module)
