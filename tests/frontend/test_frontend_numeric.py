"""Kernels read by the frontend compute what their source says: run on the numpy back
end and compared with the same computation written directly in numpy."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file

numpy_backend = pytest.importorskip("tileir.backends.numpy")

DATA = Path(__file__).parent / "data"
BF16 = ml_dtypes.bfloat16


def run(name: str, inputs: dict[str, np.ndarray], kernel: str | None = None):
    return numpy_backend.run(load_file(DATA / name), inputs, kernel)


def test_python_operators_with_tail_tiles() -> None:
    x = np.random.default_rng(1).standard_normal((13, 16)).astype(np.float32)
    out = run("tail_scale.py", {"x": x})["out"]
    # -(1 - x/2) + x, every row including the 13 % 4 tail
    np.testing.assert_allclose(out, 1.5 * x - 1.0, rtol=1e-6, atol=1e-6)


def test_online_accumulation_over_loop_state() -> None:
    x = np.random.default_rng(2).standard_normal((4, 24)).astype(np.float32)
    out = run("online_softmax.py", {"x": x})["out"]
    expected = np.log(np.exp(x.astype(np.float64)).sum(-1, keepdims=True))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [21, 8, 3])
def test_dynamic_rows_and_loop_unroll(rows: int) -> None:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 32)).astype(np.float32)
    out = run("dynamic_rows.py", {"x": x}, "chunked_copy")["out"]
    np.testing.assert_array_equal(out, 2 * x)

    xb = x.astype(BF16)
    out = run("dynamic_rows.py", {"x": xb}, "dynamic_rows")["out"]
    expected = np.exp(xb.astype(np.float32)).astype(BF16)  # round to nearest even
    np.testing.assert_allclose(
        out.astype(np.float32), expected.astype(np.float32), rtol=2**-7, atol=1e-4
    )


def test_inlined_helpers_matmul_bias_and_topk() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(BF16)
    bias = rng.standard_normal(16).astype(np.float32)
    got = run("helpers_and_options.py", {"x": x, "w": w, "bias": bias})

    t = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    t = 6.0 * t  # 1*t + 2t*(2/2) + 2t*(3/2)
    t16 = t.astype(BF16).astype(np.float32)
    y = t16 @ w.astype(np.float32).T + bias
    np.testing.assert_allclose(got["out"], y, rtol=1e-4, atol=1e-3)
    order = np.argsort(-y, axis=-1, kind="stable")[:, :2]
    np.testing.assert_array_equal(got["top_idx"], order)
    np.testing.assert_allclose(got["top"], np.take_along_axis(y, order, -1), rtol=1e-4, atol=1e-3)
