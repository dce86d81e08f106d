"""Values that leave a pypto.loop (issue 14, PyPTO-Gym constructs): a concrete scalar
counted under runtime `if`s (PyPTO traces the body once per path, measured on PyPTO
0.2.0: `frontends/pypto/paths.py`), inplace reshapes made in a `pypto.loop(1)`,
`Tensor.move` of another rank, and a tail tile read before it is written (the emitted
kernel). Kernels in `data/jit/jit_loop_flow.py`; goldens are numpy written here."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Block, Operation

from frontends.pypto import load_file
from tileir.backends.numpy import compile_kernel
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

FILE = Path(__file__).parent / "data" / "jit" / "jit_loop_flow.py"


def _run(kernel: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return compile_kernel(load_file(FILE, kernel=kernel, args=inputs))(inputs)


def _rows(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_a_counter_set_in_the_else_branch_is_one_after_the_loop() -> None:
    # PyPTO traces the body twice (else path, then path): `seen` is 1, so the
    # Python `if seen > 0` takes the first pass and adds 1.0
    x = _rows(0, 4, 8)
    z0 = np.zeros_like(x)
    out = _run("flag_then_pass", {"x": x, "y": z0, "z": z0.copy()})
    want_y = np.concatenate([2 * x[:1], 3 * x[1:]])
    np.testing.assert_allclose(out["y"], want_y, rtol=1e-6)
    np.testing.assert_allclose(out["z"], x + 1.0, rtol=1e-6)
    module = load_file(FILE, kernel="flag_then_pass")
    names = [op.loop_name.data for op in module.walk() if isinstance(op, pto.LoopOp)]
    assert names == ["ROWS", "PASS"]  # one pass loop: the Python `if` was decided


def test_two_runtime_ifs_give_four_paths_of_increments() -> None:
    # paths (else, else) +1+5, (else, then) +1-3, (then, else) +5, (then, then) -3
    hits = (1 + 5) + (1 - 3) + 5 + (-3)
    x = _rows(1, 4, 8)
    out = _run("count_two_ifs", {"x": x, "z": np.zeros_like(x)})
    want = np.concatenate([x[:1], 2 * x[1:]]) + hits
    np.testing.assert_allclose(out["z"], want, rtol=1e-6)


def test_a_value_set_rather_than_counted_stays_a_located_error() -> None:
    with pytest.raises(TileirError, match=r"jit_loop_flow\.py:\d+:\d+: error: `mode` is changed"):
        load_file(FILE, kernel="set_in_one_branch")


def test_an_inplace_reshape_made_in_a_loop_of_one_is_read_after_it() -> None:
    x = _rows(2, 3, 2, 8)
    out = _run("flatten_then_rows", {"x": x, "y": np.zeros((6, 8), np.float32)})
    np.testing.assert_allclose(out["y"], x.reshape(6, 8) * 0.5, rtol=1e-6)
    module = load_file(FILE, kernel="flatten_then_rows", args={"x": x, "y": out["y"]})
    (alias,) = [op for op in module.walk() if isinstance(op, pto.ReshapeMemOp)]
    assert not any(isinstance(p, pto.LoopOp) for p in _ancestors(alias))


def test_move_of_a_flat_tile_fills_the_3d_tensor_row_major() -> None:
    x = _rows(3, 8, 8)
    out = _run("move_flat_into_3d", {"x": x, "out": np.zeros((2, 4, 8), np.float32)})
    np.testing.assert_allclose(out["out"], (x - 1.0).reshape(2, 4, 8), rtol=1e-6)
    assert "pypto.reshape(" in emit(load_file(FILE, kernel="move_flat_into_3d"))


def test_move_of_a_scatter_update_on_a_flat_alias_writes_the_cache() -> None:
    cache = _rows(4, 3, 2, 8)
    rows = _rows(5, 2, 8)
    slots = np.array([[4], [1]], np.int64)
    inputs = {"cache": cache, "slots": slots, "rows": rows}
    out = _run("cache_rows_update", inputs)
    flat = cache.reshape(6, 8).copy()
    for i, s in enumerate(slots[:, 0]):
        flat[s] = rows[i]
    np.testing.assert_array_equal(out["cache"], flat.reshape(3, 2, 8))


def test_a_tail_tile_read_before_its_write_has_its_valid_shape_first() -> None:
    x = _rows(6, 3, 8)
    inputs = {"x": x, "y": np.zeros((4, 8), np.float32)}
    module = load_file(FILE, kernel="tail_read_then_write", args=inputs)
    _assert_defined_before_use(module)
    out = compile_kernel(module)(inputs)
    want = np.stack([2 * x[1] + 2 * x[0], 3 * x[1], 3 * x[2]])
    np.testing.assert_allclose(out["y"][:3], want, rtol=1e-6)
    ast.parse(emit(module))  # the clamp of the valid shape is written before the reads


def _ancestors(op: Operation) -> list[Operation]:
    out = []
    while (p := op.parent_op()) is not None:
        out.append(p)
        op = p
    return out


def _assert_defined_before_use(module: Operation) -> None:
    seen: set[int] = set()

    def walk(block: Block) -> None:
        for arg in block.args:
            seen.add(id(arg))
        for op in block.ops:
            for v in op.operands:
                assert id(v) in seen, f"{op.name} uses a value defined after it"
            for region in op.regions:
                for b in region.blocks:
                    walk(b)
            for r in op.results:
                seen.add(id(r))

    for region in module.regions:
        for b in region.blocks:
            walk(b)
