"""Passes see through `pto.reshape_mem`: a read through the alias is a read of its
root's memory, so stitch, loop-fusion, sink-invariants and coarsen keep it ordered after
a write of the root (writes go to the root by its own name; PyPTO loses writes through
an alias, and `pto.assemble` refuses one). Each program here is checked against numpy
written by hand, and the stitch case is shown to break when stitch compares memrefs by
name instead of by root (the bug this guards against)."""

from __future__ import annotations

import numpy as np
import pytest

from tileir.backends.numpy import run
from tileir.dialect import pto
from tileir.ir import make_context, parse_module
from tileir.passes import stitch_effects
from tileir.passes.coarsen import CoarsenPass
from tileir.passes.loop_fusion import LoopFusionPass
from tileir.passes.loop_unroll import LoopUnrollPass
from tileir.passes.sink import SinkInvariantsPass
from tileir.passes.stitch import StitchPass
from tileir.testing import SemanticsMismatch, check_pass

# The accumulator is written by its own name and read through a [2, 4] alias.
ACCUMULATE_ALIAS = """
pto.kernel @acc(%x: memref<11x8xf32>, %out: memref<1x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c11 = arith.constant 11 : index
  %zero = arith.constant 0.0 : f32
  %z = pto.full %zero : f32 -> tensor<1x8xf32>
  %ws = pto.tensor "acc" : memref<1x8xf32>
  %wa = pto.reshape_mem %ws : memref<1x8xf32> -> memref<2x4xf32>
  pto.assemble %z into %ws[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
  pto.loop %i = %c0 to %c11 step %c1 name "acc" unroll [4, 1] {
    %a4 = pto.view %wa[0, 0] : memref<2x4xf32> -> tensor<2x4xf32>
    %a = pto.reshape %a4 : tensor<2x4xf32> -> tensor<1x8xf32>
    %t = pto.view %x[%i, 0] : memref<11x8xf32> -> tensor<1x8xf32>
    %two = arith.constant 2.0 : f32
    %a2 = pto.mul %a, %two : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    %s = pto.add %a2, %t : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
    pto.assemble %s into %ws[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
  }
  %r = pto.view %ws[0, 0] : memref<1x8xf32> -> tensor<1x8xf32>
  pto.assemble %r into %out[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
}
"""


def _accumulate(x: np.ndarray) -> np.ndarray:
    acc = np.zeros((1, 8), np.float32)
    for row in x:
        acc = acc * np.float32(2) + row[None]
    return acc


@pytest.mark.parametrize("n", [2, 4])
def test_stitch_keeps_a_write_before_the_next_read_through_an_alias(n: int) -> None:
    x = np.random.default_rng(n).standard_normal((11, 8)).astype(np.float32)
    module = parse_module(ACCUMULATE_ALIAS)
    np.testing.assert_array_equal(run(module, {"x": x})["out"], _accumulate(x))
    LoopUnrollPass().apply(make_context(), module)
    StitchPass(max_functions=n).apply(make_context(), module)
    module.verify()
    assert any(isinstance(op, pto.StitchOp) for op in module.walk())
    np.testing.assert_array_equal(run(module, {"x": x})["out"], _accumulate(x))


def test_stitch_comparing_memrefs_by_name_would_miscompile(monkeypatch) -> None:
    """The planted bug: with aliases taken for separate memory, stitch moves iteration
    k+1's read of the accumulator (through the alias) above iteration k's write."""
    monkeypatch.setattr(stitch_effects, "is_alias", lambda value: False)
    monkeypatch.setattr(stitch_effects, "memory_root", lambda value: value)
    with pytest.raises(SemanticsMismatch):
        check_pass(
            [LoopUnrollPass(), StitchPass(max_functions=4)],
            parse_module(ACCUMULATE_ALIAS),
            n_inputs=1,
        )


def _two_loops(second_reads: str) -> str:
    """Loop 1 writes `out`; loop 2 (same range) reads `second_reads` (%y, or %o2: `out`
    through a [8, 16] alias)."""
    return f"""
pto.kernel @k(%x: memref<16x8xf32>, %y: memref<8x16xf32>, %out: memref<16x8xf32>, %r: memref<8x16xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %o2 = pto.reshape_mem %out : memref<16x8xf32> -> memref<8x16xf32>
  %c6 = arith.constant 6 : index
  pto.loop %i = %c0 to %c4 step %c1 name "a" {{
    %s = arith.muli %i, %c4 : index
    %t = pto.view %x[%s, 0] : memref<16x8xf32> -> tensor<4x8xf32>
    %e = pto.exp %t : tensor<4x8xf32>
    pto.assemble %e into %out[%s, 0] : tensor<4x8xf32>, memref<16x8xf32>
  }}
  pto.loop %j = %c0 to %c4 step %c1 name "b" {{
    %s = arith.muli %j, %c2 : index
    %rev = arith.subi %c6, %s : index
    %t = pto.view {second_reads}[%rev, 0] : memref<8x16xf32> -> tensor<2x16xf32>
    %n = pto.neg %t : tensor<2x16xf32>
    pto.assemble %n into %r[%rev, 0] : tensor<2x16xf32>, memref<8x16xf32>
  }}
}}
"""


