"""`loop-fusion`: fuse adjacent `pto.loop`s over the same range into one loop.

Two loops that run over the same indices and touch disjoint memory compute the same
thing whether loop 2 runs after loop 1 or each iteration of loop 2 runs right after the
same iteration of loop 1. One fused loop is one PyPTO loop (one graph per iteration
instead of two), and its body holds both iterations side by side for `stitch` to
interleave. The pass is deliberately conservative; it fuses `pto.loop` A with the
`pto.loop` B that follows it in the same block only when all of this holds:

- between A and B there are only pure scalar ops (`arith` ops and `memref.dim` /
  `tensor.dim` without memory effects and without tile results); they are moved in
  front of A, which is legal because a `pto.loop` has no results for them to use;
- A and B have the same lower bound, upper bound and step: the same SSA value or
  `arith.constant`s of equal value;
- the same `unroll` list, or neither has one;
- neither contains `pto.is_loop_begin` / `pto.is_loop_end` (they name one loop's first
  or last iteration) nor `scf.if`, nor a tile-shape, semantic-label or compiler-option setting (settings
  are statements in program order: fusing would change the one in force for some op);
- they are independent: no buffer (kernel argument or `pto.tensor` workspace) that one
  loop writes (`pto.assemble` destination, a workspace it allocates) is read (`pto.view`
  source) or written by the other. Distinct kernel arguments are assumed not to alias
  (as PyPTO's kernel tensors do not); a memref that is neither a kernel argument nor a
  workspace, and any op whose memory effects are unknown, block fusion.

Since neither loop sees the other's writes, every op reads the same data in any
interleaving of the two loops' iterations, so the outputs are bit-identical.

The fused loop is A: its body is A's body followed by B's, with B's induction variable
replaced by A's; it keeps A's `name`, `idx_name` and attributes (B's are dropped, since
PyPTO has one name per loop), and is `parallel` only when both were (A's iterations and
B's are each independent, and A and B touch no common buffer, so the fused ones are). Chains fuse too: A, B and C over the same range become
one loop. Loops nested in a fused body are fused where they in turn qualify.

```mlir
// before
pto.loop %i = %c0 to %c4 step %c1 name "a" {
  %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
  pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
}
%c2 = arith.constant 2.0 : f32
pto.loop %j = %c0 to %c4 step %c1 name "b" {
  %u = pto.view %x[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
  %v = pto.mul %u, %c2 : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
  pto.assemble %v into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
}
// after
%c2 = arith.constant 2.0 : f32
pto.loop %i = %c0 to %c4 step %c1 name "a" {
  %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
  pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  %u = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
  %v = pto.mul %u, %c2 : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
  pto.assemble %v into %out2[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref, scf, tensor
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator, get_effects

from tileir.dialect.pto import (
    AssembleOp,
    IsLoopBeginOp,
    IsLoopEndOp,
    KernelOp,
    LoopOp,
    LoopUnrollOp,
    SetCubeTileShapesOp,
    SetOptionsOp,
    SetSemanticLabelOp,
    SetVecTileShapesOp,
    StageOp,
    StitchOp,
    TensorOp,
    ViewOp,
    YieldOp,
    constant_index,
    memory_root,
)
from tileir.passes.known_effects import memref_effects

_FORBIDDEN = (
    IsLoopBeginOp,
    IsLoopEndOp,
    scf.IfOp,
    SetVecTileShapesOp,
    SetCubeTileShapesOp,
    SetSemanticLabelOp,
    SetOptionsOp,
)
"""Ops whose meaning depends on which loop, or which point of program order, they sit in."""

_STRUCTURE = (LoopOp, LoopUnrollOp, StitchOp, StageOp)
"""Region ops that act only through their contents (walked separately)."""


@dataclass
class _Footprint:
    """The buffers a loop reads and writes; `blocked` when that cannot be told."""

    reads: set[SSAValue]
    writes: set[SSAValue]
    blocked: bool = False


def _is_buffer(value: SSAValue) -> bool:
    """A memref we can name: a kernel argument or a `pto.tensor` workspace."""
    if isinstance(value, BlockArgument):
        return isinstance(value.block.parent_op(), KernelOp)
    return isinstance(value.owner, TensorOp)


def footprint(loop: LoopOp) -> _Footprint:
    """What `loop` (its nested ops included) reads and writes."""
    fp = _Footprint(set(), set())

    def touch(value: SSAValue, write: bool) -> None:
        value = memory_root(value)  # through a `pto.reshape_mem` alias: its memory
        if not _is_buffer(value):
            fp.blocked = True
        (fp.writes if write else fp.reads).add(value)

    for op in loop.body.walk():
        if isinstance(op, _FORBIDDEN):
            fp.blocked = True
        elif isinstance(op, ViewOp):
            if isinstance(op.source.type, MemRefType):
                touch(op.source, False)
        elif isinstance(op, AssembleOp):
            touch(op.dst, True)
        elif isinstance(op, TensorOp):
            fp.writes.add(op.result)  # local to the loop: the other loop cannot name it
        elif isinstance(op, _STRUCTURE) or op.has_trait(IsTerminator):
            continue
        else:
            accesses, unknown = memref_effects(op)
            for value, write in accesses:
                touch(value, write)
            if unknown:
                fp.blocked = True
    return fp


def _same_index(a: SSAValue, b: SSAValue) -> bool:
    if a is b:
        return True
    ca, cb = constant_index(a), constant_index(b)
    return ca is not None and ca == cb


def _movable(op: Operation) -> bool:
    """A pure scalar op that may sit between two fused loops (and move in front)."""
    if op.regions or any(isinstance(r.type, TensorType | MemRefType) for r in op.results):
        return False
    if not (op.name.startswith("arith.") or isinstance(op, memref.DimOp | tensor.DimOp)):
        return False
    if isinstance(op, memref.DimOp | tensor.DimOp):
        return True  # reads only a shape, which no loop changes
    return get_effects(op) == set()


def fusable(a: LoopOp, b: LoopOp) -> bool:
    """Whether `b` (after `a` in the same block) may be fused into `a`."""
    if not (
        _same_index(a.lower_bound, b.lower_bound)
        and _same_index(a.upper_bound, b.upper_bound)
        and _same_index(a.step, b.step)
    ):
        return False
    if a.factors != b.factors:
        return False
    fa, fb = footprint(a), footprint(b)
    if fa.blocked or fb.blocked:
        return False
    return not (fa.writes & (fb.reads | fb.writes) or fb.writes & fa.reads)


def _next_loop(a: LoopOp) -> tuple[LoopOp, list[Operation]] | None:
    """The `pto.loop` after `a` past only movable ops, and those ops."""
    between: list[Operation] = []
    op = a.next_op
    while op is not None and not isinstance(op, LoopOp):
        if not _movable(op):
            return None
        between.append(op)
        op = op.next_op
    return (op, between) if op is not None else None


def fuse(a: LoopOp, b: LoopOp, between: list[Operation]) -> None:
    """Fuse `b` into `a` (legality is the caller's `fusable`)."""
    block = a.parent_block()
    assert block is not None
    for op in between:
        op.detach()
        block.insert_op_before(op, a)
    body_a, body_b = a.body.block, b.body.block
    body_b.args[0].replace_all_uses_with(body_a.args[0])
    terminator = body_a.last_op
    assert isinstance(terminator, YieldOp)
    for op in list(body_b.ops):
        if isinstance(op, YieldOp):
            continue
        op.detach()
        body_a.insert_op_before(op, terminator)
    if b.parallel is None:
        # a fused iteration runs one of B's, which may depend on another of B's
        a.parallel = None
    b.detach()
    b.erase()


def fuse_block(block: Block) -> int:
    """Fuse the adjacent loops of one block; the number of fusions."""
    count = 0
    op = block.first_op
    while op is not None:
        if isinstance(op, LoopOp):
            found = _next_loop(op)
            if found is not None and fusable(op, found[0]):
                fuse(op, *found)
                count += 1
                continue  # try the next loop against the fused one
        op = op.next_op
    return count


@dataclass(frozen=True)
class LoopFusionPass(ModulePass):
    """Fuse adjacent independent `pto.loop`s over the same range (see the module doc)."""

    name = "loop-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        changed = True
        while changed:  # a fusion can make inner loops of the two bodies adjacent
            changed = False
            blocks = [b for o in op.walk() for r in o.regions for b in r.blocks]
            for block in blocks:
                if fuse_block(block):
                    changed = True
                    break  # the block list may hold erased blocks now: collect again


__all__ = ["LoopFusionPass", "footprint", "fusable", "fuse"]
