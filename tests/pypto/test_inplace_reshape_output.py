"""`out.move(pypto.reshape(t, shape, inplace=True))` (PyPTO-Gym's BNTrainingReduce does
it) and an inplace reshape of a view (mhc_post): the real pypto 0.2.0 compiles and runs
both, though the docs forbid them, so tileir's verifier accepts them; both compute what
numpy says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.backends.pypto.harness import ArgSpec, compile_kernel, run_kernel

pytestmark = pytest.mark.pypto

KERNELS = Path(__file__).parent / "kernels" / "reshape_moved.py"
X = {
    "column_sums": np.random.default_rng(3).random((64, 8), dtype=np.float32),
    "squares_flat": np.random.default_rng(4).random((4, 8), dtype=np.float32),
    "window_reshaped": np.random.default_rng(5).random((4, 4, 8), dtype=np.float32),
}
OUT = {"column_sums": (1, 8, 1, 1), "squares_flat": (32,), "window_reshaped": (4, 8, 1)}


def _expected(name: str, x: np.ndarray) -> np.ndarray:
    if name == "column_sums":
        return x.astype(np.float64).sum(axis=0).reshape(OUT[name])
    if name == "window_reshaped":
        return (x[:, 2:3, :].astype(np.float64) * 2.0).reshape(OUT[name])
    return (x.astype(np.float64) ** 2).reshape(OUT[name])


@pytest.mark.parametrize("name", sorted(X))
def test_real_pypto_and_tileir_compute_the_moved_inplace_reshape(name: str) -> None:
    x = X[name]
    args = [ArgSpec("x", x.shape, "f32"), ArgSpec("out", OUT[name], "f32")]
    assert compile_kernel(KERNELS, name, args).check().tasks
    real = run_kernel(KERNELS, name, args, {"x": x})["out"]
    ours = run(load_file(KERNELS, name, args={"x": x}), {"x": x})["out"]
    np.testing.assert_allclose(real, _expected(name, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, _expected(name, x), rtol=1e-5, atol=1e-5)
