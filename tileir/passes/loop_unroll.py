"""`loop-unroll`: make PyPTO's `unroll_list` cascade explicit in the IR.

PyPTO compiles a loop with `unroll_list=[f1, ..., 1]` into one graph per factor (named
`<loop>_LoopUnroll<p>`): the loop runs chunks of the largest factor that still fits and
cascades to the smaller factors for the rest. This pass writes that cascade out, so that
later passes (`stitch`) see the iterations of a chunk side by side:

- a `pto.loop` with an unroll list becomes a sequence of chunk loops, one per factor that
  is used; each chunk loop steps by `p * step` and its body holds the original body `p`
  times, for the consecutive indices `j, j + step, ..., j + (p - 1) * step`;
- static bounds give exactly the chunk loops that run (13 iterations with [8, 4, 2, 1]:
  one chunk of 8, one of 4, one of 1; an empty loop disappears); dynamic bounds give every
  factor's chunk loop with bounds computed by `arith` on `index`;
- a `pto.loop_unroll` (chunk start `i` and chunk length `n`) becomes the same cascade of
  chunk loops, each holding the body once with `n` a constant;
- the cascade is greedy (as many chunks of the largest factor as fit, then the next
  factor on what is left), so factors that do not divide each other ([3, 2], [5, 2])
  still visit every index exactly once and in order; `unroll_schedule` is that rule;
- `pto.is_loop_begin` / `pto.is_loop_end` keep referring to the ORIGINAL loop: with
  static bounds they become the chunk loop's own `is_loop_begin` (first chunk, first
  copy) / `is_loop_end` (last chunk, last copy) or a constant `false`; with dynamic
  bounds they become `arith.cmpi` (`index == lb`, `index >= ub - step`), which the numpy
  back end evaluates like any `arith` op.

Options: `factors` overrides the unroll list of every selected loop (so it also unrolls
loops that had none); `max-body-ops` drops factors whose unrolled body would exceed that
many ops (1 is always kept); `loops` selects loops by `name` (default: every loop);
`emittable` leaves alone the loops whose explicit form the PyPTO emitter cannot write
(dynamic bounds plus loop-state queries: PyPTO 0.2.0 accepts no `if` on a comparison).

```mlir
// before (S = 13)
pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [8, 4, 2, 1] {
  %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
  pto.assemble %t into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
}
// after
pto.loop %j = %c0 to %c8 step %c8 name "rows_LoopUnroll8" {
  %t0 = pto.view %x[%j, 0] ...            // iteration j
  pto.assemble %t0 into %out[%j, 0] ...
  %j1 = arith.addi %j, %c1 : index        // iteration j + 1
  %t1 = pto.view %x[%j1, 0] ...
  ...                                      // up to j + 7
}
pto.loop %j = %c8 to %c12 step %c4 name "rows_LoopUnroll4" { ... 4 copies ... }
pto.loop %j = %c12 to %c13 step %c1 name "rows_LoopUnroll1" { ... 1 copy ... }
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import UNKNOWN_LOC, IndexType, IntegerAttr, ModuleOp, i1
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator

from tileir.diagnostics import error_at
from tileir.dialect.pto import (
    IsLoopBeginOp,
    IsLoopEndOp,
    LoopOp,
    LoopUnrollOp,
    YieldOp,
    constant_index,
    normalize_unroll_list,
)
from tileir.ir import append_ops, block_ops, move_run, new_op
from tileir.stamping import CopyTemplate

UNROLLED_SUFFIX = "_LoopUnroll"
"""PyPTO's name for the graph of one factor: `<loop>_LoopUnroll<p>`."""


# --------------------------------------------------------------------------- the schedule


@dataclass(frozen=True)
class Chunk:
    """`count` consecutive chunks of `factor` iterations, the first starting at `start`."""

    factor: int
    start: int
    count: int

    def indices(self, step: int) -> list[int]:
        return [self.start + k * step for k in range(self.count * self.factor)]


