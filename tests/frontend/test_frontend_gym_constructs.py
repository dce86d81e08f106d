"""PyPTO-Gym constructs read by the frontend (issue 14): `pypto.ceildiv`, Python `min` on
index values, `pypto.cond`, `pypto.symbolic_scalar`, tensor methods, `TileOpFormat`,
`Tensor.set_cache_policy`, `pypto.set_matrix_size`, `pypto.platform.npuarch`,
`range(x.dim)`, a [1, 1] tile into a rank-1 tensor, the budget of translation-time loops,
`--kernel` on tileir-opt and tileir-run sizing outputs from `--arg`.

The kernels are in `data/jit/jit_gym_constructs.py`, written in the Gym's style; each
result is checked against numpy written here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import compile_kernel
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

DATA = Path(__file__).parent / "data" / "jit"
FILE = DATA / "jit_gym_constructs.py"


def _softmax_golden(x: np.ndarray, tile: int = 8) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[:tile] *= 2.0  # the first loop iteration (`pypto.is_loop_begin`) doubles its rows
    return p


@pytest.mark.parametrize("rows", [5, 8, 19])
def test_gym_constructs_compute_what_numpy_says(rows: int) -> None:
    module = load_file(FILE, kernel="row_softmax")
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 32)).astype(np.float32)
    w = rng.standard_normal((4, 16)).astype(np.float32)
    out = compile_kernel(module)(
        {"x": x, "w": w, "y": np.zeros_like(x), "total": np.zeros(1, np.float32)}
    )
    np.testing.assert_allclose(out["y"], _softmax_golden(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["total"], [w.astype(np.float64).sum()], rtol=1e-5)


def test_compiler_options_are_kept_in_the_ir_and_written_back() -> None:
    module = load_file(FILE, kernel="row_softmax")
    (k,) = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    policies = k.attributes["cache_policies"].data["x"].data
    assert list(policies) == ["pypto.CachePolicy.NONE_CACHEABLE"]
    assert k.attributes["tensor_formats"].data["x"].data == "pypto.TileOpFormat.TILEOP_ND"
    sizes = [op for op in k.walk() if isinstance(op, pto.SetOptionsOp)]
    assert [
        (op.kind.data, [a.value.data for a in op.options.data["size"].data]) for op in sizes
    ] == [("matrix_size", [8, 32, 16])]
    # npuarch is DAV_2201 (PyPTO 0.2.0 on the CPU): the `else` branch's tile shape
    vec = [op for op in k.walk() if isinstance(op, pto.SetVecTileShapesOp)]
    assert [list(op.shape.get_values()) for op in vec] == [[8, 32]]
    text = emit(module)
    ast.parse(text)
    assert "x.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)" in text
    assert "pypto.set_matrix_size(size=[8, 32, 16])" in text
    assert "format=pypto.TileOpFormat.TILEOP_ND" in text


def test_emitted_kernel_reads_back_to_the_same_numbers() -> None:
    module = load_file(FILE, kernel="row_softmax")
    again = DATA.parent / "_emitted_gym_constructs.py"
    try:
        again.write_text(emit(module))
        back = load_file(again, kernel="row_softmax")
    finally:
        again.unlink(missing_ok=True)
    x = np.random.default_rng(3).standard_normal((11, 32)).astype(np.float32)
    w = np.ones((4, 16), np.float32)
    out = compile_kernel(back)(
        {"x": x, "w": w, "y": np.zeros_like(x), "total": np.zeros(1, np.float32)}
    )
    np.testing.assert_allclose(out["y"], _softmax_golden(x), rtol=1e-5, atol=1e-6)
    assert out["total"][0] == 64.0


def test_symbolic_scalar_needs_a_value() -> None:
    src = (
        "import pypto\n\n@pypto.frontend.jit\n"
        "def k(x: pypto.Tensor([8], pypto.DT_FP32), out: pypto.Tensor([8], pypto.DT_FP32)):\n"
        "    n = pypto.symbolic_scalar('n')\n    out[:] = x\n"
    )
    from frontends.pypto import load_source

    with pytest.raises(TileirError, match=r"k\.py:5:9: error: pypto\.symbolic_scalar\('n'\)"):
        load_source(src, "k.py")


def test_translation_time_loops_have_a_budget() -> None:
    with pytest.raises(TileirError) as e:
        load_file(FILE, kernel="traced_forever")
    text = str(e.value)
    assert "jit_gym_constructs.py:" in text and "for _ in range(10**9)" in text
    assert "translation-time Python loops ran more than" in text
    assert "pypto.loop" in text


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_tileir_opt_kernel_selects_one_kernel_so_arg_applies_to_it() -> None:
    # `scale` is a parameter of scale_rows only; `x=3x16xf32` would not fit row_softmax's x
    p = _cli(
        "tileir.tools.opt", str(FILE), "--kernel", "scale_rows",
        "--arg", "x=3x16xf32", "--arg", "out=3x16xf32", "--arg", "scale=0.5",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("pto.kernel @") == 1
    assert "pto.kernel @scale_rows(%x: memref<3x16xf32>, %out: memref<3x16xf32>)" in p.stdout
    assert "5.000000e-01" in p.stdout
    bad = _cli("tileir.tools.opt", str(FILE), "--kernel", "nope")
    assert bad.returncode != 0 and "no @pypto.frontend.jit kernel named 'nope'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_tileir_run_sizes_a_dynamic_output_from_arg(tmp_path: Path) -> None:
    x = np.random.default_rng(0).standard_normal((13, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", np.ones((4, 16), np.float32))
    common = [
        "tileir.tools.run", str(FILE), "--kernel", "row_softmax",
        "--input", f"x={tmp_path / 'x.npy'}", "--input", f"w={tmp_path / 'w.npy'}",
    ]  # fmt: skip
    missing = _cli(*common, "--output-dir", str(tmp_path / "a"))
    assert missing.returncode != 0
    assert "cannot size output 'y'" in missing.stderr
    assert "--arg y=AxBx<dtype>" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    ok = _cli(*common, "--arg", "y=13x32xf32", "--output-dir", str(tmp_path / "b"))
    assert ok.returncode == 0, ok.stderr
    np.testing.assert_allclose(np.load(tmp_path / "b" / "y.npy"), _softmax_golden(x), rtol=1e-5)


def test_relative_imports_and_op_wrapper_helpers() -> None:
    module = load_file(
        DATA / "relpkg" / "relative_kernel.py", args={"x": "8x16xf32", "out": "8x16xf32"}
    )
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)
    out = compile_kernel(module)({"x": x, "out": np.zeros_like(x)})["out"]
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64) - 1.0), rtol=1e-5)
    assert not [m for m in sys.modules if m.startswith("_tileir_kernel_")]


def test_a_kernel_in_a_package_imports_it_by_name() -> None:
    module = load_file(DATA / "pkgroot" / "gymmodel" / "gym_scaled.py")
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    np.testing.assert_array_equal(compile_kernel(module)({"x": x})["out"], x * 3.0)
    assert "gymmodel" not in sys.modules and "gymmodel.gym_scales" not in sys.modules


def test_tensor_constructor_in_a_kernel_makes_a_workspace() -> None:
    module = load_file(
        FILE, kernel="scale_rows", args={"x": "3x16xf32", "out": "3x16xf32", "scale": 0.25}
    )
    assert [op.result.type.get_shape() for op in module.walk() if isinstance(op, pto.TensorOp)] == [
        (3, 16)
    ]
    x = np.random.default_rng(4).standard_normal((3, 16)).astype(np.float32)
    np.testing.assert_allclose(compile_kernel(module)({"x": x})["out"], x * 0.25, rtol=1e-6)


def test_rms_norm_composite_matches_numpy() -> None:
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 64)).astype(bf16)
    w = rng.standard_normal(64).astype(bf16)
    module = load_file(
        DATA / "jit_rms_norm.py", args={"hidden_states": x, "weight": w, "output": x, "eps": 1e-5}
    )
    out = compile_kernel(module)({"hidden_states": x, "weight": w})["output"]
    x64 = x.astype(np.float64)
    golden = x64 / np.sqrt((x64**2).mean(axis=-1, keepdims=True) + 1e-5) * w.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), golden, rtol=2**-7, atol=2e-2)
    ast.parse(emit(module))


PYTHON_VALUES = """\
import pypto


