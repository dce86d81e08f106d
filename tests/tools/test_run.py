"""`tileir-run`: inputs from .npy (bf16 as `np.save` writes it), seeded random inputs,
one-line errors with exit code 1, and nothing written when a run fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tileir.backends.numpy import random_inputs, run
from tileir.ir import parse_module
from tileir.tools.run import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROPE = EXAMPLES / "rope_tail.mlir"
ACCUMULATE = EXAMPLES / "accumulate.mlir"
BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32


def rope_by_hand(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    xf = x.astype(F32)
    rot = np.concatenate([-xf[..., 32:], xf[..., :32]], axis=-1)
    y = xf * cos.astype(F32)[:, None, :] + rot * sin.astype(F32)[:, None, :]
    return y.astype(BF16)


def test_bf16_npy_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((20, 2, 64)).astype(BF16),
        "cos": rng.uniform(-1, 1, (20, 64)).astype(BF16),
        "sin": rng.uniform(-1, 1, (20, 64)).astype(BF16),
    }
    args = [str(ROPE), "--output-dir", str(tmp_path / "out")]
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)  # ml_dtypes arrays are saved as raw |V2
        assert np.load(tmp_path / f"{name}.npy").dtype.kind == "V"
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    assert main(args) == 0
    out = np.load(tmp_path / "out" / "out.npy")
    assert out.dtype == np.dtype("V2")
    np.testing.assert_array_equal(out.view(BF16), rope_by_hand(**arrays))


def test_random_inputs_are_seeded(tmp_path):
    outs = []
    for seed, d in [(1, "a"), (1, "b"), (2, "c")]:
        assert (
            main(
                [
                    str(ROPE),
                    "--random-inputs",
                    "--seed",
                    str(seed),
                    "--output-dir",
                    str(tmp_path / d),
                ]
            )
            == 0
        )
        outs.append((tmp_path / d / "out.npy").read_bytes())
    assert outs[0] == outs[1] != outs[2]
    module = parse_module(ROPE.read_text())
    expected = run(module, random_inputs(module, seed=1))["out"]
    assert np.load(tmp_path / "a" / "out.npy").view(BF16).tobytes() == expected.tobytes()


def test_given_inputs_win_over_random_ones(tmp_path):
    x = np.ones((32, 64), F32)
    np.save(tmp_path / "x.npy", x)
    args = [
        str(ACCUMULATE),
        "--input",
        f"x={tmp_path / 'x.npy'}",
        "--random-inputs",
        "--output-dir",
        str(tmp_path),
    ]
    assert main(args) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.full((4, 64), 8, F32))


DYNAMIC = """
pto.kernel @neg(%x: memref<?x16xf32>, %out: memref<?x16xf32>) attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.dim %x, %c0 : memref<?x16xf32>
  pto.loop %i = %c0 to %s step %c1 {
    %t = pto.view %x[%i, 0] : memref<?x16xf32> -> tensor<1x16xf32>
    %n = pto.neg %t : tensor<1x16xf32>
    pto.assemble %n into %out[%i, 0] : tensor<1x16xf32>, memref<?x16xf32>
  }
}
"""


def test_dynamic_dims_of_random_inputs(tmp_path):
    (tmp_path / "neg.mlir").write_text(DYNAMIC)
    assert (
        main(
            [
                str(tmp_path / "neg.mlir"),
                "--random-inputs",
                "--dim",
                "S=5",
                "--output-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert np.load(tmp_path / "out.npy").shape == (5, 16)
    assert main([str(tmp_path / "neg.mlir"), "--random-inputs", "--output-dir", str(tmp_path)]) == 0
    assert np.load(tmp_path / "out.npy").shape == (16, 16)


DYNAMIC_PY = """\
import pypto


@pypto.frontend.jit()
def k(idx: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
      x: pypto.Tensor([8, 16], pypto.DT_FP32),
      out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
      rows: int):
    for i in pypto.loop(rows):
        out[i:, :] = pypto.view(x, [1, 16], [idx[i], 0])
