"""The JIT-model test kernels (`tests/frontend/data/jit/`) on the real pypto 0.2.0: the
source file as written (STATIC dims, a scalar without a default, a config object as a
defaulted parameter, `[pypto.DYNAMIC, ...]` / `[]`) and tileir's `-t pypto` output of it
(the annotations written back) both compute what numpy says."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, run_kernel

pytestmark = pytest.mark.pypto

DATA = Path(__file__).parents[1] / "frontend" / "data" / "jit"
BF16 = np.dtype(ml_dtypes.bfloat16)


def _norm(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + eps) * gamma


@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_static_dims_and_a_scalar_on_real_pypto(source: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    gamma = rng.standard_normal(32).astype(np.float32)
    path = DATA / "jit_config.py"
    if source == "emitted":
        module = load_file(path, args={"x": x, "gamma": gamma, "out": x, "eps": 1e-3})
        path = tmp_path / "emitted.py"
        path.write_text(emit(module))
        assert "pypto.Tensor([pypto.STATIC, pypto.STATIC]" in path.read_text()
    args = [
        ArgSpec("x", (4, 32), "f32"),
        ArgSpec("gamma", (32,), "f32"),
        ArgSpec("out", (4, 32), "f32"),
    ]
    scalars = {"eps": 1e-3} if source == "as written" else None
    out = run_kernel(
        path, "rms_norm", args, {"x": x, "gamma": gamma}, outputs=["out"], scalars=scalars
    )
    np.testing.assert_allclose(out["out"], _norm(x, gamma, 1e-3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_shapes_from_the_call_on_real_pypto(source: str, tmp_path: Path) -> None:
    x = np.linspace(-2, 2, 3 * 16).reshape(3, 16).astype(BF16)
    path = DATA / "jit_from_call.py"
    if source == "emitted":
        path = tmp_path / "emitted.py"
        path.write_text(emit(load_file(DATA / "jit_from_call.py", args={"x": x, "out": x})))
    args = [ArgSpec("x", (3, 16), "bf16", (0,)), ArgSpec("out", (3, 16), "bf16")]
    out = run_kernel(path, "exp_rows", args, {"x": x}, outputs=["out"])
    golden = np.exp(x.astype(np.float32))
    np.testing.assert_allclose(out["out"].astype(np.float32), golden, rtol=2**-7, atol=1e-3)


def test_gym_constructs_on_real_pypto(tmp_path: Path) -> None:
    """`jit_gym_constructs.row_softmax` as tileir writes it back (cache policy, matrix
    size, format, cond on `is_loop_begin`, [1, 1] into rank 1) on pypto 0.2.0."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((13, 32)).astype(np.float32)
    w = rng.standard_normal((4, 16)).astype(np.float32)
    module = load_file(DATA / "jit_gym_constructs.py", kernel="row_softmax")
    path = tmp_path / "emitted.py"
    path.write_text(emit(module))
    args = [
        ArgSpec("x", (13, 32), "f32", (0,)),
        ArgSpec("w", (4, 16), "f32"),
        ArgSpec("y", (13, 32), "f32", (0,)),
        ArgSpec("total", (1,), "f32"),
    ]
    out = run_kernel(path, "row_softmax", args, {"x": x, "w": w}, outputs=["y", "total"])
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[:8] *= 2.0
    np.testing.assert_allclose(out["y"], p, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out["total"], [w.astype(np.float64).sum()], rtol=1e-4, atol=1e-4)
