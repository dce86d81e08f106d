"""Reading one element of a tensor, `x[i, j]` with every index a scalar (PyPTO's
`Tensor.__getitem__` -> `GetTensorData`, a `SymbolicScalar`): `pto.get_tensor_data`, an
index value the kernel uses as an offset, a valid shape, a loop bound, in index
arithmetic and in `.min()` / `.max()`.

The Gym-style kernels of `data/jit/jit_element_reads.py` (a paged gather through a
block table, a MoE-style routed sum, segments from cumulative lengths, a paged-cache
write through a DT_INT64 slot mapping) run on the numpy back end against goldens written
here with Python loops over rows, through the default pipeline, and through `-t pypto`;
under the `pypto` marker the real pypto 0.2.0 computes them, as written and as emitted
(the DT_INT64 read only as emitted: 0.2.0 reads only DT_INT32 elements, and the
writer's `tileir_get_tensor_data` reads the element's window cast to DT_INT32). The op's memory read orders it against
writes in the passes that move or fuse code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import IndexType
from xdsl.traits import MemoryEffectKind, get_effects

from frontends.pypto import load_file, load_source
from tileir import parse_module
from tileir.backends.numpy import compile_kernel, run
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, run_kernel
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.passes import apply_pipeline

KERNELS = Path(__file__).parent / "data" / "jit" / "jit_element_reads.py"
RNG = np.random.default_rng(31)


# --------------------------------------------------------------------------- cases


def _paged_case():
    """6 blocks of 2 rows; sequence b uses seq_lens[b] rows through its block table."""
    cache = RNG.standard_normal((12, 16)).astype(np.float32)
    block_table = np.array([[4, 1, 0, 0], [5, 3, 2, 0], [0, 0, 0, 0]], np.int32)
    seq_lens = np.array([3, 6, 0], np.int32)
    golden = np.zeros((24, 16), np.float32)
    for b in range(3):
        for t in range(int(seq_lens[b])):
            block, within = divmod(t, 2)
            golden[b * 8 + t] = 2.0 * cache[2 * block_table[b, block] + within]
    inputs = {"cache": cache, "block_table": block_table, "seq_lens": seq_lens}
    args = [
        ArgSpec("cache", cache.shape, "f32"),
        ArgSpec("block_table", block_table.shape, "i32"),
        ArgSpec("seq_lens", seq_lens.shape, "i32"),
        ArgSpec("out", golden.shape, "f32"),
    ]
    return inputs, args, {"out": golden}


def _routed_case():
    """4 tokens, top-2; a row index of -1 (a dropped slot) reads row 0."""
    expert_out = RNG.standard_normal((8, 16)).astype(np.float32)
    row_index = np.array([7, 0, -1, 3, 5, 5, 2, -1], np.int32)
    expert_ids = np.array([[0, 2], [1, 1], [2, 0], [1, 2]], np.int32)
    bias = RNG.standard_normal((3, 16)).astype(np.float32)
    golden = np.zeros((4, 16), np.float32)
    for i in range(4):
        acc = None
        for k in range(2):
            term = expert_out[max(int(row_index[2 * i + k]), 0)] + bias[expert_ids[i, k]]
            acc = term if acc is None else acc + term
        golden[i] = acc
    inputs = {
        "expert_out": expert_out,
        "row_index": row_index,
        "expert_ids": expert_ids,
        "bias": bias,
    }
    args = [
        ArgSpec("expert_out", expert_out.shape, "f32"),
        ArgSpec("row_index", row_index.shape, "i32"),
        ArgSpec("expert_ids", expert_ids.shape, "i32"),
        ArgSpec("bias", bias.shape, "f32"),
        ArgSpec("out", golden.shape, "f32"),
    ]
    return inputs, args, {"out": golden}


def _segment_case():
    """Segments of 5, 0, 8 and 3 rows (chunks of 4: tails of 1, 0 and 3 rows)."""
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    starts = np.array([0, 5, 5, 13, 16], np.int32)
    golden = np.zeros((16, 8), np.float32)
    for row in range(16):
        golden[row] = -x[row]
    inputs = {"x": x, "starts": starts}
    args = [
        ArgSpec("x", x.shape, "f32"),
        ArgSpec("starts", starts.shape, "i32"),
        ArgSpec("out", golden.shape, "f32"),
    ]
    return inputs, args, {"out": golden}


def _slot_case():
    """5 tokens into a cache of 4 blocks of 2 rows through a DT_INT64 slot mapping."""
    rows = RNG.standard_normal((5, 1, 8)).astype(np.float32)
    slots = np.array([6, 1, 3, 0, 7], np.int64)
    cache = RNG.standard_normal((4, 2, 8)).astype(np.float32)
    golden = cache.copy()
    for t in range(5):
        golden[int(slots[t]) // 2, int(slots[t]) % 2, :] = rows[t, 0, :]
    inputs = {"rows": rows, "slots": slots, "cache": cache}
    args = [
        ArgSpec("rows", rows.shape, "f32"),
        ArgSpec("slots", slots.shape, "i64"),
        ArgSpec("cache", cache.shape, "f32"),
    ]
    return inputs, args, {"cache": golden}


CASES = {
    "paged_gather": _paged_case,
    "routed_sum": _routed_case,
    "segment_chunks": _segment_case,
    "slot_write": _slot_case,
}
NOT_IN_020 = ("slot_write",)
"""Kernels that read an element of a DT_INT64 tensor, which PyPTO 0.2.0 refuses: only
their emitted form (with `tileir_get_tensor_data`) runs there."""


def _call(name: str):
    inputs, args, golden = CASES[name]()
    call = {a.name: inputs.get(a.name, np.zeros(a.shape, np.float32)) for a in args}
    return call, inputs, args, golden


def _module(name: str):
    call, inputs, args, golden = _call(name)
    return load_file(KERNELS, name, args=call), inputs, args, golden


# --------------------------------------------------------------------------- IR


def test_element_read_is_an_index_value_used_as_an_offset() -> None:
    module, *_ = _module("paged_gather")
    reads = [op for op in module.walk() if isinstance(op, pto.GetTensorDataOp)]
    assert [r.result.name_hint for r in reads] == ["actual_len", "blk"]
    assert all(isinstance(r.result.type, IndexType) for r in reads)
    table = next(r for r in reads if r.result.name_hint == "blk")
    assert str(table.source.type) == "memref<3x4xi32>"
    (inner,) = [
        op for op in module.walk() if isinstance(op, pto.LoopOp) and op.idx_name.data == "j"
    ]
    # the trip count of the inner loop comes from the element read in the outer loop
    bound = inner.upper_bound.owner
    assert any(o is reads[0].result for o in _operands_deep(bound))


def _operands_deep(op, depth: int = 4):
    out = list(op.operands)
    if depth:
        for v in op.operands:
            if hasattr(v.owner, "operands"):
                out += _operands_deep(v.owner, depth - 1)
    return out


def test_negative_and_mixed_indices_count_as_python_does() -> None:
    source = """\