def factors(n):
    # a helper the kernel calls at trace time: set and dict comprehensions, two fors
    pows = {1 << i for i in range(8) if (1 << i) <= n}
    table = {(a, b): a * b for a in (1, 2) for b in (3, 4)}
    assert table[(2, 4)] == 8 and sum(v for v in table.values()) == 21
    return sorted(frozenset(pows), reverse=True)


@pypto.frontend.jit
def rows(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 16)
    for i in pypto.loop(8, name="L", idx_name="i", unroll=True, unroll_list=set(factors(4))):
        row = (i + 1).min(8) - 1
        row.as_variable()
        out[row : row + 1, :] = pypto.view(x, [1, 16], [row, 0]) * 2.0
"""


def test_python_comprehensions_sets_and_an_ignored_loop_keyword(tmp_path) -> None:
    """PyPTO runs helpers in Python and reads loop keywords with kwargs.get (an unknown
    one is ignored): tileir reads the same values, and warns at the keyword's call;
    `s.as_variable()` on a symbolic scalar is a code-generation hint, no value."""
    from tileir.diagnostics import TileirWarning

    with pytest.warns(TileirWarning, match=r"rows\.py:15:\d+: warning: pypto\.loop\(\) ignores"):
        module = load_source(PYTHON_VALUES, "rows.py")
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    assert loop.unroll_list is not None and list(loop.unroll_list.get_values()) == [4, 2, 1]
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    np.testing.assert_array_equal(run_numpy(module, {"x": x})["out"], x * 2)


CONDITION_AS_NUMBER = """\
import pypto


