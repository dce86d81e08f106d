"""`stitch`: group consecutive loop iterations into `pto.stitch` graphs and interleave
them where dependencies allow.

In PyPTO, `runtime_options.stitch_function_max_num` (1..1024, default 128) is how many
root functions (graphs of loop iterations) the device scheduler submits together as one
stitched task, so that Vector and Cube work of different iterations overlaps. After
`loop-unroll`, a chunk loop's body holds `p` iterations side by side; this pass makes
the grouping explicit and checkable:

- the iterations ("functions") of each unrolled body are cut into runs of at most
  `max-functions` consecutive iterations; each run becomes one `pto.stitch` op
  (`size` = iterations in it); bodies that hold a single iteration are left alone;
- inside a group the ops of different iterations are interleaved (iteration k's op at
  position p next to iteration k+1's op at position p-1, a software-pipelined order) by a
  list scheduler (`tileir.passes.stitch_schedule`) that keeps every dependency: SSA
  uses; memory effects (two accesses to the same buffer of which one writes keep their
  order unless their static windows are provably disjoint - offsets are followed
  through `arith` index arithmetic and out of the `pto.stage`s `vc-split` computes them
  in - so loop-carried workspace state such as online-softmax accumulators is never
  reordered; distinct memref arguments are assumed not to alias, as PyPTO's kernel
  tensors do not); the tile-shape / semantic-label settings, which are statements
  in program order: every moved op keeps the setting it had (matmul the cube tile shape,
  other tile ops the vector one, all the label) - a copy of the right setting is put in
  front of it where needed, and the one in force after the group is restored - or,
  where that cannot be done (an op relying on a setting made before the group or in a
  branch), the settings order the ops around them; an op whose effects are unknown is
  a barrier (so is `pto.set_options`: compiler options such as `sg_set_scope` apply to
  the ops around which the user put them);
- the kernel's `jit_options.runtime_options.stitch_function_max_num` is set to
  `max-functions`, for the emitter to pass on to PyPTO;
- `stitch_report(module)` (and the `report` option, which prints it to stderr) gives
  the groups, their sizes and the workspace they need by PyPTO-Gym's formula
  `workspace = total_slot x (stitch_function_max_num + 1) x parallelism`, with
  `total_slot` modelled as the bytes of tiles one iteration produces.

Iterations are told apart the way `loop-unroll` writes them: iteration k of a chunk loop
with index `j` starts with `arith.addi j, k*step`; every op belongs to the iteration of
the last such op before it. (Were that guess wrong, only the group boundaries would
move: groups are contiguous runs of the body, and the scheduler alone decides order.)
Adjacent independent loops over the same range are fused first (by `loop-fusion`) when
the `fuse` option is set, so that their iterations are grouped together.

```mlir
// before (max-functions = 2)
pto.loop %j = %c0 to %c12 step %c4 name "rows_LoopUnroll4" {
  %c1 = arith.constant 1 : index  ...
  %a0 = pto.view %x[%j, 0] ...     %r0 = pto.exp %a0 ...   pto.assemble %r0 into %out[%j, 0] ...
  %j1 = arith.addi %j, %c1 : index
  %a1 = pto.view %x[%j1, 0] ...    %r1 = pto.exp %a1 ...   pto.assemble %r1 into %out[%j1, 0] ...
  ... iterations 2 and 3 ...
}
// after
pto.loop %j = %c0 to %c12 step %c4 name "rows_LoopUnroll4" {
  %c1 = arith.constant 1 : index  ...
  pto.stitch size 2 max 2 {
    %a0 = pto.view %x[%j, 0] ...
    %j1 = arith.addi %j, %c1 : index
    %r0 = pto.exp %a0 ...
    %a1 = pto.view %x[%j1, 0] ...
    ...
  }
  pto.stitch size 2 max 2 { ... iterations 2 and 3 ... }
}
```
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    UNKNOWN_LOC,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from tileir.dialect.dtypes import BY_MLIR
from tileir.dialect.pto import (
    MAX_STITCH_FUNCTIONS,
    KernelOp,
    LoopOp,
    LoopUnrollOp,
    StitchOp,
    YieldOp,
)
from tileir.ir import (
    block_ops,
    detach_ops,
    escaping_results,
    move_ops,
    new_op,
    prepend_ops,
)
from tileir.passes.stages import kernels
from tileir.passes.stitch_effects import (
    SETTINGS,
    Access,
    IndexForms,
    Linear,
    Setting,
    setting_key,
)
from tileir.passes.stitch_schedule import SettingsPlan, interleave

DEFAULT_MAX_FUNCTIONS = 128
"""PyPTO's default `stitch_function_max_num`."""

