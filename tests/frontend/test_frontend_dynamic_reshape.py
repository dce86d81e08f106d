"""`pypto.reshape(t, shape, inplace=True)` of a tensor in memory with a dynamic shape
(issue 14: the flattening the Gym's attention, deepseek and mhc kernels do first): read
into `pto.reshape_mem`, an alias of the same memory, which views read and assembles write.
The kernels (`data/jit/jit_dynamic_reshape.py`) are checked against numpy written here,
after each pass that reasons about memory, as tileir writes them back for PyPTO, and
(marker `pypto`) on the real pypto 0.2.0."""

from __future__ import annotations

import ast
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import compile_kernel, run
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.passes import apply_pipeline

FILE = Path(__file__).parent / "data" / "jit" / "jit_dynamic_reshape.py"
BF16 = np.dtype(ml_dtypes.bfloat16)


def _head_rms_inputs(tokens: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "q": rng.standard_normal((tokens, 4, 32)).astype(BF16),
        "gamma": rng.uniform(0.5, 1.5, 32).astype(np.float32),
        # outputs: their dynamic dims are their own symbols (as in PyPTO), given by a call
        "out": np.full((tokens, 128), np.nan, np.float32),
        "head_max": np.full((tokens * 4, 1), np.nan, np.float32),
    }


