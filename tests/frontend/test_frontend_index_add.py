"""`pypto.index_add_` / `pypto.index_add` (issue 14: PyPTO-Gym's
grouped_matmul_finalize_routing stopped there). Kernels in `data/jit/jit_index_add.py`;
goldens: torch's own `index_add_` on CPU (f32, alpha 1) and loops written here, and under
`pypto` PyPTO 0.2.0's interpreter bit for bit (repeated indices, alpha on f32 and bf16,
dim 1 with an int64 index)."""

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
FILE = DATA / "jit_index_add.py"
IDX = np.array([1, 3, 1, 0, 5, 1, 3, 2], np.int32)  # row 1 three times, row 4 never


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _moe_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "expert_out": rng.standard_normal((8, 16)).astype(np.float32),
        "logit": rng.random(8).astype(np.float32),
        "row_index": rng.permutation(np.repeat(np.arange(4), 2)).astype(np.int32),
        "out": rng.standard_normal((4, 16)).astype(np.float32),
    }


def test_moe_combine_in_place_matches_torch_index_add() -> None:
    torch = pytest.importorskip("torch")
    ins = _moe_inputs(0)
    got = run(load_file(FILE, kernel="moe_combine"), {k: v.copy() for k, v in ins.items()})["out"]
    weighted = torch.from_numpy(ins["expert_out"]) * torch.from_numpy(ins["logit"])[:, None]
    want = torch.from_numpy(ins["out"].copy())
    want.index_add_(0, torch.from_numpy(ins["row_index"]).long(), weighted)
    assert np.array_equal(got, want.numpy())


def test_repeated_rows_add_in_index_order_bf16_alpha() -> None:
    """bf16 with alpha 0.3: alpha and each `source * alpha` rounded to bf16, then each
    sum (what 0.2.0 does, see the pypto test); row 4 untouched."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 16)) * 3).astype(ml_dtypes.bfloat16)
    src = (rng.standard_normal((8, 16)) * 3).astype(ml_dtypes.bfloat16)
    y = run(load_file(FILE, kernel="add_rows_alpha"), {"x": x, "idx": IDX, "src": src})["y"]
    want = x.astype(np.float32)
    a = float(ml_dtypes.bfloat16(0.3))
    for n, row in enumerate(IDX):
        scaled = (src[n].astype(np.float32) * np.float32(a)).astype(ml_dtypes.bfloat16)
        want[row] = (want[row] + scaled.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(_bits(y), _bits(want.astype(ml_dtypes.bfloat16)))
    assert np.array_equal(_bits(y[4]), _bits(x[4]))


def test_f32_alpha_is_one_rounding_per_update() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    src = rng.standard_normal((8, 16)).astype(np.float32)
    y = run(load_file(FILE, kernel="add_rows_alpha_f32"), {"x": x, "idx": IDX, "src": src})["y"]
    want = x.copy()
    a = float(np.float32(0.3))
    for n, row in enumerate(IDX):
        for j in range(16):  # Python floats are float64: the product and sum exact there
            want[row, j] = np.float32(float(want[row, j]) + float(src[n, j]) * a)
    assert np.array_equal(y, want)


def test_along_the_last_dim_with_an_int64_index() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-8, 8, (16, 6)).astype(np.float32)
    src = rng.integers(-8, 8, (16, 8)).astype(np.float32)
    idx = IDX.astype(np.int64)
    y = run(load_file(FILE, kernel="add_cols"), {"x": x, "idx": idx, "src": src})["y"]
    want = x.copy()
    for n, col in enumerate(idx):
        want[:, col] += src[:, n]
    assert np.array_equal(y, want)


def test_ir_in_place_write_back_and_emitted_source() -> None:
    module = load_file(FILE, kernel="moe_combine")
    (op,) = [o for o in module.walk() if isinstance(o, pto.IndexAddOp)]
    assert op.dim.value.data == 0 and op.alpha is None
    assembles = [o for o in module.walk() if isinstance(o, pto.AssembleOp)]
    assert [a.src for a in assembles] == [op.result]
    text = emit(load_file(FILE, kernel="add_rows_alpha"))
    assert "pypto.index_add(t, 0, t_2, src, alpha=0.3)" in text


@pytest.mark.parametrize("kernel", ["moe_combine", "add_rows_alpha", "add_cols"])
def test_emitted_kernels_read_back_to_the_same_bits(kernel: str, tmp_path: Path) -> None:
    again = tmp_path / f"{kernel}.py"
    again.write_text(emit(load_file(FILE, kernel=kernel)))
    rng = np.random.default_rng(4)
    if kernel == "moe_combine":
        ins = _moe_inputs(4)
    elif kernel == "add_cols":
        ins = {
            "x": rng.standard_normal((16, 6)).astype(np.float32),
            "idx": IDX.astype(np.int64),
            "src": rng.standard_normal((16, 8)).astype(np.float32),
        }
    else:
        ins = {
            "x": rng.standard_normal((6, 16)).astype(ml_dtypes.bfloat16),
            "idx": IDX,
            "src": rng.standard_normal((8, 16)).astype(ml_dtypes.bfloat16),
        }
    a = run(load_file(FILE, kernel=kernel), {k: v.copy() for k, v in ins.items()})
    b = run(load_file(again, kernel=kernel), {k: v.copy() for k, v in ins.items()})
    assert a.keys() == b.keys() and all(np.array_equal(_bits(a[k]), _bits(b[k])) for k in a)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("pypto.index_add_(out, 0, i, x[:, 0:3])", "source [4, 3] must be [4, 4]"),
        ("pypto.index_add_(out, 2, i, x)", "dim 2 is out of range"),
        ("pypto.index_add_(out, 0, i, x, alpha='a')", "alpha must be a finite Python number"),
        ("pypto.index_add_(out, 0, x, x)", "index"),
    ],
)
def test_bad_calls_are_located(call: str, message: str) -> None:
    source = f"""