# --------------------------------------------------------------------------- iterations


def _iteration_starts(block: Block, ops: Sequence[Operation], forms: IndexForms) -> dict[int, int]:
    """`arith.addi j, d` ops of a loop body (j its index, d > 0 a multiple of the
    original step), by position in `ops`: the k-th distinct d starts iteration k. The
    chunk loop's own step is p times the original one, so the deltas are ranked rather
    than divided."""
    loop = block.parent_op()
    if not isinstance(loop, LoopOp | LoopUnrollOp):
        return {}
    j = Linear(0, frozenset({(block.args[0], 1)}))
    keyed: dict[int, tuple[SSAValue | None, int]] = {}
    addi = arith.AddiOp
    for n, op in enumerate(ops):
        if type(op) is not addi:  # (isinstance on xDSL's ops is slow)
            continue
        delta = forms.of(op.result).plus(j, -1)
        if not delta.terms and delta.const > 0:
            keyed[n] = (None, delta.const)
        elif delta.const == 0 and len(delta.terms) == 1:
            ((v, c),) = delta.terms
            if c > 0:
                keyed[n] = (v, c)
    bases = {b for b, _ in keyed.values()}
    if len(bases) != 1:
        return {}  # not the shape loop-unroll writes: one group
    ranks = {c: k + 1 for k, c in enumerate(sorted({c for _, c in keyed.values()}))}
    return {op: ranks[c] for op, (_, c) in keyed.items()}


def iteration_ids(
    block: Block, forms: IndexForms | None = None, ops: Sequence[Operation] | None = None
) -> list[int]:
    """The iteration each op of an unrolled loop body belongs to, in program order
    (`ops`: the block's ops, when the caller has listed them already)."""
    if ops is None:
        ops = block_ops(block)
    starts = _iteration_starts(block, ops, forms or IndexForms())
    ids: list[int] = []
    current = 0
    for n in sorted(starts):  # (runs of one iteration, not a look-up per op)
        start = starts[n]
        if start > current:
            ids.extend([current] * (n - len(ids)))
            current = start
    ids.extend([current] * (len(ops) - len(ids)))
    return ids


# --------------------------------------------------------------------------- the report


def _tile_bytes(t: Attribute) -> int:
    if not isinstance(t, TensorType) or DYNAMIC_INDEX in t.get_shape():
        return 0
    entry = BY_MLIR.get(t.get_element_type())
    size = entry.numpy.itemsize if entry is not None else 4
    n = 1
    for s in t.get_shape():
        n *= s
    return n * size


@dataclass(frozen=True)
class StitchGroup:
    loop: str
    size: int
    slot_bytes: int
    """Bytes of the tiles the group's iterations produce, per iteration (largest)."""


@dataclass(frozen=True)
class StitchReport:
    """What `stitch` formed, read back from the IR (so it also describes a module that
    was stitched earlier and printed)."""

    max_functions: int
    parallelism: int
    groups: tuple[StitchGroup, ...]

    @property
    def total_slot_bytes(self) -> int:
        return max((g.slot_bytes for g in self.groups), default=0)

    @property
    def workspace_bytes(self) -> int:
        """PyPTO-Gym: total_slot x (stitch_function_max_num + 1) x parallelism."""
        return self.total_slot_bytes * (self.max_functions + 1) * self.parallelism

    def summary(self) -> str:
        sizes = [g.size for g in self.groups]
        return (
            f"stitch: {len(sizes)} groups, sizes {sizes}, max_functions {self.max_functions}, "
            f"workspace {self.total_slot_bytes} B/slot x ({self.max_functions} + 1) x "
            f"{self.parallelism} = {self.workspace_bytes} B"
        )