@pypto.frontend.jit
def k(
    n: pypto.Tensor([4], pypto.DT_INT32),
    x: pypto.Tensor([4, 16], pypto.DT_FP32),
    out: pypto.Tensor([4, 16], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 16)
    for b in pypto.loop(4, name="B", idx_name="b"):
        m = n[b]
        prev = n[(b - 1).max(0)] * (b > 0)
        out[b : b + 1, :] = pypto.view(x, [1, 16], [b, 0]) + 0.0
        for _ in pypto.loop(m < 3, name="SMALL", idx_name="u"):
            out[b : b + 1, :] = pypto.view(x, [1, 16], [b, 0]) * 2.0 + prev
        for _ in pypto.loop((m > 4) * (b > 0), name="BIG", idx_name="v"):
            out[b : b + 1, :] = pypto.view(x, [1, 16], [b, 0]) - 1.0
"""


def test_a_comparison_of_index_values_used_as_a_number() -> None:
    """PyPTO's comparison of symbolic scalars is a 0 / 1 symbolic scalar: a loop bound
    (`pypto.loop(m < 3)` runs once or not at all), a factor (`x * (b > 0)`) and the
    product of two (`(m > 4) * (b > 0)`); the written-back kernel reads back to the same
    numbers."""
    n = np.array([5, 1, 2, 7], np.int32)
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    want = x.copy()
    for b in range(4):
        if n[b] < 3:
            want[b] = x[b] * 2 + (n[b - 1] if b > 0 else 0)
        if n[b] > 4 and b > 0:
            want[b] = x[b] - 1
    module = load_source(CONDITION_AS_NUMBER, "cond.py")
    np.testing.assert_array_equal(run_numpy(module, {"n": n, "x": x})["out"], want)
    back = load_source(emit(module), "cond_emitted.py")
    np.testing.assert_array_equal(run_numpy(back, {"n": n, "x": x})["out"], want)


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_takes_comparisons_as_loop_bounds(source: str, tmp_path: Path) -> None:
    """0.2.0 runs `pypto.loop(m < 3)` and `pypto.loop((m > 4) * (b > 0))` alike (its
    tile + SymbolicScalar `+ prev` is outside what it runs: an Element TypeError)."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    text = CONDITION_AS_NUMBER.replace(" * 2.0 + prev", " * 2.0")
    if source == "emitted":
        text = emit(load_source(text, "cond.py"))
    path = tmp_path / "cond.py"
    path.write_text(text)
    n = np.array([5, 1, 2, 7], np.int32)
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    want = x.copy()
    want[1:3] = x[1:3] * 2  # n < 3
    want[3] = x[3] - 1  # n > 4 and b > 0
    args = [ArgSpec("n", (4,), "i32"), ArgSpec("x", (4, 16), "f32")]
    args.append(ArgSpec("out", (4, 16), "f32"))
    ins = {"n": n, "x": x, "out": np.zeros_like(x)}
    got = run_kernel(path, "k", args, ins, outputs=["out"])["out"]
    np.testing.assert_array_equal(np.asarray(got), want)


CUBE_K_SPLIT = """\
import pypto


@pypto.frontend.jit
def mm(
    a: pypto.Tensor([16, 64], pypto.DT_FP16),
    b: pypto.Tensor([64, 32], pypto.DT_FP16),
    out: pypto.Tensor([16, 32], pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([16, 16], [32, 64, 32], [32, 32])
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)
"""


def _mm_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (16, 64)).astype(np.float16)
    return {"a": a, "b": rng.integers(-3, 4, (64, 32)).astype(np.float16)}


