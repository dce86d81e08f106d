"""`sink-invariants`: recompute a loop's loop-invariant tile preparation inside the loop.

The opposite of hoisting, for PyPTO's scheduler: tile ops before a `pto.loop` whose
results only the loop uses (a norm weight cast to FP32 and broadcast, say) become a task
of their own that every loop task waits for, and PyPTO's SIM cost model charges that
cross-task dependency about 4 us (fused RMSNorm + RoPE over 64 rows: 9.9 us with the
weight prepared before the loop, 5.1 us with it prepared in each loop task). Inside the
loop the same ops run on the same data in every iteration, so the results are the same,
bit for bit.

Contract. An op in the block of a `pto.loop` or `pto.loop_unroll`, before the loop, is
sunk into it when

- it is a `pto` tile op without regions that is not a Cube op (matmul) and has no tile
  settings of its own: its memory effects are none, allocating its result, or reading
  memory that nothing in the kernel writes (no `pto.assemble` into it or into a memref
  derived from the same argument; an op of unknown effects anywhere blocks every read);
- every result is a tile, used only inside the loop or by other ops that are sunk.

The sunk ops are cloned, in their order, at the start of the loop body, each preceded by
the `pto.set_vec_tile_shapes` that was in force where it stood (PyPTO's tile shape is a
setting that holds until the next one); after them the setting in force at the loop is
restored, so the body's own ops see what they saw before. The originals are erased.
Loops whose invariant ops are used after the loop too are left as they are for those ops.

```mlir
// before
pto.set_vec_tile_shapes [1, 64]
%g = pto.view %gamma[0, 0] : memref<1x64xbf16> -> tensor<1x64xbf16>
%gf = pto.cast %g : tensor<1x64xbf16> -> tensor<1x64xf32>
pto.set_vec_tile_shapes [8, 64]
pto.loop %i = %c0 to %c8 step %c1 name "rows" {
  ... pto.mul %t, %gf ...
}
// after sink-invariants
pto.set_vec_tile_shapes [1, 64]
pto.set_vec_tile_shapes [8, 64]
pto.loop %i = %c0 to %c8 step %c1 name "rows" {
  pto.set_vec_tile_shapes [1, 64]
  %g = pto.view %gamma[0, 0] : memref<1x64xbf16> -> tensor<1x64xbf16>
  %gf = pto.cast %g : tensor<1x64xbf16> -> tensor<1x64xf32>
  pto.set_vec_tile_shapes [8, 64]
  ... pto.mul %t, %gf ...
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import EffectInstance, MemoryEffectKind, get_effects

from tileir.bindings.matmul import CUBE_OPS
from tileir.dialect import pto


def _written(kernel: Operation) -> set[SSAValue] | None:
    """Roots of the memory any op of `kernel` writes (None: an op's effects are unknown;
    the settings ops only set compiler state)."""
    out: set[SSAValue] = set()
    for op in kernel.walk():
        if op is kernel or op.regions or isinstance(op, pto.SETTING_OPS):
            continue
        effects = get_effects(op)
        if effects is None:
            return None
        out |= {
            pto.memory_root(e.value)
            for e in effects
            if e.kind == MemoryEffectKind.WRITE and e.value
        }
    return out


def _effects_allow(op: Operation, written: set[SSAValue] | None) -> bool:
    effects: set[EffectInstance] | None = get_effects(op)  # type: ignore[assignment]
    if effects is None:
        return False
    for e in effects:
        if e.kind == MemoryEffectKind.ALLOC:
            continue
        if e.kind != MemoryEffectKind.READ or written is None or e.value is None:
            return False
        if pto.memory_root(e.value) in written:
            return False
    return True


def _inside(op: Operation, loop: pto.LoopOp | pto.LoopUnrollOp) -> bool:
    return loop.is_ancestor(op)


class SinkInvariants(RewritePattern):
    """Sink into one `pto.loop` / `pto.loop_unroll` the tile ops before it that only it
    uses."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            return
        block = op.parent_block()
        kernel = op.parent_op()
        while kernel is not None and not isinstance(kernel, pto.KernelOp):
            kernel = kernel.parent_op()
        if block is None or kernel is None:
            return
        written = _written(kernel)
        before: list[Operation] = []
        for o in block.ops:
            if o is op:
                break
            before.append(o)
        sunk: set[Operation] = set()
        for o in reversed(before):
            if self._sinkable(o, op, sunk, written):
                sunk.add(o)
        if not sunk:
            return
        self._move(op, block, before, sunk, rewriter)

    @staticmethod
    def _sinkable(
        o: Operation,
        loop: pto.LoopOp | pto.LoopUnrollOp,
        sunk: set[Operation],
        written: set[SSAValue] | None,
    ) -> bool:
        if o.dialect_name() != "pto" or o.regions or isinstance(o, pto.SETTING_OPS):
            return False
        if isinstance(o, CUBE_OPS) or not o.results:
            return False
        if not all(isinstance(r.type, TensorType) for r in o.results):
            return False
        if not _effects_allow(o, written):
            return False
        return all(
            _inside(u.operation, loop) or u.operation in sunk for r in o.results for u in r.uses
        )

    @staticmethod
    def _move(
        loop: pto.LoopOp | pto.LoopUnrollOp,
        block: Block,
        before: list[Operation],
        sunk: set[Operation],
        rewriter: PatternRewriter,
    ) -> None:
        body = loop.body.block
        where = InsertPoint.at_start(body)
        in_force: pto.SetVecTileShapesOp | None = None
        emitted: pto.SetVecTileShapesOp | None = None
        for o in before:
            if isinstance(o, pto.SetVecTileShapesOp):
                in_force = o
                continue
            if o not in sunk:
                continue
            if in_force is not None and in_force is not emitted:
                rewriter.insert(in_force.clone(), where)
                emitted = in_force
            o.detach()
            rewriter.insert(o, where)
        if in_force is not None and emitted is not in_force:
            rewriter.insert(in_force.clone(), where)
        rewriter.has_done_action = True


@dataclass(frozen=True)
class SinkInvariantsPass(ModulePass):
    """Recompute loop-invariant tile preparation inside the loop that uses it."""

    name = "sink-invariants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = SinkInvariants()
        for loop in [o for o in op.walk() if isinstance(o, pto.LoopOp | pto.LoopUnrollOp)]:
            pattern.match_and_rewrite(loop, PatternRewriter(loop))


__all__ = ["SinkInvariants", "SinkInvariantsPass"]