def trip_count(start: int, stop: int, step: int) -> int:
    """Iterations of `for i in range(start, stop, step)` with `step > 0`."""
    return max(0, -(-(stop - start) // step))


def unroll_schedule(start: int, stop: int, step: int, factors: Sequence[int]) -> list[Chunk]:
    """The greedy cascade: as many chunks of each factor (largest first) as fit in what
    the larger factors left. Factors are normalised as PyPTO does (descending, 1 added),
    so every index is visited once, in order, whatever the factors are."""
    chunks: list[Chunk] = []
    remaining = trip_count(start, stop, step)
    position = start
    for f in normalize_unroll_list(factors):
        n = remaining // f
        if n:
            chunks.append(Chunk(f, position, n))
            position += n * f * step
            remaining -= n * f
    return chunks


def chunk_name(name: str | None, factor: int) -> str:
    return f"{name or 'loop'}{UNROLLED_SUFFIX}{factor}"


# --------------------------------------------------------------------------- IR helpers


_INDEX = IndexType()
_INDEX_ATTRS: dict[int, IntegerAttr] = {}


def _const(ops: list[Operation], value: int) -> SSAValue:
    """`arith.ConstantOp.from_int_and_width(value, IndexType())`, made by `new_op` with
    one (immutable, shared) attribute per value: a chunk loop makes one per copy."""
    attr = _INDEX_ATTRS.get(value)
    if attr is None:
        attr = _INDEX_ATTRS[value] = IntegerAttr(value, _INDEX)
    op = new_op(arith.ConstantOp, (), (_INDEX,), {"value": attr}, {}, UNKNOWN_LOC)
    ops.append(op)
    return op.result


def _add(a: SSAValue, b: SSAValue) -> arith.AddiOp:
    """`arith.AddiOp(a, b)`, made by `new_op` (which fills in its default overflow flags,
    as `AddiOp.__init__` passes them)."""
    return new_op(arith.AddiOp, (a, b), (a.type,), {}, {}, UNKNOWN_LOC)


def _false(ops: list[Operation]) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(0, i1))
    ops.append(op)
    return op.result


def _loop_state_uses(index: SSAValue) -> tuple[bool, bool]:
    """Whether the loop body asks `is_loop_begin` / `is_loop_end` of the loop's `index`
    (read from the uses of `index`, a block argument of the body: all inside it)."""
    begin = end = False
    for use in index.uses:
        kind = type(use.operation)
        if kind is IsLoopBeginOp:
            begin = True
        elif kind is IsLoopEndOp:
            end = True
    return begin, end


def _replace_loop_state(
    ops: Sequence[Operation], index: SSAValue, begin: SSAValue | None, end: SSAValue | None
) -> None:
    """Point the cloned loop-state queries on `index` at the values that keep their
    original meaning, and drop the clones."""
    for top in ops:
        for op in list(top.walk()):
            if isinstance(op, IsLoopBeginOp | IsLoopEndOp) and op.index is index:
                value = begin if isinstance(op, IsLoopBeginOp) else end
                assert value is not None
                op.result.replace_all_uses_with(value)
                op.detach()
                op.erase()


@dataclass(frozen=True)
class _Bounds:
    """The loop's bounds as SSA values plus their constant values when known."""

    lb: SSAValue
    ub: SSAValue
    step: SSAValue
    c_lb: int | None
    c_ub: int | None
    c_step: int | None

    @property
    def static(self) -> bool:
        return None not in (self.c_lb, self.c_ub, self.c_step)

    @staticmethod
    def of(loop: LoopOp | LoopUnrollOp) -> _Bounds:
        return _Bounds(
            loop.lower_bound,
            loop.upper_bound,
            loop.step,
            constant_index(loop.lower_bound),
            constant_index(loop.upper_bound),
            constant_index(loop.step),
        )


@dataclass(frozen=True)
class _ChunkLoop:
    """One chunk loop to build: bounds, factor, and whether it holds the original first
    / last iteration for certain (static) or not at all (None = decide at run time)."""

    factor: int
    lb: SSAValue
    ub: SSAValue
    step: SSAValue
    first: bool | None
    last: bool | None
    last_from: SSAValue | None = None
    """Dynamic bounds: the index (copy index, or chunk start for `loop_unroll`) from
    which on an iteration is the original loop's last."""


def _scaled(ops: list[Operation], b: _Bounds, k: int) -> SSAValue:
    """`k * step` as an index value (folded when the step is constant)."""
    if b.c_step is not None:
        return _const(ops, k * b.c_step)
    mul = arith.MuliOp(b.step, _const(ops, k))
    ops.append(mul)
    return mul.result


def _plan(
    b: _Bounds, factors: list[int], ops: list[Operation], chunked_body: bool
) -> list[_ChunkLoop]:
    """The chunk loops, with the bound arithmetic they need appended to `ops`."""
    if b.static:
        assert b.c_lb is not None and b.c_ub is not None and b.c_step is not None
        chunks = unroll_schedule(b.c_lb, b.c_ub, b.c_step, factors)
        plan: list[_ChunkLoop] = []
        for n, c in enumerate(chunks):
            lb = _const(ops, c.start)
            ub = _const(ops, c.start + c.count * c.factor * b.c_step)
            step = _const(ops, c.factor * b.c_step)
            plan.append(_ChunkLoop(c.factor, lb, ub, step, n == 0, n == len(chunks) - 1))
        return plan
    # trip = max(0, ceildiv(ub - lb, step)); each factor takes floordiv(rest, f) chunks.
    span = arith.SubiOp(b.ub, b.lb)
    trips = arith.CeilDivSIOp(span, b.step)
    zero = _const(ops, 0)
    ops += [span, trips]
    clamp = arith.MaxSIOp(trips, zero)
    ops.append(clamp)
    rest: SSAValue = clamp.result
    start: SSAValue = b.lb
    plan = []
    # i is the last index iff i + step >= ub; a loop_unroll chunk at j of length f is
    # the last chunk iff j + f * step >= ub. Comparing with `ub - ...` keeps the copies
    # free of index arithmetic other than their own index.
    last_copy = arith.SubiOp(b.ub, b.step)
    ops.append(last_copy)
    for f in factors:
        step = _scaled(ops, b, f)
        last_from: SSAValue = last_copy.result
        if chunked_body:
            last_chunk = arith.SubiOp(b.ub, step)
            ops.append(last_chunk)
            last_from = last_chunk.result
        if f == 1:
            plan.append(_ChunkLoop(1, start, b.ub, step, None, None, last_from))
            break
        cf = _const(ops, f)
        n = arith.FloorDivSIOp(rest, cf)
        covered = arith.MuliOp(n, cf)
        distance = arith.MuliOp(n, step)
        end = arith.AddiOp(start, distance)
        left = arith.SubiOp(rest, covered)
        ops += [n, covered, distance, end, left]
        plan.append(_ChunkLoop(f, start, end.result, step, None, None, last_from))
        start, rest = end.result, left.result
    return plan


# --------------------------------------------------------------------------- rewriting


def _new_chunk_loop(loop: LoopOp | LoopUnrollOp, c: _ChunkLoop) -> tuple[LoopOp, SSAValue]:
    """`LoopOp(c.lb, c.ub, c.step, name=<chunk name>, idx_name=<loop's>, parallel=<loop's>)`
    with an empty body, made by `new_op` with `LoopOp.header_properties` (a test compares
    the two): xDSL's IRDL init costs ~60 us an op, most of the time of a small chunk loop."""
    name = loop.loop_name.data if loop.loop_name is not None else None
    properties = LoopOp.header_properties(
        chunk_name(name, c.factor),
        loop.idx_name.data if loop.idx_name is not None else None,
        # chunks of independent iterations are independent: `parallel` carries over
        parallel=loop.parallel is not None,
    )
    body = Region(Block(arg_types=(_INDEX,)))
    new = new_op(LoopOp, (c.lb, c.ub, c.step), (), properties, {}, UNKNOWN_LOC, (body,))
    j = new.induction_var
    j.name_hint = loop.induction_var.name_hint
    return new, j


def _begin_end(
    ops: list[Operation],
    c: _ChunkLoop,
    j: SSAValue,
    index: SSAValue,
    b: _Bounds,
    is_first_copy: bool,
    is_last_copy: bool,
    need: tuple[bool, bool],
) -> tuple[SSAValue | None, SSAValue | None]:
    """Values for the original loop's `is_loop_begin` / `is_loop_end` at `index`."""
    begin = end = None
    if need[0]:
        if c.first is None:
            cmp = arith.CmpiOp(index, b.lb, "eq")
            ops.append(cmp)
            begin = cmp.result
        elif c.first and is_first_copy:
            op = IsLoopBeginOp(j)
            ops.append(op)
            begin = op.result
        else:
            begin = _false(ops)
    if need[1]:
        if c.last is None:
            assert c.last_from is not None
            cmp = arith.CmpiOp(index, c.last_from, "sge")
            ops.append(cmp)
            end = cmp.result
        elif c.last and is_last_copy:
            op = IsLoopEndOp(j)
            ops.append(op)
            end = op.result
        else:
            end = _false(ops)
    return begin, end


class _Body:
    """The body of the loop being unrolled, its terminator left out, and the template
    its copies are stamped from (read on the first copy: every copy of every chunk
    loop is the same body with other values for the index, and the chunk length)."""

    def __init__(self, loop: LoopOp | LoopUnrollOp) -> None:
        self.ops = [op for op in block_ops(loop.body.block) if type(op) is not YieldOp]
        self.inputs: list[SSAValue] = [loop.induction_var]
        if isinstance(loop, LoopUnrollOp):
            self.inputs.append(loop.chunk_length)
        self._template: CopyTemplate | None = None

    def copy(
        self,
        values: list[SSAValue],
        block: Block,
        take: bool,
        begin: SSAValue | None,
        end: SSAValue | None,
    ) -> None:
        """One copy of the body at the end of `block`, `values` for the loop's index (and
        chunk length); with `take` the body's own ops are moved instead of copied (the
        last copy of a loop that is erased afterwards: no op is made that the result
        does not need)."""
        ops = self.ops
        # (`block` belongs to a chunk loop that is not in the IR yet: no op of `ops` holds it)
        if take:
            for old, new in zip(self.inputs, values):
                old.replace_all_uses_with(new)
            if ops:  # (all of the body but its terminator: consecutive)
                move_run(ops, block)
        else:
            if self._template is None:
                self._template = CopyTemplate(ops, self.inputs)
            ops = self._template.stamp(values, block)
        if begin is not None or end is not None:
            _replace_loop_state(ops, values[0], begin, end)


def _fill_loop_body(
    loop: LoopOp,
    c: _ChunkLoop,
    b: _Bounds,
    j: SSAValue,
    block: Block,
    need: tuple[bool, bool],
    take: bool,
    body: _Body,
) -> None:
    """`c.factor` copies of the body of `loop` for the indices j, j+step, ... (the last
    one made of the body's own ops when `take`)."""
    index = loop.induction_var
    offsets: list[Operation] = []
    # `k * step` for every copy, at the top of the chunk body: each copy then starts with
    # the `arith.addi` of its index, which is how `stitch` tells the copies apart.
    scaled = [_scaled(offsets, b, k) for k in range(1, c.factor)]
    append_ops(block, offsets)  # (new ops, into a loop that is not in the IR yet)
    for k in range(c.factor):
        ops: list[Operation] = []
        idx = j
        if k:
            add = _add(j, scaled[k - 1])
            ops.append(add)
            add.result.name_hint = index.name_hint
            idx = add.result
        begin, end = _begin_end(ops, c, j, idx, b, k == 0, k == c.factor - 1, need)
        append_ops(block, ops)
        last = take and k == c.factor - 1
        body.copy([idx], block, last, begin, end)


def _fill_loop_unroll_body(
    loop: LoopUnrollOp,
    c: _ChunkLoop,
    b: _Bounds,
    j: SSAValue,
    block: Block,
    need: tuple[bool, bool],
    take: bool,
    body: _Body,
) -> None:
    """The body of a `pto.loop_unroll` once, with the chunk length a constant."""
    ops: list[Operation] = []
    length = _const(ops, c.factor)
    begin, end = _begin_end(ops, c, j, j, b, True, True, need)
    append_ops(block, ops)
    body.copy([j, length], block, take, begin, end)


def left_to_pypto(loop: LoopOp | LoopUnrollOp) -> bool:
    """A loop whose unrolled form PyPTO could not express (dynamic bounds plus an
    is_loop_begin / is_loop_end query, which would become `arith.cmpi`, and PyPTO 0.2.0
    takes no comparison as an `if` condition): `emittable` unrolling leaves it alone."""
    return not _Bounds.of(loop).static and any(_loop_state_uses(loop.induction_var))


DEFAULT_MAX_UNROLLED_OPS = 65536
"""Default cap on one loop's unrolled size (body ops x the copies its factors make)."""


@dataclass
class UnrollLoopPattern(RewritePattern):
    """Rewrites one selected `pto.loop` / `pto.loop_unroll` into its chunk loops."""

    factors: tuple[int, ...] | None = None
    max_body_ops: int | None = None
    loops: tuple[str, ...] | None = None
    emittable: bool = False

    def selected(self, loop: Operation) -> bool:
        if not isinstance(loop, LoopOp | LoopUnrollOp):
            return False
        if self.loops is not None:
            name = loop.loop_name.data if loop.loop_name is not None else None
            if name not in self.loops:
                return False
        return isinstance(loop, LoopUnrollOp) or bool(self.factors or loop.factors)

    def factors_for(self, loop: LoopOp | LoopUnrollOp) -> list[int]:
        factors = normalize_unroll_list(self.factors) if self.factors else loop.factors
        if self.max_body_ops is not None and isinstance(loop, LoopOp):
            size = sum(1 for op in loop.body.walk() if not op.has_trait(IsTerminator))
            factors = [f for f in factors if f == 1 or f * size <= self.max_body_ops]
        return factors

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not self.selected(op):
            return
        assert isinstance(op, LoopOp | LoopUnrollOp)
        factors = self.factors_for(op)
        if isinstance(op, LoopOp) and factors == [1]:
            # Nothing to unroll: the plain loop is already the explicit form.
            op.unroll_list = None
            return
        if self.emittable and left_to_pypto(op):
            return
        b = _Bounds.of(op)
        prologue: list[Operation] = []
        plan = _plan(b, factors, prologue, isinstance(op, LoopUnrollOp))
        rewriter.insert(prologue, InsertPoint.before(op))
        need = _loop_state_uses(op.induction_var)
        body = _Body(op)
        for n, c in enumerate(plan):
            new, j = _new_chunk_loop(op, c)
            block = new.body.block
            take = n == len(plan) - 1  # the loop is erased: its last copy moves its ops
            if isinstance(op, LoopOp):
                _fill_loop_body(op, c, b, j, block, need, take, body)
            else:
                _fill_loop_unroll_body(op, c, b, j, block, need, take, body)
            append_ops(block, [new_op(YieldOp, (), (), {}, {}, UNKNOWN_LOC)])
            rewriter.insert(new, InsertPoint.before(op))
        rewriter.erase(op)


@dataclass(frozen=True)
class LoopUnrollPass(ModulePass):
    """Expand every selected loop's unroll list into explicit chunk loops."""

    name = "loop-unroll"

    factors: tuple[int, ...] | None = None
    """Unroll list used instead of each loop's own (normalised: descending, 1 added)."""

    max_body_ops: int | None = None
    """Drop factors whose unrolled body would hold more ops than this."""

    loops: tuple[str, ...] | None = None
    """Only loops with these names (default: all)."""

    emittable: bool = False
    """Leave alone loops whose unrolled form PyPTO could not express: dynamic bounds
    and an is_loop_begin / is_loop_end query (which would become `arith.cmpi`)."""

    max_unrolled_ops: int = DEFAULT_MAX_UNROLLED_OPS
    """Refuse to unroll a loop into more ops than this (its body's ops, inner unrolling
    included, times the copies its factors make): a factor of 100000 on a dynamic trip
    count would otherwise build millions of ops."""

    establishes: ClassVar[tuple[str, ...]] = ("unrolled",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.factors is not None:
            try:
                normalize_unroll_list(self.factors)
            except ValueError as e:
                raise ValueError(f"loop-unroll: option factors: {e}") from None
        pattern = UnrollLoopPattern(self.factors, self.max_body_ops, self.loops, self.emittable)
        # Innermost loops first (children before their parent), so an outer loop copies
        # already-unrolled inner loops; each loop found here once, so no chunk loop is
        # ever unrolled again. (No rewrite walk: it would visit every op of the module.)
        for loop in self._check_size(op, pattern):
            pattern.match_and_rewrite(loop, PatternRewriter(loop))

    def _check_size(
        self, module: ModuleOp, pattern: UnrollLoopPattern
    ) -> list[LoopOp | LoopUnrollOp]:
        """Refuse up front (a located error) a loop that would unroll past the cap;
        returns the selected loops, each after the loops nested in it."""
        selected: list[LoopOp | LoopUnrollOp] = []

        def size(op: Operation) -> int:
            """Ops `op` will be once its loops are unrolled (itself included)."""
            n = 1
            for region in op.regions:
                for block in region.blocks:
                    for child in block_ops(block):
                        n += size(child) if child.regions else 1
            if not pattern.selected(op):
                return n
            assert isinstance(op, LoopOp | LoopUnrollOp)
            selected.append(op)  # (match_and_rewrite decides on the IR it then sees)
            if pattern.emittable and left_to_pypto(op):
                return n
            factors = pattern.factors_for(op)
            # A loop_unroll chunk loop holds its body once, a pto.loop's p times.
            copies = len(factors) if isinstance(op, LoopUnrollOp) else sum(factors)
            unrolled = (n - 1) * copies
            if unrolled > self.max_unrolled_ops:
                name = f" {op.loop_name.data!r}" if op.loop_name is not None else ""
                raise error_at(
                    op,
                    f"'{op.name}'{name}: unrolling it makes about {unrolled} ops ({n - 1} "
                    f"body ops x {copies} copies), more than loop-unroll's limit of "
                    f"{self.max_unrolled_ops}; lower the unroll factors or raise the limit "
                    "(loop-unroll{max-unrolled-ops=N}, default{unroll-max-ops=N})",
                )
            return 1 + unrolled

        size(module)
        return selected