def test_cube_tile_k_may_give_a_and_bs_l1_sizes_apart() -> None:
    """`k = [kL0, kL1a, kL1b]` (PyPTO 0.2.0's CubeTile takes 2 or 3): kept, written back,
    and the passes read [kL0, kL1a] where they need a pair."""
    from tileir.passes import apply_pipeline

    module = load_source(CUBE_K_SPLIT, "mm.py")
    cube = next(op for op in module.walk() if isinstance(op, pto.SetCubeTileShapesOp))
    assert list(cube.k.get_values()) == [32, 64, 32] and cube.k_pair == (32, 64)
    assert "pypto.set_cube_tile_shapes([16, 16], [32, 64, 32], [32, 32])" in emit(module)
    apply_pipeline(module, "default", verify_each=True)
    inputs = _mm_inputs()
    want = inputs["a"].astype(np.float32) @ inputs["b"].astype(np.float32)  # exact: small ints
    np.testing.assert_array_equal(run_numpy(module, inputs)["out"], want)


@pytest.mark.pypto
def test_real_pypto_takes_the_three_sizes_of_k(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "mm.py"
    path.write_text(emit(load_source(CUBE_K_SPLIT, "mm.py")))
    args = [ArgSpec("a", (16, 64), "f16"), ArgSpec("b", (64, 32), "f16")]
    args.append(ArgSpec("out", (16, 32), "f32"))
    inputs = _mm_inputs()
    got = run_kernel(path, "mm", args, inputs)
    want = inputs["a"].astype(np.float32) @ inputs["b"].astype(np.float32)
    np.testing.assert_array_equal(got["out"], want)


ATOMIC_ADD = """\
import pypto


@pypto.frontend.jit
def k(x: pypto.Tensor([6, 16], pypto.DT_FP32), out: pypto.Tensor([4, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 16)
    for i in pypto.loop(3, name="L", idx_name="i"):
        pypto.atomic_add(pypto.view(x, [2, 16], [i * 2, 0]), [i % 2 * 2, 0], out)
"""


def test_atomic_add_accumulates_into_overlapping_windows_in_order() -> None:
    """`dst[window] += src` (newer PyPTO's atomic_add, not in 0.2.0): read as a view, an
    add and an assemble, so a later iteration adds onto an earlier one's sum."""
    module = load_source(ATOMIC_ADD, "atomic.py")
    x = np.random.default_rng(4).standard_normal((6, 16)).astype(np.float32)
    start = np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32)
    want = start.copy()
    for i in range(3):
        r = i % 2 * 2
        want[r : r + 2] = want[r : r + 2] + x[2 * i : 2 * i + 2]
    got = run_numpy(module, {"x": x, "out": start.copy()})["out"]
    np.testing.assert_array_equal(got, want)
    text = emit(module)
    assert "atomic_add" not in text and "pypto.assemble(" in text


ONLINE_SOFTMAX = """\
import pypto


@pypto.frontend.jit
def attn_cols(
    s: pypto.Tensor([64, 8], pypto.DT_FP32),
    v: pypto.Tensor([16, 32], pypto.DT_BF16),
    out: pypto.Tensor([16, 8], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(32, 8)
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [8, 8])
    m = l = o = None
    for j in range(2):
        blk = pypto.view(s, [32, 8], [j * 32, 0])
        p, cm, cs = pypto.experimental.online_softmax(blk, 2.0)
        vj = pypto.view(v, [16, 32], [0, 0])
        co = pypto.matmul(vj, p, pypto.DT_FP32)
        if m is None:
            m, l, o = cm, cs, co
        else:
            m, l, o = pypto.experimental.online_softmax_update(m, l, o, cm, cs, co)
    out[:] = o / l
"""