import pypto


@pypto.frontend.jit()
def k(t: pypto.Tensor([5, 3], pypto.DT_INT32), x: pypto.Tensor([16, 8], pypto.DT_FP32),
      out: pypto.Tensor([1, 8], pypto.DT_FP32)):
    for i in pypto.loop(1):
        a = t[-1, i]
        b = t[i + 1, -2]
        out[:] = pypto.view(x, [1, 8], [a + b, 0])
"""
    module = load_source(source, "neg.py")
    reads = [op for op in module.walk() if isinstance(op, pto.GetTensorDataOp)]
    assert reads[0].static_indices.get_values()[0] == 4
    assert reads[1].static_indices.get_values()[1] == 1
    t = np.arange(15, dtype=np.int32).reshape(5, 3) % 7
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    out = run(module, {"t": t, "x": x})["out"]
    np.testing.assert_array_equal(out[0], x[int(t[4, 0]) + int(t[1, 1])])


def test_element_of_a_tile_and_comparisons_in_a_runtime_if() -> None:
    """`doubled[1, 3]` of a computed tile (no memory effect), and `if n > 6:` on the read
    (an `scf.if`: the numpy back end runs it; PyPTO 0.2.0 rejects such an `if` in a jit
    kernel, so `-t pypto` refuses it, located)."""
    source = """\
import pypto


