"""`pypto.view` forms of PyPTO-Gym kernels (issue 14): a window reaching past its source
(PyPTO clamps its valid shape), a call of higher rank than a `pypto.DYNAMIC` /
`pypto.STATIC` annotation, a dtype-reinterpreting view (`pypto.view(t, dtype=...)`) and
run-time valid shapes out of range.

The kernels are written here in the Gym's style; results are checked against numpy
written independently, and against the real pypto 0.2.0 (marker `pypto`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontends.pypto import load_source
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

# --------------------------------------------------------------------------- past the source

PAST_SOURCE = """\
import pypto

MAX_COLS = 64


@pypto.frontend.jit
def k(
    table: pypto.Tensor([4, 16], pypto.DT_FP32),
    out: pypto.Tensor([4, MAX_COLS], pypto.DT_FP32),
    tail: pypto.Tensor([2, 32], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, MAX_COLS)
    for b in pypto.loop(0, 4, 1, name="rows", idx_name="b"):
        row = pypto.view(table, [1, MAX_COLS], [b, 0])
        out[b:b + 1, 0:] = pypto.add(row, 1.0)
    pypto.set_vec_tile_shapes(2, 32)
    whole = pypto.view(table, [4, 16], [0, 0])
    part = pypto.view(whole, [2, 32], [2, 8])
    tail[:] = pypto.mul(part, 2.0)
"""


def _past_source_inputs() -> dict[str, np.ndarray]:
    return {"table": np.arange(64, dtype=np.float32).reshape(4, 16) - 20}


def _past_source_golden(table: np.ndarray) -> dict[str, np.ndarray]:
    """Only what lies inside the source is read and written; the outputs start at zero."""
    out = np.zeros((4, 64), np.float32)
    for b in range(4):
        for j in range(16):
            out[b, j] = table[b, j] + 1
    tail = np.zeros((2, 32), np.float32)
    for i in range(2):
        for j in range(8):
            tail[i, j] = table[2 + i, 8 + j] * 2
    return {"out": out, "tail": tail}


def test_a_window_past_its_source_is_valid_inside_it() -> None:
    module = load_source(PAST_SOURCE, "past.py")
    views = [op for op in module.walk() if isinstance(op, pto.ViewOp)]
    # a tensor in memory: only the dim that reaches past changes; a tile: clamped to it
    assert [op.mixed_valid_shape for op in views] == [[1, 16], None, [2, 8]]
    got = run_numpy(module, _past_source_inputs())
    want = _past_source_golden(**_past_source_inputs())
    for name in ("out", "tail"):
        np.testing.assert_array_equal(got[name], want[name])
    assert "pypto.view(table, [1, 64], [b, 0], valid_shape=[1, 16])" in emit(module)


def test_a_window_wholly_outside_its_source_is_an_error() -> None:
    src = PAST_SOURCE.replace("[2, 32], [2, 8]", "[2, 32], [2, 16]")
    with pytest.raises(
        TileirError,
        match=r"past\.py:18:12: error: pypto\.view offset 16 in dim 1 is outside the source",
    ):
        load_source(src, "past.py")


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_clamps_a_window_past_its_source(source: str, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "past.py"
    text = PAST_SOURCE if source == "as written" else emit(load_source(PAST_SOURCE, "p.py"))
    path.write_text(text)
    args = [ArgSpec("table", (4, 16), "f32"), ArgSpec("out", (4, 64), "f32")]
    args.append(ArgSpec("tail", (2, 32), "f32"))
    got = run_kernel(path, "k", args, _past_source_inputs())
    want = _past_source_golden(**_past_source_inputs())
    for name in ("out", "tail"):
        np.testing.assert_array_equal(np.asarray(got[name]), want[name])


# --------------------------------------------------------------------------- higher rank

HIGHER_RANK = """\
import pypto


@pypto.frontend.jit
def k(
    scale: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 4, 8)
    rows = scale.shape[0]
    for i in pypto.loop(rows, name="rows", idx_name="i"):
        s = pypto.view(scale, [1, 4, 8], [i, 0, 0])
        out[i:i + 1, 0:, 0:] = pypto.mul(s, 3.0)
"""


def test_marked_annotation_takes_a_call_of_higher_rank() -> None:
    """PyPTO's JIT checks a call against DYNAMIC / STATIC marks for at least their rank
    (the Gym passes rank-3 MX scales to rank-2 annotations); the extra dims are the
    call's, and the annotation is written back as it was."""
    x = np.arange(48, dtype=np.float32).reshape(2, 3, 8)
    x = np.concatenate([x, x[:, :1]], axis=1)  # [2, 4, 8]
    module = load_source(HIGHER_RANK, "hr.py", args={"scale": x, "out": "2x4x8xf32"})
    (kernel,) = [op for op in module.walk() if isinstance(op, pto.KernelOp)]
    assert [str(a.type) for a in kernel.body.block.args] == ["memref<?x4x8xf32>"] * 2
    got = run_numpy(module, {"scale": x, "out": np.zeros_like(x)})["out"]
    np.testing.assert_array_equal(got, x * np.float32(3))
    assert "scale: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32)" in emit(module)


@pytest.mark.parametrize(
    ("annotation", "call", "message"),
    [
        ("[pypto.DYNAMIC, pypto.STATIC]", "4xf32", "has at least 2 dims but the call gives 4xf32"),
        ("[2, 4]", "2x4x8xf32", "has 2 dims but the call gives 2x4x8xf32"),
    ],
)
def test_rank_the_annotation_does_not_take_is_an_error(
    annotation: str, call: str, message: str
) -> None:
    src = HIGHER_RANK.replace("[pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),\n    out", "X", 1)
    src = src.replace("X", f"{annotation}, pypto.DT_FP32),\n    out")
    with pytest.raises(TileirError, match=message):
        load_source(src, "hr.py", args={"scale": call, "out": "2x4x8xf32"})


@pytest.mark.pypto
def test_real_pypto_takes_a_call_of_higher_rank(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "hr.py"
    call = {"scale": "2x4x8xf32", "out": "2x4x8xf32"}
    path.write_text(emit(load_source(HIGHER_RANK, "hr.py", args=call)))
    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8) - 7
    args = [ArgSpec("scale", (2, 4, 8), "f32"), ArgSpec("out", (2, 4, 8), "f32")]
    got = run_kernel(path, "k", args, {"scale": x})["out"]
    np.testing.assert_array_equal(np.asarray(got), x * np.float32(3))


# --------------------------------------------------------------------------- view(dtype=)

DEQUANT = """\
import pypto

ROWS = 4
QUANT = 64
GROUP = 8
SCALE_BYTES = QUANT // GROUP * 4


@pypto.frontend.jit
def k(
    cache: pypto.Tensor([8, QUANT + SCALE_BYTES], pypto.DT_INT8),
    out: pypto.Tensor([8, QUANT], pypto.DT_FP32),
):
    for i in pypto.loop(0, 2, 1, name="tiles", idx_name="i"):
        pypto.set_vec_tile_shapes(ROWS, QUANT)
        q = pypto.view(cache, [ROWS, QUANT], [i * ROWS, 0])
        q32 = pypto.cast(pypto.cast(q, pypto.DT_FP16), pypto.DT_FP32)
        groups = pypto.reshape(q32, [ROWS * QUANT // GROUP, GROUP])
        pypto.set_vec_tile_shapes(ROWS, SCALE_BYTES)
        raw = pypto.view(cache, [ROWS, SCALE_BYTES], [i * ROWS, QUANT])
        scale = pypto.view(input=raw, dtype=pypto.DT_FP32)
        pypto.set_vec_tile_shapes(ROWS, QUANT // GROUP)
        scale = pypto.add(scale, 0.0)
        scale_col = pypto.reshape(scale, [ROWS * QUANT // GROUP, 1])
        pypto.set_vec_tile_shapes(ROWS * QUANT // GROUP, GROUP)
        deq = pypto.mul(groups, scale_col)
        pypto.set_vec_tile_shapes(ROWS, QUANT)
        out[i * ROWS:, 0:] = pypto.reshape(deq, [ROWS, QUANT])
"""


def _dequant_inputs() -> dict[str, np.ndarray]:
    """Each row: 64 int8 values, then 8 little-endian float32 scales (one per 8 values)."""
    import struct

    rng = np.random.default_rng(5)
    rows = []
    for r in range(8):
        q = [int(v) for v in rng.integers(-128, 128, 64)]
        scales = [0.5 * (r + 1) - 0.25 * g for g in range(8)]
        raw = struct.pack("<64b8f", *q, *scales)
        rows.append(list(struct.unpack("<96b", raw)))
    return {"cache": np.array(rows, np.int8)}


def _dequant_golden(cache: np.ndarray) -> np.ndarray:
    import struct

    out = np.zeros((8, 64), np.float32)
    for r in range(8):
        values = struct.unpack("<64b8f", bytes(int(b) & 0xFF for b in cache[r]))
        for j in range(64):
            out[r, j] = values[j] * values[64 + j // 8]  # exact: int8 times a short float
    return out


def test_view_with_a_dtype_reads_the_bytes_as_that_dtype() -> None:
    module = load_source(DEQUANT, "dq.py")
    (vt,) = [op for op in module.walk() if isinstance(op, pto.ViewTypeOp)]
    assert (str(vt.input.type), str(vt.result.type)) == ("tensor<4x32xi8>", "tensor<4x8xf32>")
    got = run_numpy(module, _dequant_inputs())["out"]
    np.testing.assert_array_equal(got, _dequant_golden(**_dequant_inputs()))
    assert "pypto.view(raw, dtype=pypto.DT_FP32)" in emit(module)


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_reads_the_same_bytes(source: str, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "dq.py"
    path.write_text(DEQUANT if source == "as written" else emit(load_source(DEQUANT, "d.py")))
    args = [ArgSpec("cache", (8, 96), "i8"), ArgSpec("out", (8, 64), "f32")]
    got = run_kernel(path, "k", args, _dequant_inputs())["out"]
    np.testing.assert_array_equal(np.asarray(got), _dequant_golden(**_dequant_inputs()))


VIEW_TYPE_TAIL = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([4, 32], pypto.DT_INT8),
    out: pypto.Tensor([4, 8], pypto.DT_FP32),
    widths: pypto.Tensor([1, 8], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(4, 32)
    window = pypto.view(x, [4, 32], [0, 0], valid_shape=[3, 16])
    words = pypto.view(window, dtype=pypto.DT_FP32)
    pypto.set_vec_tile_shapes(4, 8)
    out[:] = pypto.add(words, 0.0)
    n = words.valid_shape[1]
    widths[:] = pypto.full([1, 8], 1.0, pypto.DT_FP32, valid_shape=[1, n])
"""


def test_view_with_a_dtype_scales_the_valid_size_of_the_last_dim() -> None:
    """[3, 16] valid int8 bytes are [3, 4] valid float32 words (what PyPTO 0.2.0 reports
    as the valid shape; its interpreter then copies only the first 32 bytes, measured, so
    this form is checked against numpy only)."""
    module = load_source(VIEW_TYPE_TAIL, "tail.py")
    x = (np.arange(128) * 7 % 251 - 125).astype(np.int8).reshape(4, 32)
    got = run_numpy(module, {"x": x})
    want = np.zeros((4, 8), np.float32)
    for r in range(3):
        for w in range(4):
            want[r, w] = np.frombuffer(x[r, 4 * w : 4 * w + 4].tobytes(), "<f4")[0]
    np.testing.assert_array_equal(got["out"], want)
    np.testing.assert_array_equal(got["widths"], [[1, 1, 1, 1, 0, 0, 0, 0]])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "pypto.view(window, [4, 8], [0, 0], dtype=pypto.DT_FP32)",
            "pypto.view with a dtype reads the whole tensor as that dtype and takes no shape",
        ),
        (
            "pypto.view(pypto.view(x, [4, 30], [0, 0]), dtype=pypto.DT_FP32)",
            r"pypto\.view dtype=pypto\.DT_FP32: last dim of \[4, 30\] holds 30 bytes",
        ),
        (
            "pypto.view(pypto.view(x, [4, 32], [0, 0], valid_shape=[3, 6]), dtype=pypto.DT_FP32)",
            None,
        ),
    ],
)
def test_view_with_a_dtype_errors(call: str, message: str | None) -> None:
    src = VIEW_TYPE_TAIL.replace("pypto.view(window, dtype=pypto.DT_FP32)", call)
    if message is not None:
        with pytest.raises(TileirError, match=r"tail\.py:12:13: error: " + message):
            load_source(src, "tail.py")
        return
    # a valid size that is not a whole number of words: a run-time error, as in 0.2.0
    module = load_source(src, "tail.py")
    with pytest.raises(TileirError, match="not a whole number of 4-byte elements"):
        run_numpy(module, {"x": np.zeros((4, 32), np.int8)})


# --------------------------------------------------------------------------- run-time valid

RUNTIME_VALID = """\
import pypto


@pypto.frontend.jit
def k(
    lens: pypto.Tensor([1, 1], pypto.DT_INT32),
    x: pypto.Tensor([2, 16], pypto.DT_FP32),
    out: pypto.Tensor([2, 16], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 16)
    cur = lens[0, 0] - 3
    head = pypto.view(x, [1, 16], [0, 0], valid_shape=[1, cur])
    out[0:1, :] = pypto.add(head, 1.0)
    both = pypto.view(x, [2, 16], [0, 0])
    second = pypto.view(both, [1, 16], [1, 0], valid_shape=[1, cur])
    out[1:2, :] = pypto.add(second, 2.0)
"""


def _runtime_valid_golden(x: np.ndarray, cur: int) -> np.ndarray:
    """A valid size above the tile's 16 reads the whole row (PyPTO 0.2.0 takes it as
    16); the rest of each output row is never written (zero)."""
    n = min(cur, 16)
    out = np.zeros((2, 16), np.float32)
    out[0, :n] = x[0, :n] + 1
    out[1, :n] = x[1, :n] + 2
    return out


_X = np.arange(32, dtype=np.float32).reshape(2, 16) + 100


@pytest.mark.parametrize("n", [8, 25])
def test_a_run_time_valid_size_above_the_tile_is_the_tile(n: int) -> None:
    module = load_source(RUNTIME_VALID, "rv.py")
    got = run_numpy(module, {"lens": np.array([[n]], np.int32), "x": _X})["out"]
    np.testing.assert_array_equal(got, _runtime_valid_golden(_X, n - 3))


def test_a_negative_run_time_valid_size_is_a_located_error() -> None:
    """0.2.0 fails too (VIEWOpError, measured): it does not clamp at 0."""
    module = load_source(RUNTIME_VALID, "rv.py")
    with pytest.raises(TileirError, match=r"rv\.py:12:12: error: .*valid_shape \[1, -2\].*VIEWOp"):
        run_numpy(module, {"lens": np.array([[1]], np.int32), "x": _X})


@pytest.mark.pypto
@pytest.mark.parametrize("n", [8, 25])
def test_real_pypto_takes_a_valid_size_above_the_tile_as_the_tile(n: int, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "rv.py"
    path.write_text(emit(load_source(RUNTIME_VALID, "rv.py")))
    args = [ArgSpec("lens", (1, 1), "i32"), ArgSpec("x", (2, 16), "f32")]
    args.append(ArgSpec("out", (2, 16), "f32"))
    got = run_kernel(path, "k", args, {"lens": np.array([[n]], np.int32), "x": _X})["out"]
    np.testing.assert_array_equal(np.asarray(got), _runtime_valid_golden(_X, n - 3))


WINDOW_RESHAPE = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 4, 1], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_vec_tile_shapes(4, 4, 4)
    for r, n in pypto.loop_unroll(0, rows, 1, name="rows", idx_name="r", unroll_list=[4, 1]):
        w = pypto.view(x, [n, 1, 4], [r, 2, 0])
        col = pypto.reshape(w, [n, 4, 1], inplace=True)
        pypto.assemble(pypto.mul(col, 2.0), [r, 0, 0], out)
"""


def _window_reshape_golden(x: np.ndarray) -> np.ndarray:
    return (x[:, 2:3, :] * np.float32(2.0)).reshape(-1, 4, 1)


def test_an_inplace_reshape_of_a_run_time_sized_window() -> None:
    """PyPTO-Gym's mhc_post: a window sized by the unroll chunk, reshaped inplace; the
    reshape's `?` dim is written back as the window's size, and reads back alike."""
    x = np.random.default_rng(9).standard_normal((6, 4, 4)).astype(np.float32)
    module = load_source(WINDOW_RESHAPE, "wr.py")
    text = emit(module)
    assert ", inplace=True)" in text
    for m in (module, load_source(text, "wr_emitted.py")):
        got = run_numpy(m, {"x": x, "out": np.zeros((6, 4, 1), np.float32)})["out"]
        np.testing.assert_array_equal(got, _window_reshape_golden(x))


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_reshapes_a_run_time_sized_window(source: str, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    text = WINDOW_RESHAPE if source == "as written" else emit(load_source(WINDOW_RESHAPE, "w.py"))
    path = tmp_path / "wr.py"
    path.write_text(text)
    x = np.random.default_rng(9).standard_normal((6, 4, 4)).astype(np.float32)
    args = [ArgSpec("x", (6, 4, 4), "f32"), ArgSpec("out", (6, 4, 1), "f32")]
    got = run_kernel(path, "k", args, {"x": x}, outputs=["out"])["out"]
    np.testing.assert_array_equal(np.asarray(got), _window_reshape_golden(x))