def stitch_report(module: Operation, parallelism: int = 1) -> StitchReport:
    groups: list[StitchGroup] = []
    most = DEFAULT_MAX_FUNCTIONS
    for op in module.walk():
        if not isinstance(op, StitchOp):
            continue
        most = op.max_functions.value.data
        loop = op.parent_op()
        name = getattr(loop, "loop_name", None)
        size = op.size.value.data
        produced = sum(_tile_bytes(r.type) for o in op.body.walk() for r in o.results)
        groups.append(
            StitchGroup(name.data if name is not None else "", size, -(-produced // size))
        )
    return StitchReport(most, parallelism, tuple(groups))


# --------------------------------------------------------------------------- rewriting


_I64_ATTRS: dict[int, IntegerAttr] = {}


def _i64_attr(value: int) -> IntegerAttr:
    """`IntegerAttr(value, i64)`, one (immutable, shared) attribute per value."""
    attr = _I64_ATTRS.get(value)
    if attr is None:
        attr = _I64_ATTRS[value] = IntegerAttr(value, i64)
    return attr


def _wrap(
    ops: list[Operation],
    new_order: list[Operation],
    size: int,
    most: int,
    parent: Block,
    anchor: Operation | None,
) -> StitchOp:
    """Move the group `ops` into a new `pto.stitch` in `new_order` (the same ops, minus
    dropped settings, plus re-inserted ones) right after `anchor` in `parent` (the op
    before the group, None: at the start); values used after it leave it as results."""
    members = {id(op) for op in ops}
    escaping = escaping_results(ops, parent, members)
    yield_op = new_op(YieldOp, escaping, (), {}, {}, UNKNOWN_LOC)
    # The body is filled while the stitch hangs in no tree: xDSL checks on every
    # `add_op` that the op is not an ancestor of the block, a walk up to the root.
    block = Block()
    move_ops([*new_order, yield_op], block)  # (a new block)
    # `StitchOp(size, most, block, types)`, without the IRDL argument processing
    stitch = new_op(
        StitchOp,
        (),
        [v.type for v in escaping],
        {"size": _i64_attr(size), "max_functions": _i64_attr(most)},
        {},
        UNKNOWN_LOC,
        [Region(block)],
    )
    if anchor is not None:
        parent.insert_op_after(stitch, anchor)
    elif parent.first_op is not None:
        parent.insert_op_before(stitch, parent.first_op)
    else:
        parent.add_op(stitch)
    # Uses outside the group take the stitch's results; the group's own yield keeps the
    # values it passes out (it is not a member, so the test below would rewrite it too).
    for value, result in zip(escaping, stitch.outputs):
        value.replace_uses_with_if(
            result,
            lambda use: (
                use.operation is not yield_op and _top_in(use.operation, members, parent) is None
            ),
        )
    return stitch


def _top_in(op: Operation, members: set[int], block: Block | None = None) -> Operation | None:
    """The op among `members` (ids) that is or holds `op`, None if there is none;
    `block` is the members' block, where the search can stop."""
    while op is not None and id(op) not in members:
        if op.parent is block:
            return None
        op = op.parent_op()  # type: ignore[assignment]
    return op


@dataclass
class StitchLoopBody(RewritePattern):
    """Groups and interleaves the iterations of one unrolled loop body."""

    max_functions: int
    interleave: bool = True
    forms: IndexForms = field(default_factory=IndexForms)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, LoopOp | LoopUnrollOp):
            return
        self.rewrite_body(op, block_ops(op.body.block))

    def rewrite_body(self, op: LoopOp | LoopUnrollOp, ops: list[Operation]) -> None:
        """The rewrite of the loop `op` whose body holds `ops` (listed by the caller)."""
        block = op.body.block
        self.forms.walks.clear()
        ids = iteration_ids(block, self.forms, ops)
        if not ids or max(ids) == 0:
            return
        # Constants go first: moving them earlier is always legal, and they are then
        # shared by the groups instead of leaving one as a result. Moving them keeps
        # the other ops' order, so their iterations stay as computed here.
        constants: list[Operation] = []
        # per group: its ops, their iterations, and the settings in force in it
        by_group: dict[int, tuple[list[Operation], list[int], dict[str, Setting]]] = {}
        most = self.max_functions
        constant, terminator, settings = arith.ConstantOp, YieldOp, SETTINGS
        for o, i in zip(ops, ids):
            kind = type(o)  # (isinstance on xDSL's ABC-based classes is slow)
            if kind is constant:
                constants.append(o)
                continue
            if kind is terminator:
                continue
            entry = by_group.get(i // most)
            if entry is None:
                entry = by_group[i // most] = ([], [], {})
            # A setting that repeats the one in force in its group is erased: it is a
            # no-op, and keeping it would order every op of one iteration before the
            # next iteration's ops.
            setting = settings.get(kind)
            if setting is not None:
                key = setting_key(o)
                current = entry[2]
                if current.get(setting) == key:
                    # (a setting has no results, operands or regions: what `erase` is)
                    detach_ops((o,))
                    o.erase()
                    continue
                current[setting] = key
            elif o.regions:
                for inner in self.forms.walk(o):
                    inner_kind = settings.get(type(inner))
                    if inner_kind is not None:
                        entry[2][inner_kind] = None
            entry[0].append(o)
            entry[1].append(i)
        detach_ops(constants)
        # (each constant used to be moved to the top in turn: the order reverses)
        prepend_ops(block, constants[::-1])
        for group, group_ids, _ in by_group.values():
            if not group:
                continue
            members = sorted(set(group_ids))
            # where the group goes (before `emit`, which may erase its first op)
            anchor = group[0].prev_op
            new_order = list(group)
            if self.interleave and len(members) > 1:
                plan = SettingsPlan.of(group, self.forms)
                order = interleave(group, group_ids, self.forms, plan)
                new_order = plan.emit(group, order)
            _wrap(group, new_order, len(members), self.max_functions, block, anchor)


def _set_runtime_option(kernel: KernelOp, most: int) -> None:
    options = dict(kernel.jit_options.data) if kernel.jit_options is not None else {}
    runtime = options.get("runtime_options")
    entries = dict(runtime.data) if isinstance(runtime, DictionaryAttr) else {}
    entries["stitch_function_max_num"] = IntegerAttr(most, i64)
    options["runtime_options"] = DictionaryAttr(entries)
    kernel.jit_options = DictionaryAttr(options)


def _kernel_max_functions(kernel: KernelOp) -> int | None:
    if kernel.jit_options is None:
        return None
    runtime = kernel.jit_options.data.get("runtime_options")
    if isinstance(runtime, DictionaryAttr):
        value = runtime.data.get("stitch_function_max_num")
        if isinstance(value, IntegerAttr):
            return value.value.data
    return None


def _loops_inner_first(root: Operation) -> list[tuple[LoopOp | LoopUnrollOp, list[Operation]]]:
    """The loops inside `root`, every loop after the loops nested in it (collected
    up front, without visiting the ops of a body one by one as a rewrite walk would),
    each with the ops of its body. (Those stay the ops of the body until the loop is
    rewritten: a rewrite changes the body of its own loop only, and a loop comes after
    the loops nested in it.)"""
    loops: list[tuple[LoopOp | LoopUnrollOp, list[Operation]]] = []

    def visit(op: Operation) -> None:
        listed: tuple[Block | None, list[Operation]] = (None, [])
        for region in op.regions:
            for block in region.blocks:
                listed = (block, block_ops(block))
                for child in listed[1]:
                    if child.regions:
                        visit(child)
        if isinstance(op, LoopOp | LoopUnrollOp):
            block = op.body.block
            loops.append((op, listed[1] if listed[0] is block else block_ops(block)))

    visit(root)
    return loops


@dataclass(frozen=True)
class StitchPass(ModulePass):
    """Group consecutive unrolled iterations into `pto.stitch` graphs of at most
    `max-functions` iterations and interleave them where dependencies allow."""

    name = "stitch"
    requires: ClassVar[tuple[str, ...]] = ("unrolled",)

    max_functions: int | None = None
    """Iterations per group (PyPTO's stitch_function_max_num, 1..1024); default: the
    kernel's own runtime option, else 128."""

    interleave: bool = True
    """Interleave the iterations of a group (off: only group them)."""

    parallelism: int = 1
    """Multiplier of the workspace estimate in the report."""

    report: bool = False
    """Print the report (groups, sizes, workspace) to stderr."""

    fuse: bool = False
    """Run `loop-fusion` first (adjacent independent loops over the same range)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_functions is not None and not 1 <= self.max_functions <= MAX_STITCH_FUNCTIONS:
            raise ValueError(
                f"stitch: option max-functions={self.max_functions} must be in "
                f"1..{MAX_STITCH_FUNCTIONS} (PyPTO's stitch_function_max_num range)"
            )
        if self.fuse:
            from tileir.passes.loop_fusion import LoopFusionPass

            LoopFusionPass().apply(ctx, op)
        for kernel in list(kernels(op)):
            most = self.max_functions or _kernel_max_functions(kernel) or DEFAULT_MAX_FUNCTIONS
            # Inner loops first (regions first): an outer iteration then moves as a
            # whole, inner groups included; once over the IR (the groups it makes are
            # not loops to stitch again).
            pattern = StitchLoopBody(most, self.interleave)
            for loop, body in _loops_inner_first(kernel):
                pattern.rewrite_body(loop, body)
            _set_runtime_option(kernel, most)
        if self.report:
            print(stitch_report(op, self.parallelism).summary(), file=sys.stderr)


__all__ = [
    "Access",
    "Linear",
    "StitchGroup",
    "StitchPass",
    "StitchReport",
    "interleave",
    "iteration_ids",
    "stitch_report",
]