def test_online_softmax_and_its_update_compute_softmax_by_columns() -> None:
    """The docs' definitions (newer PyPTO, Ascend 950 only): the two blocks' merged state,
    normalised, is the column softmax of the scaled scores times V, up to the bf16 of the
    exponentials; and the statistics are exactly the formulas in float32."""
    module = load_source(ONLINE_SOFTMAX, "attn.py")
    rng = np.random.default_rng(7)
    s = rng.standard_normal((64, 8)).astype(np.float32)
    v = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    got = run_numpy(module, {"s": s, "v": v})["out"]
    x = s.astype(np.float64) * 2.0
    p = np.exp(x - x.max(axis=0))
    p /= p.sum(axis=0)
    # both blocks use the same V window (rows 0:32 of the kernel's view): V @ softmax
    want = v.astype(np.float64) @ (p[:32] + p[32:])
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


TAIL_ACCUMULATOR = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    n = x.shape[0]
    pypto.set_vec_tile_shapes(8, 16)
    acc = pypto.full([8, 16], 0.0, pypto.DT_FP32, valid_shape=[n, 16])
    for c in range(2):
        v = pypto.view(x, [8, 16], [0, 0], valid_shape=[n, 16]) * float(c + 1)
        if c == 0:
            acc[:] = v
        else:
            acc[:] = acc + v
    pypto.assemble(acc * 2.0, [0, 0], out)
"""


@pytest.mark.parametrize("rows", [3, 8])
def test_a_tail_tile_written_by_slices_keeps_its_valid_shape(rows: int) -> None:
    """`acc[:] = ...` moves a tile into a workspace (PyPTO's tensors are memory); a tail
    tile's reads from there keep its valid rows, so the assemble writes only those (it
    wrote all 8 rows past the end of `out` before)."""
    module = load_source(TAIL_ACCUMULATOR, "tail.py")
    x = np.random.default_rng(rows).standard_normal((rows, 16)).astype(np.float32)
    got = run_numpy(module, {"x": x, "out": np.zeros_like(x)})["out"]
    np.testing.assert_array_equal(got, (x + x * np.float32(2)) * np.float32(2))


CONFIG_MODULE = """\
from dataclasses import dataclass


@dataclass
class Tiles:
    rows: int
    scale: float = 2.0
"""

CONFIG_KERNEL = """\
import pypto