def test_loop_fusion_fuses_loops_on_other_memory_and_keeps_an_alias_read_apart() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((8, 16)).astype(np.float32)
    ex = np.exp(x.astype(np.float64))
    # Loop b reads y: independent of what loop a writes, so fused.
    fused = parse_module(_two_loops("%y"))
    LoopFusionPass().apply(make_context(), fused)
    assert sum(isinstance(op, pto.LoopOp) for op in fused.walk()) == 1
    out = run(fused, {"x": x, "y": y})
    np.testing.assert_allclose(out["r"], -y)
    np.testing.assert_allclose(out["out"], ex, rtol=1e-6)
    # Loop b reads `out` through another shape of it, last rows first: its iteration 0
    # reads the [16, 8] rows 12..15, which loop a writes in its iteration 3, so fused
    # loops would read rows not yet written: the loops stay apart.
    kept = parse_module(_two_loops("%o2"))
    LoopFusionPass().apply(make_context(), kept)
    assert sum(isinstance(op, pto.LoopOp) for op in kept.walk()) == 2
    np.testing.assert_allclose(run(kept, {"x": x, "y": y})["r"], -ex.reshape(8, 16), rtol=1e-6)


SINK = """
pto.kernel @k(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %flat = pto.reshape_mem %out : memref<4x8xf32> -> memref<32xf32>
  %first = pto.view %flat[0] : memref<32xf32> -> tensor<8xf32>
  pto.loop %i = %c0 to %c4 step %c1 name "rows" {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %f = pto.reshape %first : tensor<8xf32> -> tensor<1x8xf32>
    %s = pto.add %t, %f : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
    pto.assemble %s into %out[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}
"""


def test_sink_keeps_a_read_through_an_alias_of_memory_the_loop_writes() -> None:
    """`%first` reads row 0 of `out` (through `%flat`) before the loop overwrites it:
    sunk into the loop it would read the new row 0 from iteration 1 on."""
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    start = np.full((4, 8), 3.0, np.float32)
    module = parse_module(SINK)
    SinkInvariantsPass().apply(make_context(), module)
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    assert not any(
        isinstance(op, pto.ViewOp) and op.source.name_hint == "flat" for op in loop.walk()
    )
    out = run(module, {"x": x, "out": start.copy()})["out"]
    np.testing.assert_array_equal(out, x + np.float32(3.0))


def test_coarsen_leaves_a_loop_that_names_written_memory_two_ways(capsys) -> None:
    """One loop writing `out` and reading it through an alias: row blocks of the two
    names are different elements, so k blocks an iteration could reorder them."""
    text = """
pto.kernel @k(%x: memref<8x16xf32>, %out: memref<8x16xf32>, %r: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %o2 = pto.reshape_mem %out : memref<8x16xf32> -> memref<16x8xf32>
  pto.loop %i = %c0 to %c4 step %c1 name "rows" {
    %s = arith.muli %i, %c2 : index
    %t = pto.view %x[%s, 0] : memref<8x16xf32> -> tensor<2x16xf32>
    pto.assemble %t into %out[%s, 0] : tensor<2x16xf32>, memref<8x16xf32>
    %u = pto.view %o2[%s, 0] : memref<16x8xf32> -> tensor<2x8xf32>
    %e = pto.exp %u : tensor<2x8xf32>
    pto.assemble %e into %r[%s, 0] : tensor<2x8xf32>, memref<16x8xf32>
  }
}
"""
    module = parse_module(text)
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    before = run(module, {"x": x})
    # by hand: iteration i copies x's rows 2i, 2i+1 into out, then exps the [16, 8] rows
    # 2i, 2i+1 of out (its row i: already written when i <= 2i + 1, always)
    out = x.astype(np.float64)
    r = np.exp(out.reshape(16, 8)[:8])
    np.testing.assert_allclose(before["out"], out, rtol=1e-6)
    np.testing.assert_allclose(before["r"][:8], r, rtol=1e-6)
    CoarsenPass(factor=2, report=True).apply(make_context(), module)
    assert "names another way" in capsys.readouterr().err
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    assert loop.step.owner.value.value.data == 1  # left alone
    np.testing.assert_allclose(run(module, {"x": x})["r"][:8], r, rtol=1e-6)
