"""Paged KV caches in the PyPTO-Gym style (issue 14): `pypto.experimental.gather_in_ub`
/ `gather_in_l1` (tokens through a page table) and `scatter_update` into quantised
(int8, fp8) caches. Goldens are numpy written here; under the `pypto` marker PyPTO 0.2.0
runs the kernels as written and as tileir writes them back."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_source
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError

GATHER_IN_UB = """\
import pypto


@pypto.frontend.jit
def k(
    param: pypto.Tensor([8, 16], pypto.DT_FP32),
    idx: pypto.Tensor([1, 4], pypto.DT_INT32),
    table: pypto.Tensor([1, 4], pypto.DT_INT32),
    out: pypto.Tensor([4, 16], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(4, 16)
    out[:] = pypto.experimental.gather_in_ub(param, idx, table, 2, -2)
"""


def _paged_rows(param, idx, table, block):
    """Token t lives in physical block table[t // block], at offset t % block."""
    rows = [table[0, t // block] * block + t % block for t in idx[0]]
    return param[rows]


def _gather_inputs() -> dict[str, np.ndarray]:
    param = np.arange(128, dtype=np.float32).reshape(8, 16)
    return {
        "param": param,
        "idx": np.array([[7, 0, 4, 3]], np.int32),
        "table": np.array([[3, 0, 2, 1]], np.int32),
    }


def test_gather_in_ub_reads_tokens_through_the_page_table() -> None:
    module = load_source(GATHER_IN_UB, "giu.py")
    inputs = _gather_inputs()
    got = run_numpy(module, inputs)["out"]
    np.testing.assert_array_equal(got, _paged_rows(**inputs, block=2))


@pytest.mark.pypto
@pytest.mark.parametrize("source", ["as written", "emitted"])
def test_real_pypto_agrees_on_gather_in_ub(source: str, tmp_path: Path) -> None:
    """0.2.0 has the function: the kernel as written and as tileir writes it back (div,
    gather, index_select) read the same rows there."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "giu.py"
    text = GATHER_IN_UB if source == "as written" else emit(load_source(GATHER_IN_UB, "g.py"))
    path.write_text(text)
    inputs = _gather_inputs()
    args = [ArgSpec("param", (8, 16), "f32"), ArgSpec("idx", (1, 4), "i32")]
    args += [ArgSpec("table", (1, 4), "i32"), ArgSpec("out", (4, 16), "f32")]
    got = run_kernel(path, "k", args, inputs)["out"]
    np.testing.assert_array_equal(np.asarray(got), _paged_rows(**inputs, block=2))


SCATTER_UPDATE_I8 = """\
import pypto


@pypto.frontend.jit
def k(
    cache: pypto.Tensor([8, 16], pypto.DT_INT8),
    idx: pypto.Tensor([1, 2], pypto.DT_INT64),
    src: pypto.Tensor([2, 16], pypto.DT_INT8),
    out: pypto.Tensor([8, 16], pypto.DT_INT8),
):
    pypto.set_vec_tile_shapes(2, 16)
    rows = pypto.view(idx, [1, 2], [0, 0])
    new = pypto.view(src, [2, 16], [0, 0])
    out[:] = pypto.scatter_update(pypto.view(cache, [8, 16], [0, 0]), -2, rows, new)
"""


def _i8_cache_inputs() -> dict[str, np.ndarray]:
    return {
        "cache": np.arange(128, dtype=np.int8).reshape(8, 16),
        "idx": np.array([[5, 2]], np.int64),
        "src": (-np.arange(32, dtype=np.int8)).reshape(2, 16),
    }


def _i8_cache_golden(cache: np.ndarray, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    want = cache.copy()
    for j, row in enumerate(idx[0]):
        want[row] = src[j]
    return want


def test_scatter_update_of_an_int8_cache() -> None:
    """A quantised KV cache (int8): the docs' dtype list omits it, 0.2.0 runs it (below)."""
    module = load_source(SCATTER_UPDATE_I8, "su8.py")
    inputs = _i8_cache_inputs()
    np.testing.assert_array_equal(run_numpy(module, inputs)["out"], _i8_cache_golden(**inputs))


@pytest.mark.pypto
def test_real_pypto_runs_scatter_update_on_int8(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "su8.py"
    path.write_text(emit(load_source(SCATTER_UPDATE_I8, "su8.py")))
    args = [ArgSpec("cache", (8, 16), "i8"), ArgSpec("idx", (1, 2), "i64")]
    args += [ArgSpec("src", (2, 16), "i8"), ArgSpec("out", (8, 16), "i8")]
    inputs = _i8_cache_inputs()
    got = run_kernel(path, "k", args, inputs)["out"]
    np.testing.assert_array_equal(np.asarray(got), _i8_cache_golden(**inputs))


GATHER_IN_L1 = """\
import pypto


@pypto.frontend.jit
def k(
    keys: pypto.Tensor([8, 32], pypto.DT_FP16),
    idx: pypto.Tensor([1, 16], pypto.DT_INT32),
    table: pypto.Tensor([1, 4], pypto.DT_INT32),
    out: pypto.Tensor([16, SIZE], pypto.DT_FP16),
):
    pypto.set_vec_tile_shapes(16, 32)
    pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
    out[:] = pypto.experimental.gather_in_l1(keys, idx, table, 2, SIZE, B, T)
"""


def _gather_in_l1_source(size: int, b: bool, t: bool) -> str:
    text = GATHER_IN_L1.replace("SIZE", str(size)).replace("B, T", f"{b}, {t}")
    # size 16 reads all of a [8, 16] src (what 0.2.0's interpreter runs), else [8, 32]
    return text.replace("[8, 32]", f"[8, {16 if size == 16 else 32}]")


def _gather_in_l1_inputs(cols: int) -> dict[str, np.ndarray]:
    keys = (np.arange(8 * cols) % 251 - 125).reshape(8, cols).astype(np.float16)
    return {
        "keys": keys,
        "idx": np.array([[7, 0, 4, 3, 1, 2, 5, 6, 6, 5, 0, 7, 3, 3, 2, 4]], np.int32),
        "table": np.array([[3, 0, 2, 1]], np.int32),
    }


@pytest.mark.parametrize(("b", "t"), [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("size", [32, 24])
def test_gather_in_l1_reads_the_first_size_columns_of_the_paged_rows(
    size: int, b: bool, t: bool
) -> None:
    """[k, size] whatever the layout flags (is_b_matrix / is_trans are L1 placement)."""
    module = load_source(_gather_in_l1_source(size, b, t), "gil1.py")
    inputs = _gather_in_l1_inputs(32)
    got = run_numpy(module, inputs)["out"]
    rows = [inputs["table"][0, tok // 2] * 2 + tok % 2 for tok in inputs["idx"][0]]
    np.testing.assert_array_equal(got, inputs["keys"][rows, :size])


@pytest.mark.parametrize("size", [0, 33])
def test_gather_in_l1_size_outside_the_columns_is_a_located_error(size: int) -> None:
    with pytest.raises(
        TileirError, match=r"gil1\.py:13:14: error: .*size must be an int in 1\.\.32"
    ):
        load_source(
            _gather_in_l1_source(size, True, True).replace(f"[16, {size}]", "[16, 8]"), "gil1.py"
        )


@pytest.mark.pypto
@pytest.mark.parametrize(("source", "size"), [("as written", 16), ("emitted", 16), ("emitted", 24)])
def test_real_pypto_agrees_on_gather_in_l1(source: str, size: int, tmp_path: Path) -> None:
    """0.2.0 has the function; its interpreter runs it only with size equal to src's
    columns (with fewer it fails on its own valid shape, GATHER_IN_L1OpError, measured):
    the kernel as written there, and as tileir writes it back (a view, then the page
    table arithmetic and index_select) with either size."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    cols = 16 if size == 16 else 32
    text = _gather_in_l1_source(size, True, True)
    path = tmp_path / "gil1.py"
    path.write_text(text if source == "as written" else emit(load_source(text, "g.py")))
    inputs = _gather_in_l1_inputs(cols)
    args = [ArgSpec("keys", (8, cols), "f16"), ArgSpec("idx", (1, 16), "i32")]
    args += [ArgSpec("table", (1, 4), "i32"), ArgSpec("out", (16, size), "f16")]
    got = run_kernel(path, "k", args, inputs)["out"]
    rows = [inputs["table"][0, tok // 2] * 2 + tok % 2 for tok in inputs["idx"][0]]
    np.testing.assert_array_equal(np.asarray(got), inputs["keys"][rows, :size])


def test_scatter_update_of_an_fp8_cache() -> None:
    """An fp8 e4m3 cache (the Gym's mxfp8 indexer): a row copy, bit for bit. 0.2.0's
    interpreter copies the same bits (read from its tensor dump) but then fails comparing
    FP8 outputs with a golden (FB2002), so there is no pypto-marker test of it."""
    module = load_source(SCATTER_UPDATE_I8.replace("DT_INT8", "DT_FP8E4M3"), "su_f8.py")
    f8 = ml_dtypes.float8_e4m3fn
    inputs = {
        "cache": ((np.arange(128) % 61 - 30) * 0.5).astype(np.float32).reshape(8, 16).astype(f8),
        "idx": np.array([[5, 2]], np.int64),
        "src": (-(np.arange(32) % 17) * 0.25).astype(np.float32).reshape(2, 16).astype(f8),
    }
    got = run_numpy(module, inputs)["out"]
    want = _i8_cache_golden(**inputs)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
