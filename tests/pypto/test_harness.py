"""The PyPTO harness against the real pypto package: hand-written kernels compile in SIM
mode with a cost-model time, and the pass-verify interpreter computes what numpy does."""

import json
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tileir.backends.pypto.harness import (
    ArgSpec,
    PyptoError,
    _clean,
    _storage,
    compile_kernel,
    element_type,
    read_cost_model,
    run_kernel,
)

KERNELS = Path(__file__).parent / "kernels"
rng = np.random.default_rng(20240601)


def _accumulate(x: np.ndarray) -> np.ndarray:
    acc = x[0:4].copy()
    for i in range(1, 8):
        acc = acc + x[4 * i : 4 * i + 4]
    return acc


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)


# file, kernel, args, inputs, reference, tolerance (None: bit-exact)
CASES = {
    "expmuladd": (
        "expmuladd.py",
        [
            ArgSpec("a", (16, 64), "f32"),
            ArgSpec("b", (16, 64), "f32"),
            ArgSpec("out", (16, 64), "f32"),
        ],
        {
            "a": rng.standard_normal((16, 64), np.float32),
            "b": rng.standard_normal((16, 64), np.float32),
        },
        lambda a, b: np.exp(a) * b + a,
        2e-6,  # torch's and numpy's exp differ in the last bit
    ),
    "cast_bf16": (
        "cast_bf16.py",
        [ArgSpec("x", (16, 64), "f32"), ArgSpec("out", (16, 64), "bf16")],
        {"x": rng.standard_normal((16, 64), np.float32) * 100},
        lambda x: x.astype(ml_dtypes.bfloat16),  # round to nearest even, as CAST_RINT
        None,
    ),
    "widen_bf16": (
        "cast_bf16.py",
        [ArgSpec("x", (16, 64), "bf16"), ArgSpec("out", (16, 64), "f32")],
        {"x": rng.standard_normal((16, 64), np.float32).astype(ml_dtypes.bfloat16)},
        lambda x: x.astype(np.float32),
        None,
    ),
    "matmul_f16": (
        "matmul_f16.py",
        [
            ArgSpec("a", (32, 64), "f16"),
            ArgSpec("b", (48, 64), "f16"),
            ArgSpec("out", (32, 48), "f32"),
        ],
        {
            "a": rng.standard_normal((32, 64)).astype(np.float16),
            "b": rng.standard_normal((48, 64)).astype(np.float16),
        },
        _matmul,
        1e-5,
    ),
    "tail_unroll": (
        "tail_unroll.py",
        [ArgSpec("x", (10, 32), "f32"), ArgSpec("out", (10, 32), "f32")],
        {"x": rng.standard_normal((10, 32), np.float32)},
        lambda x: x * np.float32(2) + np.float32(1),
        None,
    ),
    "accumulate": (
        "accumulate.py",
        [ArgSpec("x", (32, 64), "f32"), ArgSpec("out", (4, 64), "f32")],
        {"x": rng.standard_normal((32, 64), np.float32)},
        _accumulate,
        None,
    ),
}


@pytest.mark.pypto
@pytest.mark.parametrize(
    "name", ["expmuladd", "cast_bf16", "matmul_f16", "tail_unroll", "accumulate"]
)
def test_compile_reports_cost(name: str) -> None:
    file, args, *_ = CASES[name]
    result = compile_kernel(KERNELS / file, name, args).check()
    assert result.time_us is not None and result.time_us > 0
    assert result.total_cycles is not None and result.total_cycles > 0
    if name == "expmuladd":  # asks for the NPU run mode: SIM was forced; one task per row
        assert result.tasks == 16


@pytest.mark.pypto
@pytest.mark.parametrize("name", sorted(CASES))
def test_run_matches_numpy(name: str) -> None:
    file, args, inputs, reference, tol = CASES[name]
    before = {k: v.copy() for k, v in inputs.items()}
    out = run_kernel(KERNELS / file, name, args, inputs)
    (result,) = out.values()
    expected = reference(*inputs.values())
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if tol is None:
        np.testing.assert_array_equal(result.view(np.uint8), expected.view(np.uint8))
    else:
        np.testing.assert_allclose(result, expected, rtol=tol, atol=tol)
    for k, v in inputs.items():  # the caller's arrays are untouched
        np.testing.assert_array_equal(v, before[k])


BROKEN_ARGS = [ArgSpec("a", (2, 16, 64), "f32"), ArgSpec("out", (2, 16, 64), "f32")]


@pytest.mark.pypto
def test_broken_kernel_names_the_failed_pass() -> None:
    result = compile_kernel(KERNELS / "broken.py", "broken", BROKEN_ARGS)
    assert not result.ok
    assert "Errcode: FFFFFF" in result.error
    # The reason is only in PyPTO's C++ log, which the harness reads.
    assert "Tile shape size 2 is not matched the output shape size 3" in result.error
    with pytest.raises(PyptoError, match="ExpandFunction failed"):
        run_kernel(
            KERNELS / "broken.py", "broken", BROKEN_ARGS, {"a": np.zeros((2, 16, 64), np.float32)}
        )