@pypto.frontend.jit
def k(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32), cfg=None):
    pypto.set_vec_tile_shapes(cfg.rows, 16)
    for i in pypto.loop(8 // cfg.rows, name="L", idx_name="i"):
        t = pypto.view(x, [cfg.rows, 16], [i * cfg.rows, 0])
        pypto.assemble(t * cfg.scale, [i * cfg.rows, 0], out)
"""


def test_a_config_class_from_a_module_the_kernel_does_not_import(tmp_path: Path) -> None:
    """`--arg "cfg=tiles_cfg.Tiles(rows=4)"`: the class lives beside the kernel file, in a
    module only the file's test imports; the dotted name imports it (as the test would)."""
    from tileir.diagnostics import TileirError

    (tmp_path / "tiles_cfg.py").write_text(CONFIG_MODULE)
    (tmp_path / "kern.py").write_text(CONFIG_KERNEL)
    module = load_file(tmp_path / "kern.py", args={"cfg": "tiles_cfg.Tiles(rows=4, scale=3.0)"})
    vec = next(op for op in module.walk() if isinstance(op, pto.SetVecTileShapesOp))
    assert list(vec.shape.get_values()) == [4, 16]
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    np.testing.assert_array_equal(run_numpy(module, {"x": x})["out"], x * np.float32(3))
    # a name that imports nothing stays text, and the kernel says what it got
    with pytest.raises(TileirError, match="cfg"):
        load_file(tmp_path / "kern.py", args={"cfg": "no_such_mod.Tiles(rows=4)"})


TRANSPOSED_BMM = """\
import pypto


@pypto.frontend.jit
def k(
    a: pypto.Tensor([16, 2, 32], pypto.DT_BF16),
    b: pypto.Tensor([2, 32, 16], pypto.DT_BF16),
    out: pypto.Tensor([16, 2, 16], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(16, 2, 32)
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
    out[:] = pypto.experimental.transposed_batchmatmul(a, b, pypto.DT_BF16)
"""


def test_transposed_batchmatmul_is_a_batched_matmul_between_two_transposes() -> None:
    """(M, B, K) x (B, K, N) -> (M, B, N), the docs' three steps; small integers, so the
    float32 sums and the bf16 result are exact against numpy's einsum."""
    module = load_source(TRANSPOSED_BMM, "tbmm.py")
    rng = np.random.default_rng(9)
    a = rng.integers(-2, 3, (16, 2, 32)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-2, 3, (2, 32, 16)).astype(ml_dtypes.bfloat16)
    got = run_numpy(module, {"a": a, "b": b})["out"]
    want = np.einsum("mbk,bkn->mbn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(got.astype(np.float64), want)


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_agrees_on_transposed_batchmatmul(source: str, tmp_path: Path) -> None:
    """0.2.0 has the function: the kernel as written (its op) and as tileir writes it back
    (the two transposes and the matmul) compute the same exact numbers there."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "tbmm.py"
    text = TRANSPOSED_BMM if source == "as written" else emit(load_source(TRANSPOSED_BMM, "t.py"))
    path.write_text(text)
    rng = np.random.default_rng(9)
    a = rng.integers(-2, 3, (16, 2, 32)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-2, 3, (2, 32, 16)).astype(ml_dtypes.bfloat16)
    args = [ArgSpec("a", (16, 2, 32), "bf16"), ArgSpec("b", (2, 32, 16), "bf16")]
    args.append(ArgSpec("out", (16, 2, 16), "bf16"))
    got = run_kernel(path, "k", args, {"a": a, "b": b})["out"]
    want = np.einsum("mbk,bkn->mbn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want)


TILE_SHAPE_QUERIES = """\
import pypto


def scaled(x, factor):
    shapes = pypto.get_vec_tile_shapes()
    assert len(shapes) > 0, "set a vec tile shape first"
    rows, cols = shapes
    return pypto.mul(pypto.view(x, [rows, cols], [0, 0]), factor)


@pypto.frontend.jit
def k(
    x: pypto.Tensor([8, 32], pypto.DT_FP32),
    out: pypto.Tensor([4, 16], pypto.DT_FP32),
    cube: pypto.Tensor([1, 8], pypto.DT_FP32),
):
    before = pypto.get_vec_tile_shapes()
    m0, k0, n0, split0 = pypto.get_cube_tile_shapes()
    pypto.set_vec_tile_shapes(4, 16)
    pypto.set_cube_tile_shapes([16, 32], [64, 128], [16, 16])
    m, kk, n, split = pypto.get_cube_tile_shapes()
    out[:] = scaled(x, float(len(before) + 1))
    pypto.set_vec_tile_shapes(1, 8)
    cube[:] = pypto.full([1, 8], float(m[1] + kk[2] + n[0] + int(split) + k0[2] + split0), pypto.DT_FP32)
"""


def test_tile_shape_queries_return_the_latest_setting() -> None:
    """PyPTO 0.2.0 returns [] / ([0, 0], [0, 0, 0], [0, 0], False) before any setting and
    a [k0, k1] k as [k0, k1, k1] (measured); each value is a Python value at trace time."""
    module = load_source(TILE_SHAPE_QUERIES, "tsq.py")
    x = np.arange(256, dtype=np.float32).reshape(8, 32)
    got = run_numpy(module, {"x": x})
    np.testing.assert_array_equal(got["out"], x[:4, :16] * 1.0)  # `before` was []
    np.testing.assert_array_equal(got["cube"], np.full((1, 8), 32 + 128 + 16 + 0 + 0 + 0))


@pytest.mark.pypto
def test_real_pypto_agrees_on_tile_shape_queries(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    x = np.arange(256, dtype=np.float32).reshape(8, 32)
    args = [ArgSpec("x", (8, 32), "f32"), ArgSpec("out", (4, 16), "f32")]
    args += [ArgSpec("cube", (1, 8), "f32")]
    path = tmp_path / "tsq.py"
    path.write_text(TILE_SHAPE_QUERIES)
    got = run_kernel(path, "k", args, {"x": x})
    np.testing.assert_array_equal(np.asarray(got["out"]), x[:4, :16])
    np.testing.assert_array_equal(np.asarray(got["cube"]), np.full((1, 8), 176.0))