import pypto

@pypto.frontend.jit
def k(x: pypto.Tensor([4, 4], pypto.DT_FP32), i: pypto.Tensor([4], pypto.DT_INT32), out: pypto.Tensor([4, 4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 4)
    {call}
"""
    with pytest.raises(TileirError) as info:
        load_source(source, "bad_index_add.py")
    text = str(info.value)
    assert text.startswith("bad_index_add.py:7:"), text
    assert message in text, text


@pytest.mark.pypto
@pytest.mark.parametrize(
    "kernel", ["moe_combine", "add_rows_alpha", "add_rows_alpha_f32", "add_cols"]
)
def test_pypto_020_adds_the_same_bits(kernel: str, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    rng = np.random.default_rng(5)
    if kernel == "moe_combine":
        ins = _moe_inputs(5)
        args = [
            ArgSpec("expert_out", (8, 16), "f32"),
            ArgSpec("logit", (8,), "f32"),
            ArgSpec("row_index", (8,), "i32"),
            ArgSpec("out", (4, 16), "f32"),
        ]
        outputs = ["out"]
    elif kernel == "add_cols":
        ins = {
            "x": rng.standard_normal((16, 6)).astype(np.float32),
            "idx": IDX.astype(np.int64),
            "src": rng.standard_normal((16, 8)).astype(np.float32),
        }
        args = [
            ArgSpec("x", (16, 6), "f32"),
            ArgSpec("idx", (8,), "i64"),
            ArgSpec("src", (16, 8), "f32"),
            ArgSpec("y", (16, 6), "f32"),
        ]
        outputs = ["y"]
    else:
        dt = ml_dtypes.bfloat16 if kernel == "add_rows_alpha" else np.float32
        name = "bf16" if kernel == "add_rows_alpha" else "f32"
        ins = {
            "x": (rng.standard_normal((6, 16)) * 3).astype(dt),
            "idx": IDX,
            "src": (rng.standard_normal((8, 16)) * 3).astype(dt),
        }
        args = [
            ArgSpec("x", (6, 16), name),
            ArgSpec("idx", (8,), "i32"),
            ArgSpec("src", (8, 16), name),
            ArgSpec("y", (6, 16), name),
        ]
        outputs = ["y"]
    theirs = run_kernel(FILE, kernel, args, ins, outputs=outputs, workdir=tmp_path)
    ours = run(load_file(FILE, kernel=kernel), {k: v.copy() for k, v in ins.items()})
    for name in outputs:
        assert np.array_equal(_bits(theirs[name]), _bits(ours[name])), name
