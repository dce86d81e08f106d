"""`while` and `del` in kernels and their helpers run when the kernel is traced, as PyPTO's JIT
runs Python (PyPTO-Gym's glm_moe_fusion computes its `loop_unroll` chunk sizes with a
`while True: ... break` helper). Goldens are numpy written out by hand."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from frontends.pypto import load_source
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

SOURCE = """
import pypto


def chunk_sizes(limit: int) -> set[int]:
    sizes = set()
    shift = 0
    while True:
        size = 1 << shift
        if size > limit:
            break
        sizes.add(size)
        shift += 1
    return sizes


@pypto.frontend.jit()
def scaled(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    acc = x
    for s in sorted(chunk_sizes(4)):
        acc = pypto.add(acc, float(s))
    n = 0
    while n < 3:
        n += 1
        if n == 2:
            continue
        acc = pypto.mul(acc, 2.0)
    else:
        acc = pypto.add(acc, 0.5)
    pypto.assemble(acc, [0, 0], out)


@pypto.frontend.jit()
def chunked(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
            out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 16)
    for i, n in pypto.loop_unroll(0, x.shape[0], 1, name="rows", idx_name="i",
                                  unroll_list=chunk_sizes(4)):
        t = pypto.view(x, [n, 16], [i, 0])
        pypto.assemble(pypto.exp(t), [i, 0], out)
"""


def test_while_runs_at_trace_time_with_break_continue_and_else() -> None:
    module = load_source(SOURCE, "w.py", kernel="scaled")
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    got = run(module, {"x": x})["out"]
    want = x
    for s in (1.0, 2.0, 4.0):  # the helper's sizes 1, 2, 4 (8 > limit)
        want = (want + np.float32(s)).astype(np.float32)
    want = (want * np.float32(2.0)) * np.float32(2.0)  # n = 1 and 3; n = 2 continues
    want = want + np.float32(0.5)  # the loop ended without break
    assert np.array_equal(got, want)
    ops = [op.name for op in module.walk() if op.name.startswith("pto.")]
    assert ops.count("pto.add") == 4 and ops.count("pto.mul") == 2


def test_helper_while_gives_loop_unroll_chunks() -> None:
    module = load_source(SOURCE, "w.py", kernel="chunked")
    (loop,) = [op for op in module.walk() if isinstance(op, pto.LoopUnrollOp)]
    assert "unroll [4, 2, 1]" in str(loop)  # the helper's set {1, 2, 4}, largest first
    x = np.random.default_rng(1).standard_normal((11, 16)).astype(np.float32)
    got = run(module, {"x": x, "out": np.zeros_like(x)})["out"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=2e-6, atol=0)
    ast.parse(emit(module))


def test_while_on_a_runtime_value_is_located() -> None:
    bad = SOURCE.replace("    n = 0\n    while n < 3:", "    n = 0\n    while x.shape[0] < n:")
    bad = bad.replace("[8, 16], pypto.DT_FP32), out", "[pypto.DYNAMIC, 16], pypto.DT_FP32), out")
    with pytest.raises(TileirError, match=r"w\.py:\d+:\d+: error: `while` runs when the kernel"):
        load_source(bad, "w.py", kernel="scaled")


DELETE = """
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    for _ in pypto.loop(1, name="once", idx_name="u"):
        a = pypto.exp(x)
        b = pypto.add(a, 1.0)
        del a, b
        a = pypto.mul(x, 2.0)
        pypto.assemble(a, [0, 0], out)
"""


def test_del_unbinds_names_at_trace_time() -> None:
    """`del` (PyPTO-Gym's block_attn_res frees finished tiles by name): the name is gone
    afterwards, a later assignment binds it again; using a deleted name is located."""
    module = load_source(DELETE, "d.py")
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_array_equal(run(module, {"x": x})["out"], x * np.float32(2.0))
    bad = DELETE.replace("        a = pypto.mul(x, 2.0)\n", "")
    with pytest.raises(TileirError, match=r"d\.py:12:24: error: name `a` is not defined"):
        load_source(bad, "d.py")
    with pytest.raises(TileirError, match=r"d\.py:\d+:\d+: error: `del` in a kernel takes names"):
        load_source(DELETE.replace("del a, b", "del x[0]"), "d.py")