@pytest.mark.pypto
def test_arg_spec_mismatch_is_reported_before_pypto_runs() -> None:
    args = [
        ArgSpec("a", (16, 64), "f16"),
        ArgSpec("b", (16, 64), "f32"),
        ArgSpec("out", (16, 64), "f32"),
    ]
    result = compile_kernel(KERNELS / "expmuladd.py", "expmuladd", args)
    assert (
        result.error == "argument `a`: the kernel declares DataType.DT_FP32, the arg spec DT_FP16"
    )
    result = compile_kernel(KERNELS / "expmuladd.py", "nope", args)
    assert "`nope` is not defined" in result.error and "expmuladd" in result.error


def _misbehaving(tmp_path: Path, how: str) -> Path:
    path = tmp_path / f"{how}.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import os, time
            import pypto

            {how}

            @pypto.frontend.jit
            def kernel(x: pypto.Tensor([8, 64], pypto.DT_FP32)):
                pass
            """
        )
    )
    return path


@pytest.mark.pypto
def test_worker_crash_and_hang_become_errors(tmp_path: Path) -> None:
    args = [ArgSpec("x", (8, 64), "f32")]
    crashed = compile_kernel(_misbehaving(tmp_path, "os.abort()"), "kernel", args)
    assert "died with SIGABRT" in crashed.error
    hung = compile_kernel(_misbehaving(tmp_path, "time.sleep(600)"), "kernel", args, timeout=5)
    assert "timed out after 5 s" in hung.error


# -- without pypto -------------------------------------------------------------------------


def test_arg_spec_checks_dtype_and_shape() -> None:
    assert ArgSpec("x", [4, 8], "bf16", [0]).shape == (4, 8)
    with pytest.raises(ValueError, match="unknown dtype 'float32'"):
        ArgSpec("x", (4,), "float32")
    with pytest.raises(ValueError, match="every dim must be > 0"):
        ArgSpec("x", (4, 0), "f32")
    with pytest.raises(ValueError, match="outside rank 2"):
        ArgSpec("x", (4, 8), "f32", (2,))


@pytest.mark.parametrize(
    "dtype", ["bf16", "f16", "f32", "i8", "i32", "i64", "i1", "f8E4M3FN", "f8E5M2"]
)
def test_storage_round_trips_bytes(dtype: str, tmp_path: Path) -> None:
    t = element_type(dtype)
    value = (rng.standard_normal((3, 5)) * 4).astype(t.numpy)
    np.save(tmp_path / "v.npy", value.view(_storage(t)))
    loaded = np.load(tmp_path / "v.npy")
    assert loaded.dtype.kind != "V"
    np.testing.assert_array_equal(loaded.view(t.numpy).view(np.uint8), value.view(np.uint8))


def test_cost_model_is_read_from_the_swim_lanes(tmp_path: Path) -> None:
    out = tmp_path / "output_1" / "CostModelSimulationOutput"
    out.mkdir(parents=True)
    lanes = [
        {"blockIdx": 0, "coreType": "AIC", "tasks": []},
        {"blockIdx": 1, "coreType": "AIV", "tasks": [{"execStart": 3600, "execEnd": 5400}]},
        {"blockIdx": 2, "coreType": "AIV", "tasks": [{"execStart": 4000, "execEnd": 9000}]},
    ]
    (out / "_simulate.swim.json").write_text(json.dumps(lanes))
    (out / "_simulate.stat.report.txt").write_text("Total Cycles.......:     10784\n")
    time_us, cycles, tasks = read_cost_model(tmp_path)
    assert time_us == pytest.approx((9000 - 3600) / 1800)
    assert (cycles, tasks) == (10784, 2)
    assert read_cost_model(tmp_path / "missing") == (None, None, None)


def test_error_text_drops_backtraces_and_plot_helper_noise() -> None:
    text = (
        "\x1b[1mINTERNAL BUG\x1b[0m Errcode: FFFFFF!\n"
        "libtile_fwk_interface.so(npu::tile_fwk::HostMachine::Compile() const+0x243) [0x7f87]\n"
        "libstdc(+0xd44a3) [0x7f87158d44a3]++.so.6\n"
        "Traceback (most recent call last):\n"
        '  File "print_swim_lane.py", line 17, in <module>\n'
        "    import matplotlib\n"
        "ModuleNotFoundError: No module named 'matplotlib'\n"
        "AICore End-to-End Time: 2.56\n"
    )
    assert _clean(text) == ["INTERNAL BUG Errcode: FFFFFF!", "AICore End-to-End Time: 2.56"]