def _head_rms_golden(q: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (token, head) row of 32 normalised by its root mean square, times gamma; the
    output holds a token's 4 heads side by side; then the largest value of each head."""
    tokens = q.shape[0]
    out = np.empty((tokens, 128))
    head_max = np.empty((tokens * 4, 1))
    for t in range(tokens):
        for h in range(4):
            row = q[t, h].astype(np.float64)
            rms = np.sqrt(np.mean(row * row) + 1e-6)
            out[t, h * 32 : (h + 1) * 32] = row / rms * gamma
            head_max[t * 4 + h, 0] = max(out[t, h * 32 : (h + 1) * 32])
    return out, head_max


def test_dynamic_reshapes_of_memory_are_aliases_and_static_ones_stay_tiles() -> None:
    module = load_file(FILE, kernel="head_rms")
    aliases = [op for op in module.walk() if isinstance(op, pto.ReshapeMemOp)]
    assert [(op.source.name_hint, str(op.result.type)) for op in aliases] == [
        ("q", "memref<?x32xbf16>"),
        ("out", "memref<?x32xf32>"),
    ]
    # gamma (static) is read whole and the tile reshaped, as before
    tile_reshape = next(op for op in module.walk() if isinstance(op, pto.ReshapeOp))
    assert str(tile_reshape.result.type) == "tensor<1x32xf32>"
    assert pto.memory_root(aliases[1].result) is aliases[1].source


@pytest.mark.parametrize("tokens", [1, 2, 3, 5])
def test_head_rms_computes_what_numpy_says(tokens: int) -> None:
    inputs = _head_rms_inputs(tokens, tokens)
    plan = compile_kernel(load_file(FILE, kernel="head_rms"))
    assert sorted(plan.outputs) == ["head_max", "out"]
    out = plan(inputs)
    golden, head_max = _head_rms_golden(inputs["q"], inputs["gamma"])
    np.testing.assert_allclose(out["out"], golden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["head_max"], head_max, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pipeline", ["", "default"])
def test_writes_through_an_alias_write_the_tensor(pipeline: str) -> None:
    """The IR's meaning (numpy: a view of the same memory), through the passes too."""
    module = load_file(FILE, kernel="write_through_alias")
    if pipeline:
        apply_pipeline(module, pipeline, verify_each=True)
    x = np.random.default_rng(3).standard_normal((6, 16)).astype(np.float32)
    y = compile_kernel(module)({"x": x, "y": np.zeros((6, 4, 4), np.float32)})["y"]
    np.testing.assert_array_equal(y, (x + np.float32(1.0)).reshape(6, 4, 4))


def test_writes_through_an_alias_are_refused_by_the_pypto_writer() -> None:
    """PyPTO 0.2.0 loses them (the output stays zeros; checked on the real pypto below)."""
    with pytest.raises(TileirError) as e:
        emit(load_file(FILE, kernel="write_through_alias"))
    assert "jit_dynamic_reshape.py:70:9: error: 'pto.assemble' writes through an " in str(e.value)
    assert "PyPTO 0.2.0 compiles but loses" in str(e.value)


@pytest.mark.parametrize(
    "pipeline",
    [
        "default",
        "loop-fusion",
        "sink-invariants",
        "coarsen{factor=2}",
        "loop-unroll{factors=4,2,1},stitch{interleave=true max-functions=4}",
        "vc-split,semantic-labels,loop-fusion,loop-unroll{factors=2,1},stitch",
    ],
)
def test_passes_keep_the_numbers(pipeline: str) -> None:
    inputs = _head_rms_inputs(5, 7)
    module = load_file(FILE, kernel="head_rms")
    apply_pipeline(module, pipeline, verify_each=True)
    out = run(module, inputs, "head_rms")
    golden, head_max = _head_rms_golden(inputs["q"], inputs["gamma"])
    np.testing.assert_allclose(out["out"], golden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["head_max"], head_max, rtol=1e-5, atol=1e-6)


def test_flat_read_of_a_rank_3_input() -> None:
    x = np.random.default_rng(4).standard_normal((3, 4, 4)).astype(np.float32)
    y = np.full((3, 16), np.nan, np.float32)
    out = run(load_file(FILE, kernel="flat_read"), {"x": x, "y": y}, "flat_read")
    np.testing.assert_array_equal(out["y"], x.reshape(3, 16) + np.float32(1.0))


def _col_softmax_golden(x: np.ndarray) -> np.ndarray:
    """Each 4x4 matrix, in float64: a softmax down every column, then each entry times
    the sum of its row."""
    out = np.empty(x.shape)
    for k, m in enumerate(x.astype(np.float64)):
        e = np.exp(m - m.max(axis=0))
        e = e / e.sum(axis=0)
        out[k] = e * e.sum(axis=1)[:, None]
    return out


# 16: one chunk; 32: a second chunk of the 1-loop (its rows once came out as zeros in a
# run that gave the kernel 16 input rows); 80: a 4-chunk then a 1-chunk; 160: 4+4+1+1
@pytest.mark.parametrize("pipeline", [None, "default"])
@pytest.mark.parametrize("tokens", [16, 32, 80, 160])
def test_chunks_turned_by_transpose_and_tile_reshape_write_every_row(
    tokens: int, pipeline: str | None
) -> None:
    x = np.random.default_rng(tokens).standard_normal((tokens, 4, 4)).astype(np.float32)
    module = load_file(FILE, kernel="chunk_col_softmax")
    if pipeline:
        apply_pipeline(module, pipeline, verify_each=True)
    out = run(module, {"x": x, "out": np.full_like(x, np.nan)}, "chunk_col_softmax")["out"]
    np.testing.assert_allclose(out, _col_softmax_golden(x), rtol=1e-5, atol=1e-6)


def test_a_tail_chunk_whose_reshapes_drop_the_valid_shape_is_a_located_error() -> None:
    """24 rows: the second chunk's tile is fully valid after the reshapes without
    valid_shape (PyPTO's rule), 16 rows at offset 16 of 24; PyPTO 0.2.0 stops there too
    (ASSEMBLEOpError, below)."""
    x = np.zeros((24, 4, 4), np.float32)
    with pytest.raises(TileirError) as e:
        run(load_file(FILE, kernel="chunk_col_softmax"), {"x": x, "out": x}, "chunk_col_softmax")
    assert "jit_dynamic_reshape.py:107:9: error: 'pto.assemble'" in str(e.value)
    assert "offsets [16, 0, 0] valid_shape [16, 4, 4] goes outside" in str(e.value)


@pytest.mark.parametrize("kernel", ["head_rms", "flat_read"])
def test_emitted_pypto_writes_the_inplace_reshape(kernel: str) -> None:
    """(The emitted text reads back to the same IR: test_emitter_roundtrip.py.)"""
    text = emit(load_file(FILE, kernel=kernel))
    ast.parse(text)
    assert text.count("inplace=True)") == (2 if kernel == "head_rms" else 1)
    assert "pypto.reshape(q, [rows, 32], inplace=True)" in text or kernel != "head_rms"


HEADER = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([pypto.DYNAMIC, 4, 8], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
):
    t = x.shape[0]
"""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "x2 = pypto.reshape(x, [t, 32])",
            "k.py:10:10: error: a reshape of a tensor in memory with a dynamic shape must be "
            "inplace=True",
        ),
        (
            "x2 = pypto.reshape(x, [-1, 32], inplace=True)",
            "k.py:10:10: error: a -1 in a reshape needs static sizes",
        ),
        (
            "x2 = pypto.reshape(x, [t, 32], valid_shape=[t, 32], inplace=True)",
            "k.py:10:10: error: valid_shape on an inplace reshape of a tensor in memory",
        ),
        (
            "x2 = pypto.reshape(x, [t, 0], inplace=True)",
            "k.py:10:10: error: pypto.reshape shape [<index>, 0] needs sizes > 0",
        ),
        (
            "v = pypto.view(x, [2, 4, 8], [0, 0, 0])\n    r = pypto.reshape(v, [t, 32])",
            "k.py:11:9: error: a reshape with a dynamic shape must be inplace=True",
        ),
    ],
)
def test_bad_dynamic_reshapes_are_located_errors(line: str, message: str) -> None:
    with pytest.raises(TileirError) as e:
        load_source(HEADER + "    " + line + "\n", "k.py")
    assert message in str(e.value)
    assert "Traceback" not in str(e.value)


def test_static_memory_with_dynamic_sizes_checks_what_it_can() -> None:
    static = HEADER.replace("pypto.DYNAMIC, 4, 8", "2, 4, 8")
    bad = static + "    x2 = pypto.reshape(x, [out.shape[0], 3], inplace=True)\n"
    with pytest.raises(TileirError, match=r"k\.py:10:10: error: cannot reshape \[2, 4, 8\] to"):
        load_source(bad, "k.py")
    good = static + "    x2 = pypto.reshape(x, [out.shape[0], 8], inplace=True)\n"
    assert [op for op in load_source(good, "k.py").walk() if isinstance(op, pto.ReshapeMemOp)]
    # all static: read whole into a tile, as before (PyPTO's own count message)
    tile = static + "    x2 = pypto.reshape(x, [t, 3], inplace=True)\n"
    with pytest.raises(TileirError, match=r"k\.py:10:10: error: .*changes the element count"):
        load_source(tile, "k.py")


def _real(kernel: str, path: Path, tmp_path: Path, tokens: int = 3) -> dict[str, np.ndarray]:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    if kernel == "head_rms":
        inputs = _head_rms_inputs(tokens, 5)
        args = [
            ArgSpec("q", (tokens, 4, 32), "bf16", (0,)),
            ArgSpec("gamma", (32,), "f32"),
            ArgSpec("out", (tokens, 128), "f32", (0,)),
            ArgSpec("head_max", (tokens * 4, 1), "f32", (0,)),
        ]
        feed = {"q": inputs["q"], "gamma": inputs["gamma"]}
        return feed | run_kernel(path, kernel, args, feed, workdir=tmp_path / kernel)
    x = np.random.default_rng(6).standard_normal((tokens, 16)).astype(np.float32)
    if kernel == "flat_read":
        x = x.reshape(tokens, 4, 4)
        args = [ArgSpec("x", (tokens, 4, 4), "f32", (0,)), ArgSpec("y", (tokens, 16), "f32", (0,))]
    else:
        args = [ArgSpec("x", (tokens, 16), "f32", (0,)), ArgSpec("y", (tokens, 4, 4), "f32", (0,))]
    return {"x": x} | run_kernel(path, kernel, args, {"x": x}, workdir=tmp_path / kernel)


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
@pytest.mark.parametrize("kernel", ["head_rms", "flat_read"])
def test_real_pypto_computes_the_same(kernel: str, source: str, tmp_path: Path) -> None:
    path = FILE
    if source == "emitted":  # as `tileir-opt FILE -p default -t pypto` writes it
        module = load_file(FILE, kernel=kernel)
        apply_pipeline(module, "default")
        path = tmp_path / f"{kernel}_emitted.py"
        path.write_text(emit(module))
    got = _real(kernel, path, tmp_path)
    if kernel == "head_rms":
        golden, head_max = _head_rms_golden(got["q"], got["gamma"])
        np.testing.assert_allclose(got["out"], golden, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got["head_max"], head_max, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(got["y"], got["x"].reshape(-1, 16) + 1.0, rtol=1e-6)


@pytest.mark.pypto
def test_real_pypto_loses_writes_through_an_inplace_reshape(tmp_path: Path) -> None:
    """Why `-t pypto` refuses an alias destination: 0.2.0 compiles and runs the kernel,
    and its output stays zeros."""
    got = _real("write_through_alias", FILE, tmp_path)
    assert not np.any(got["y"])
    assert np.any(got["x"] + 1.0)


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_chunks_agree(source: str, tmp_path: Path) -> None:
    """80 rows match the golden; 24 rows fail at the same assemble as in tileir."""
    from tileir.backends.pypto.harness import ArgSpec, PyptoError, run_kernel

    path = FILE
    if source == "emitted":
        module = load_file(FILE, kernel="chunk_col_softmax")
        apply_pipeline(module, "default")
        path = tmp_path / "chunk_col_softmax_emitted.py"
        path.write_text(emit(module))
    for tokens in (80, 24):
        x = np.random.default_rng(tokens).standard_normal((tokens, 4, 4)).astype(np.float32)
        args = [ArgSpec(n, (tokens, 4, 4), "f32", (0,)) for n in ("x", "out")]
        work = tmp_path / f"rows{tokens}"
        if tokens == 24:
            with pytest.raises(PyptoError, match="ASSEMBLEOpError"):
                run_kernel(path, "chunk_col_softmax", args, {"x": x}, workdir=work)
            continue
        got = run_kernel(path, "chunk_col_softmax", args, {"x": x}, workdir=work)["out"]
        np.testing.assert_allclose(got, _col_softmax_golden(x), rtol=1e-5, atol=1e-6)