"""


def test_call_shapes_size_the_random_inputs_of_dynamic_dims(tmp_path):
    """`--arg idx=40xi32` on a `pypto.DYNAMIC` dim sizes its random input: the kernel's
    loop over `rows=40` reads every entry (the default 16 would end at entry 16)."""
    (tmp_path / "k.py").write_text(DYNAMIC_PY)
    p = cli(
        str(tmp_path / "k.py"),
        "--random-inputs",
        "--arg",
        "idx=40xi32",
        "--arg",
        "out=40x16xf32",
        "--arg",
        "rows=40",
        "--output-dir",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    assert np.load(tmp_path / "out.npy").shape == (40, 16)
    p = cli(
        str(tmp_path / "k.py"),
        "--random-inputs",
        "--dim",
        "idx_0=20",
        "--arg",
        "idx=40xi32",
        "--arg",
        "out=40x16xf32",
        "--arg",
        "rows=40",
        "--output-dir",
        str(tmp_path),
    )
    assert_one_line_error(p, "k.py:10:46:", "index [20] is outside the tensor's shape [20]")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("tileir-run")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "tileir.tools.run"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def assert_one_line_error(p: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_missing_input_writes_nothing(tmp_path):
    out = tmp_path / "out"
    p = cli(str(ROPE), "--output-dir", str(out))
    assert_one_line_error(p, "rope_tail.mlir:5:1", "missing input 'x'", "[20, 2, 64] bfloat16")
    assert not out.exists() or not any(out.iterdir())


def test_runtime_error_is_located_and_writes_nothing(tmp_path):
    bad = tmp_path / "oob.mlir"
    bad.write_text(
        ACCUMULATE.read_text().replace("%c8 = arith.constant 8", "%c8 = arith.constant 9")
    )
    np.save(tmp_path / "x.npy", np.ones((32, 64), F32))
    out = tmp_path / "out"
    p = cli(str(bad), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(out))
    assert_one_line_error(p, "oob.mlir:", "'pto.view'", "[32, 0]")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize(
    "make_args, fragments",
    [
        (lambda d: ["nothere.mlir"], ["no such file", "nothere.mlir"]),
        (
            lambda d: [str(ACCUMULATE), "--input", f"y={d / 'x.npy'}"],
            ["--input 'y'", "has no such argument"],
        ),
        (
            lambda d: [str(ACCUMULATE), "--input", f"x={d / 'f64.npy'}"],
            ["holds float64 data, expected float32"],
        ),
        (lambda d: [str(ACCUMULATE), "--input", "x"], ["expected NAME=FILE.npy"]),
        (lambda d: [str(ACCUMULATE), "--kernel", "nope", "--random-inputs"], ["no kernel @nope"]),
        (lambda d: [str(d / "broken.mlir")], ["broken.mlir:1:"]),
        (lambda d: [str(ACCUMULATE), "--random-inputs", "--dim", "S"], ["--dim 'S'"]),
    ],
)
def test_errors_are_one_line(tmp_path, make_args, fragments):
    np.save(tmp_path / "x.npy", np.ones((32, 64), F32))
    np.save(tmp_path / "f64.npy", np.ones((32, 64)))
    (tmp_path / "broken.mlir").write_text("pto.kernel @k(%x: memref<4xf32>) { %y = pto.bogus }\n")
    p = cli(*make_args(tmp_path), "--output-dir", str(tmp_path / "out"))
    assert_one_line_error(p, *fragments)


def test_pypto_kernel_file(tmp_path):
    kernel = Path(__file__).resolve().parents[1] / "pypto" / "kernels" / "tail_unroll.py"
    p = cli(str(kernel), "--random-inputs", "--output-dir", str(tmp_path))
    try:
        from frontends.pypto import load_file  # noqa: F401
    except ImportError:
        assert_one_line_error(p, "PyPTO frontend")
        return
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out.npy").exists()