@pypto.frontend.jit()
def k(t: pypto.Tensor([2, 4], pypto.DT_INT32), x: pypto.Tensor([8, 8], pypto.DT_FP32),
      out: pypto.Tensor([1, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(2, 4)
    doubled = t + t
    n = doubled[1, 3]
    row = pypto.view(x, [1, 8], [n // 2, 0])
    if n > 6:
        out[:] = row
    else:
        out[:] = -row
"""
    module = load_source(source, "tile.py")
    (read,) = [op for op in module.walk() if isinstance(op, pto.GetTensorDataOp)]
    assert not get_effects(read)
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    for last, sign in ((5, 1.0), (2, -1.0)):
        t = np.zeros((2, 4), np.int32)
        t[1, 3] = last
        out = run(module, {"t": t, "x": x})["out"]
        np.testing.assert_array_equal(out[0], sign * x[last])
    emitted = load_source(emit(module), "emitted.py")  # a run-time `if`, as written
    for last, sign in ((5, 1.0), (2, -1.0)):
        t = np.zeros((2, 4), np.int32)
        t[1, 3] = last
        np.testing.assert_array_equal(run(emitted, {"t": t, "x": x})["out"][0], sign * x[last])


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("piped", [False, True], ids=["as-written", "default-pipeline"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_on_the_numpy_back_end(name: str, piped: bool) -> None:
    module, inputs, _, golden = _module(name)
    if piped:
        apply_pipeline(module, "default")
    out = run(module, inputs, name)
    for k, want in golden.items():
        np.testing.assert_array_equal(out[k], want, err_msg=k)


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_kernels_compute_the_same(name: str) -> None:
    """`x[i, j]` is written back as itself (the same IR on reading back:
    `tests/backends/test_emitter_roundtrip.py`); the emitted kernel computes the golden."""
    call, inputs, _, golden = _call(name)
    source = emit(load_file(KERNELS, name, args=call))
    assert "= block_table[b, j]" in source or name != "paged_gather", source
    assert ("tileir_get_tensor_data(slots, [t])" in source) == (name == "slot_write"), source
    back = load_source(source, f"{name}_emitted.py", args=call)
    out = run(back, inputs, name)
    for k, want in golden.items():
        np.testing.assert_array_equal(out[k], want, err_msg=k)


def test_loops_reading_elements_run_batched_with_the_same_bits() -> None:
    """A loop whose element reads come from memory it does not write runs as whole-array
    numpy (the reads gathered for all iterations at once), with the same outputs as the
    iteration-by-iteration run; a read out of range falls back to that run, which
    reports it at the read."""
    module, inputs, _, golden = _module("paged_gather")
    plan = compile_kernel(module, "paged_gather")
    out = plan(inputs)
    assert plan.batched_runs > 0
    reference = compile_kernel(module, "paged_gather", vectorize=False)(inputs)
    np.testing.assert_array_equal(out["out"], golden["out"])
    np.testing.assert_array_equal(reference["out"], golden["out"])
    too_long = {**inputs, "seq_lens": np.array([3, 10, 0], np.int32)}  # a 5th block of 4
    with pytest.raises(
        TileirError,
        match=r"jit_element_reads\.py:\d+:\d+: error: 'pto.get_tensor_data': get_tensor_data: "
        r"index \[1, 4\] is outside the tensor's shape \[3, 4\] in dim 1",
    ):
        plan(too_long)


def test_an_index_read_outside_the_table_is_a_located_run_time_error() -> None:
    module, inputs, _, _ = _module("segment_chunks")
    starts = np.array([0, 5, 5, 13, 17], np.int32)  # the last segment runs past x
    with pytest.raises(TileirError, match=r"jit_element_reads\.py:\d+:\d+: error: 'pto.view'"):
        run(module, {**inputs, "starts": starts})
    source = """\
import pypto


@pypto.frontend.jit()
def k(t: pypto.Tensor([3], pypto.DT_INT32), x: pypto.Tensor([8, 8], pypto.DT_FP32),
      out: pypto.Tensor([1, 8], pypto.DT_FP32)):
    for i in pypto.loop(2):
        j = t[i + 2]
        out[:] = pypto.view(x, [1, 8], [j, 0])
"""
    module = load_source(source, "far.py")
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(
        TileirError,
        match=r"far\.py:8:13: error: 'pto.get_tensor_data': get_tensor_data: index \[3\] is "
        r"outside the tensor's shape \[3\]",
    ):
        run(module, {"t": np.zeros(3, np.int32), "x": x})


ERRORS_HEADER = """\
import pypto


@pypto.frontend.jit()
def k(t: pypto.Tensor([4, 3], pypto.DT_INT32), f: pypto.Tensor([4, 3], pypto.DT_FP32),
      x: pypto.Tensor([8, 8], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
"""

ERRORS = [
    ("e = f[1, 2]\n", "so it needs an integer tensor, got a tensor in memory of shape [4, 3] f32"),
    ("e = t[4, 0]\n", "'pto.get_tensor_data' index 4 in dim 0 is outside the tensor's size 4"),
    ("e = t[0, -4]\n", "index -4 is out of range for a dim of size 3"),
    ("e = t[1.0, 0]\n", "tensor indices must be integers or index values, got float 1.0"),
    ("e = t[0, 0, 0]\n", "3 indices for a rank-2 tensor"),
    ("e = t[0, 0] * 0.5\nout[:] = x[e:e + 1, :]\n", "expected an integer"),
]


@pytest.mark.parametrize(("body", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_misuse_is_a_located_error(body: str, message: str) -> None:
    source = ERRORS_HEADER + textwrap.indent(body, "    ")
    with pytest.raises(TileirError) as info:
        load_source(source, "bad.py")
    text = str(info.value)
    assert text.startswith("bad.py:7:"), text
    assert message in text, text


# --------------------------------------------------------------------------- passes


READ_AFTER_WRITE = """\
pto.kernel @k(%t: memref<4xi32>, %x: memref<8x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 {
    %three = arith.constant 3 : i32
    %z = pto.full %three : i32 -> tensor<1xi32>
    pto.assemble %z into %t[%i] : tensor<1xi32>, memref<4xi32>
  }
  pto.loop %j = %c0 to %c4 step %c1 {
    %e = pto.get_tensor_data %t[%j] : memref<4xi32>
    %v = pto.view %x[%e, 0] : memref<8x8xf32> -> tensor<1x8xf32>
    pto.assemble %v into %out[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}
"""


def test_the_read_is_a_memory_effect_the_passes_respect() -> None:
    module = parse_module(READ_AFTER_WRITE, "raw.mlir")
    (read,) = [op for op in module.walk() if isinstance(op, pto.GetTensorDataOp)]
    (effect,) = get_effects(read)
    assert effect.kind == MemoryEffectKind.READ and effect.value is read.source
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    want = np.repeat(x[3:4], 4, axis=0)  # every row reads t[j] == 3, written first
    for pipeline in ("loop-fusion", "sink-invariants", "default", "loop-fusion,loop-unroll,stitch"):
        moved = parse_module(READ_AFTER_WRITE, "raw.mlir")
        apply_pipeline(moved, pipeline)
        got = run(moved, {"t": np.zeros(4, np.int32), "x": x})["out"]
        np.testing.assert_array_equal(got, want, err_msg=pipeline)
    # loop-fusion keeps the loops apart because the second reads what the first
    # writes; reading another table, they fuse
    other = READ_AFTER_WRITE.replace("%t: memref<4xi32>,", "%t: memref<4xi32>, %u: memref<4xi32>,")
    other = other.replace("pto.get_tensor_data %t[", "pto.get_tensor_data %u[")
    for text, loops in ((READ_AFTER_WRITE, 2), (other, 1)):
        fused = parse_module(text, "raw.mlir")
        apply_pipeline(fused, "loop-fusion")
        assert len([op for op in fused.walk() if isinstance(op, pto.LoopOp)]) == loops


# --------------------------------------------------------------------------- real pypto


@pytest.mark.pypto
@pytest.mark.parametrize(
    ("name", "source"),
    [
        (name, source)
        for name in sorted(CASES)
        for source in ("as written", "emitted")
        if not (name in NOT_IN_020 and source == "as written")
    ],
)
def test_kernels_on_real_pypto(name: str, source: str, tmp_path: Path) -> None:
    module, inputs, args, golden = _module(name)
    path = KERNELS
    if source == "emitted":
        path = tmp_path / f"{name}_emitted.py"
        path.write_text(emit(module))
    out = run_kernel(path, name, args, inputs, outputs=sorted(golden), workdir=tmp_path / "w")
    for k, want in golden.items():
        np.testing.assert_array_equal(out[k], want, err_msg=k)
