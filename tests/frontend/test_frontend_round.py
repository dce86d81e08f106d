"""`pypto.round(x, decimals)` (issue 14: PyPTO-Gym's grouped_matmul_swiglu_quant stopped
there). Kernels in `data/jit/jit_round.py`; the golden is numpy's own `np.round` on
float32 (numpy's implementation, not tileir's), plus hand-picked halves; under `pypto`,
PyPTO 0.2.0's interpreter bit for bit, including values where rounding `x * 10^d` to the
input's dtype first would give another answer."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

DATA = Path(__file__).parent / "data" / "jit"
FILE = DATA / "jit_round.py"
HALVES = [0.5, 1.5, 2.5, -0.5, -2.5, 0.25, 0.35, 2.35, 3.65, 15.0, 25.0, 35.0, -25.0, 0.0, -0.0]
EDGES = [np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-40]


def _inputs(dtype, scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fixed = np.array(HALVES + EDGES, np.float32)
    rest = (rng.standard_normal(128 - fixed.size) * scale).astype(np.float32)
    with np.errstate(over="ignore"):  # 3e38 is inf in f16
        return np.concatenate([fixed, rest]).astype(dtype).reshape(8, 16)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


CASES = [
    ("round_f32", np.float32, 0, 3.0),
    ("round_bf16_method", ml_dtypes.bfloat16, 2, 3.0),
    ("round_f16_tens", np.float16, -1, 300.0),
]


@pytest.mark.parametrize(("kernel", "dtype", "decimals", "scale"), CASES)
def test_round_is_numpys_float32_round_then_one_rounding(kernel, dtype, decimals, scale) -> None:
    x = _inputs(dtype, scale, 0)
    y = run(load_file(FILE, kernel=kernel), {"x": x})["y"]
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.round(x.astype(np.float32), decimals).astype(dtype)
    assert y.dtype == np.dtype(dtype)
    assert np.array_equal(_bits(y), _bits(want))


def test_halves_go_to_even_by_hand() -> None:
    x = np.zeros((8, 16), np.float32)
    x.flat[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, 1.25, 2.35, 3.65]
    y = run(load_file(FILE, kernel="round_f32"), {"x": x})["y"]
    assert y.flat[:8].tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 1.0, 2.0, 4.0]
    assert np.signbit(y.flat[3])


def test_per_row_int8_quantisation() -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((8, 16)) * 5).astype(np.float32)
    out = run(load_file(FILE, kernel="quant_rows"), {"x": x})
    scale = (np.float32(127.0) / np.abs(x).max(axis=1, keepdims=True)).astype(np.float32)
    q = np.round((x * scale).astype(np.float32)).astype(np.int8)
    assert np.array_equal(out["q"], q)
    assert np.abs(out["q"]).max() == 127
    assert np.array_equal(out["s"], (np.float32(1.0) / scale).astype(np.float32))


def test_ir_and_emitted_source() -> None:
    module = load_file(FILE, kernel="round_bf16_method")
    (op,) = [o for o in module.walk() if isinstance(o, pto.RoundOp)]
    assert op.decimals is not None and op.decimals.value.data == 2
    assert "t = pypto.round(x, 2)" in emit(module)
    plain = load_file(FILE, kernel="round_f32")
    (op,) = [o for o in plain.walk() if isinstance(o, pto.RoundOp)]
    assert op.decimals is None and "pypto.round(x)" in emit(plain)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("pypto.round(x, 1.5)", "pypto.round decimals must be a Python int, got"),
        ("pypto.round(x, True)", "pypto.round decimals must be a Python int, got"),
        ("pypto.round(i)", "pypto.round takes a float tensor"),
    ],
)
def test_bad_calls_are_located(call: str, message: str) -> None:
    source = f"""
import pypto

@pypto.frontend.jit
def k(x: pypto.Tensor([4, 4], pypto.DT_FP32), i: pypto.Tensor([4, 4], pypto.DT_INT32), y: pypto.Tensor([4, 4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 4)
    y[:] = {call}
"""
    with pytest.raises(TileirError) as info:
        load_source(source, "bad_round.py")
    text = str(info.value)
    assert text.startswith("bad_round.py:7:12:") and message in text, text


@pytest.mark.pypto
@pytest.mark.parametrize(("kernel", "dtype", "decimals", "scale"), CASES)
def test_pypto_020_rounds_the_same_bits(kernel, dtype, decimals, scale, tmp_path: Path) -> None:
    """0.2.0's interpreter against tileir's numpy, with values where rounding `x * 10^d`
    to bf16 / f16 first would differ from doing it in float32."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    x = _inputs(dtype, scale, 2)
    if decimals > 0 or dtype is np.float16:
        rng = np.random.default_rng(3)
        pool = (rng.standard_normal(200000) * scale).astype(dtype)
        p = np.float32(10.0**decimals)
        prod = pool.astype(np.float32) * p if decimals >= 0 else pool.astype(np.float32) / p
        in_dtype = np.rint(prod.astype(dtype).astype(np.float32))
        split = pool[np.rint(prod) != in_dtype][:40]
        assert split.size == 40
        x.flat[-40:] = split
    name = {np.float32: "f32", np.float16: "f16"}.get(dtype, "bf16")
    args = [ArgSpec("x", (8, 16), name), ArgSpec("y", (8, 16), name)]
    theirs = run_kernel(FILE, kernel, args, {"x": x}, workdir=tmp_path)["y"]
    ours = run(load_file(FILE, kernel=kernel), {"x": x})["y"]
    assert np.array_equal(_bits(theirs), _bits(ours))
