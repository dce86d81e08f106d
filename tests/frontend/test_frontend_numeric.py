"""Kernels read by the frontend compute what their source says: run on the numpy back
end, and compared with the same computation written directly in numpy. The same cases
run on the real PyPTO (its pass-verify interpreter, marker `pypto`), which shows both
that the test kernels are genuine PyPTO and that tileir reads them the way PyPTO does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file
from tileir.backends.numpy import run as run_numpy

DATA = Path(__file__).parent / "data"
BF16 = ml_dtypes.bfloat16
Arrays = dict[str, np.ndarray]


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    kernel: str
    args: list[tuple[str, tuple[int, ...], str, tuple[int, ...]]]
    """(name, shape, dtype short name, dynamic axes) in parameter order."""
    inputs: Callable[[np.random.Generator], Arrays]
    golden: Callable[[Arrays], Arrays]
    atol: float
    rtol: float


def _project_golden(a: Arrays) -> Arrays:
    x = a["x"].astype(np.float64)
    t = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    t = 6.0 * t  # _scaled_sum: 1*t + 2t*(2/2) + 2t*(3/2)
    t16 = t.astype(np.float32).astype(BF16).astype(np.float32)
    y = t16 @ a["w"].astype(np.float32).T + a["bias"]
    order = np.argsort(-y, axis=-1, kind="stable")[:, :2]
    return {"out": y, "top": np.take_along_axis(y, order, -1), "top_idx": order}


CASES = [
    Case(
        "python operators, tail tiles",
        "tail_scale.py",
        "tail_scale",
        [("x", (13, 16), "f32", ()), ("out", (13, 16), "f32", ())],
        lambda rng: {"x": rng.standard_normal((13, 16)).astype(np.float32)},
        lambda a: {"out": 1.5 * a["x"] - 1.0},  # -(1 - x/2) + x
        1e-6,
        1e-6,
    ),
    Case(
        "loop state and workspaces",
        "online_softmax.py",
        "online_softmax_sum",
        [("x", (4, 24), "f32", ()), ("out", (4, 1), "f32", ())],
        lambda rng: {"x": rng.standard_normal((4, 24)).astype(np.float32)},
        lambda a: {"out": np.log(np.exp(a["x"].astype(np.float64)).sum(-1, keepdims=True))},
        1e-5,
        1e-5,
    ),
    Case(
        "loop_unroll over a dynamic dim",
        "dynamic_rows.py",
        "chunked_copy",
        [("x", (21, 32), "f32", (0,)), ("out", (21, 32), "f32", (0,))],
        lambda rng: {"x": rng.standard_normal((21, 32)).astype(np.float32)},
        lambda a: {"out": 2 * a["x"]},
        0.0,
        0.0,
    ),
    Case(
        "loop_unroll traced per factor, tensor slices",
        "unroll_by_factor.py",
        "unroll_by_factor",
        [("x", (21, 64), "f32", ()), ("out", (21, 64), "f32", ())],
        lambda rng: {"x": rng.standard_normal((21, 64)).astype(np.float32)},
        lambda a: {"out": np.concatenate([3.0 * a["x"][:, :32], a["x"][:, 32:] + 1.0], -1)},
        1e-6,
        1e-6,
    ),
    Case(
        "dynamic dim, bf16 exp with CAST_RINT",
        "dynamic_rows.py",
        "dynamic_rows",
        [("x", (21, 32), "bf16", (0,)), ("out", (21, 32), "bf16", (0,))],
        lambda rng: {"x": rng.standard_normal((21, 32)).astype(BF16)},
        lambda a: {"out": np.exp(a["x"].astype(np.float32)).astype(BF16)},
        1e-4,
        2.0**-7,
    ),
    Case(
        "helpers, matmul with bias, topk",
        "helpers_and_options.py",
        "project",
        [
            ("x", (4, 32), "f32", ()),
            ("w", (16, 32), "bf16", ()),
            ("bias", (1, 16), "f32", ()),
            ("out", (4, 16), "f32", ()),
            ("top", (4, 2), "f32", ()),
            ("top_idx", (4, 2), "i32", ()),
        ],
        lambda rng: {
            "x": rng.standard_normal((4, 32)).astype(np.float32),
            "w": rng.standard_normal((16, 32)).astype(BF16),
            "bias": rng.standard_normal((1, 16)).astype(np.float32),
        },
        _project_golden,
        1e-3,
        1e-4,
    ),
]
IDS = [c.name for c in CASES]


def _check(case: Case, got: Arrays, expected: Arrays) -> None:
    for name, want in expected.items():
        g = np.asarray(got[name])
        if g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, want, err_msg=name)
        else:
            np.testing.assert_allclose(
                g.astype(np.float64),
                np.asarray(want).astype(np.float64),
                atol=case.atol,
                rtol=case.rtol,
                err_msg=name,
            )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_numpy_back_end_matches_numpy(case: Case) -> None:
    inputs = case.inputs(np.random.default_rng(7))
    got = run_numpy(load_file(DATA / case.file), inputs, case.kernel)
    _check(case, got, case.golden(inputs))


@pytest.mark.parametrize("rows", [8, 3, 1])
def test_dynamic_rows_at_other_sizes(rows: int) -> None:
    x = np.random.default_rng(rows).standard_normal((rows, 32)).astype(np.float32)
    got = run_numpy(load_file(DATA / "dynamic_rows.py"), {"x": x}, "chunked_copy")
    np.testing.assert_array_equal(got["out"], 2 * x)


@pytest.mark.pypto
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_real_pypto_matches_numpy(case: Case) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    inputs = case.inputs(np.random.default_rng(7))
    expected = case.golden(inputs)
    args = [ArgSpec(n, s, d, axes) for n, s, d, axes in case.args]
    got = run_kernel(DATA / case.file, case.kernel, args, inputs, outputs=list(expected))
    _check(case, got, expected)
