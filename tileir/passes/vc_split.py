"""`vc-split`: partition kernels into Vector and Cube stages.

The Ascend AI core runs matmul on its Cube unit and all other tile math on its Vector
unit; a PyPTO kernel is a sequence of V and C stages (SK-03: V(RMSNorm) -> C(MatMul) ->
V(post)). This pass makes that structure explicit:

1. Each op gets a unit: `cube` for `pto.matmul`, `vector` for the other tile ops, none
   ("either") for index math, constants, views, workspaces and settings statements
   (see `tileir.passes.stages.op_unit`).
2. Every kernel body, loop body and `scf.if` branch is cut at its region-holding ops
   (loops, ifs, existing stages) into segments; an "either" op takes the unit of the next
   op with a unit in its segment, and each maximal run of one unit becomes a
   `pto.stage`. Ops never move relative to each other, so the order of side effects is
   kept. "Either" ops after a segment's last op with a unit (typically the index math
   and bounds of the loop that follows) stay outside every stage: they are scalar work
   for neither core.
3. A tile computed in a stage of one unit and used in a stage of the other unit goes
   through a `pto.transfer` at the top of the consuming stage (the StageOp verifier
   rejects a direct crossing).
4. Each stage gets its tile shapes: the user's `set_vec_tile_shapes` /
   `set_cube_tile_shapes` in effect at the stage's first op with a unit (settings are
   statements, in effect in program order until the next one of their kind), else
   legal shapes derived from the platform's buffer sizes (`tileir.passes.platform`).
5. The kernel gets a `flow_pattern` attribute (`"V1,C1,V1"`); `report=true` prints one
   line per kernel to stderr.

Running the pass twice changes nothing: ops already inside a stage are left alone and
shapes already set are kept.

Before:

```mlir
pto.loop %i = %c0 to %c4 step %c1 {
  %x = pto.view %in[%i, 0] : memref<32x64xf32> -> tensor<8x64xf32>
  %y = pto.exp %x : tensor<8x64xf32>
  %wt = pto.view %w[0, 0] : memref<64x32xf32> -> tensor<64x32xf32>
  %z = pto.matmul %y, %wt : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  pto.assemble %z into %out[%i, 0] : tensor<8x32xf32>, memref<32x32xf32>
}
```

After (and `flow_pattern = "V1,C1,V1"` on the kernel; the shapes are derived for A2):

```mlir
pto.loop %i = %c0 to %c4 step %c1 {
  %y = pto.stage vector tile [8, 64] {
    %x = pto.view %in[%i, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    %y_1 = pto.exp %x : tensor<8x64xf32>
    pto.yield %y_1 : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %z = pto.stage cube cube [16, 16, 64, 64, 32, 32] {
    %y_2 = pto.transfer %y from vector to cube : tensor<8x64xf32>
    %wt = pto.view %w[0, 0] : memref<64x32xf32> -> tensor<64x32xf32>
    %z_1 = pto.matmul %y_2, %wt : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
    pto.yield %z_1 : tensor<8x32xf32>
  } -> tensor<8x32xf32>
  pto.stage vector tile [8, 32] {
    %z_2 = pto.transfer %z from cube to vector : tensor<8x32xf32>
    pto.assemble %z_2 into %out[%i, 0] : tensor<8x32xf32>, memref<32x32xf32>
    pto.yield
  }
}
```

`cube [m0, m1, k0, k1, n0, n1]` holds the [L0, L1] pairs of `set_cube_tile_shapes`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import UNKNOWN_LOC, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tileir.dialect import pto
from tileir.dialect.dtypes import BY_MLIR
from tileir.ir import append_ops, block_ops, escaping_results, move_run, new_op
from tileir.passes.platform import Platform, derive_cube_tile, derive_vec_tile, get_platform
from tileir.passes.stages import (
    Unit,
    flow_pattern,
    is_terminator,
    kernels,
    op_unit,
    stages,
    walk_ops,
)

FLOW_PATTERN_ATTR = "flow_pattern"


# --------------------------------------------------------------------------- partition


def _segments(block: Block) -> list[list[Operation]]:
    """Runs of plain ops between region-holding ops and the terminator."""
    segments: list[list[Operation]] = [[]]
    for op in block_ops(block):
        if op.regions or is_terminator(op):
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(op)
    return [s for s in segments if s]


def _resolve_units(segment: list[Operation]) -> list[Unit | None]:
    """Each op's unit, with an "either" op taking the unit of the next op that has one;
    "either" ops after the segment's last op with a unit stay None (outside stages:
    typically the bounds of the loop that follows)."""
    resolved: list[Unit | None] = [op_unit(op) for op in segment]
    following: Unit | None = None
    for i in range(len(resolved) - 1, -1, -1):
        if resolved[i] is None:
            resolved[i] = following
        else:
            following = resolved[i]
    return resolved


_UNIT_ATTR = {u.value: pto.StageUnitAttr(u) for u in pto.StageUnit}


def _ancestor_in(op: Operation | None, block: Block) -> Operation | None:
    """The op of `block` that is or contains `op`, None if `op` is not inside `block`."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _make_stage(run: list[Operation], unit: Unit) -> pto.StageOp:
    """Move `run` (contiguous ops of one block) into a new stage in its place; values
    used after the run leave the stage as results."""
    parent = run[0].parent_block()
    assert parent is not None
    escaping = escaping_results(run, parent)
    anchor = run[-1].next_op
    # Filled while it hangs in no tree: nothing to check on the way in (`add_op` would
    # walk up from the block for each op).
    body = Block()
    move_run(run, body)
    append_ops(body, [new_op(pto.YieldOp, escaping, (), {}, {}, UNKNOWN_LOC)])
    stage = new_op(
        pto.StageOp,
        (),
        [v.type for v in escaping],
        {"unit": _UNIT_ATTR[unit]},
        {},
        UNKNOWN_LOC,
        [Region(body)],
    )
    if anchor is None:
        parent.add_op(stage)
    else:
        parent.insert_op_before(stage, anchor)
    # A use outside the stage: not in its body, and no op of `parent` holding it is
    # the stage (found walking up to `parent`, not from the body up to the root).
    for value, result in zip(escaping, stage.outputs):
        result.name_hint = value.name_hint
        value.replace_uses_with_if(
            result,
            lambda use: (
                use.operation.parent is not body
                and _ancestor_in(use.operation, parent) is not stage
            ),
        )
    return stage


def _transfer(value: SSAValue, src: str, dst: str) -> pto.TransferOp:
    op = new_op(
        pto.TransferOp,
        [value],
        [value.type],
        {"from": _UNIT_ATTR[src], "to": _UNIT_ATTR[dst]},
        {},
        UNKNOWN_LOC,
    )
    op.results[0].name_hint = value.name_hint
    return op


def split_block(block: Block, branching: list[Operation] | None = None) -> None:
    """Partition one block (and, recursively, the blocks of its loops and ifs). Region
    ops with results (`scf.if`) are appended to `branching`, inner ones first."""
    for op in block_ops(block):
        if op.regions and not isinstance(op, pto.StageOp):
            for region in op.regions:
                for inner in region.blocks:
                    split_block(inner, branching)
            if op.results and branching is not None:
                branching.append(op)
    for segment in _segments(block):
        units = _resolve_units(segment)
        start = 0
        for i in range(1, len(segment) + 1):
            if i == len(segment) or units[i] != units[start]:
                unit = units[start]
                if unit is not None:
                    _make_stage(segment[start:i], unit)
                start = i


# --------------------------------------------------------------------------- transfers


def unify_branch_results(branching: list[Operation]) -> int:
    """Make each tile result of an `scf.if` come from one unit: where one branch yields
    a Cube tile and another a Vector tile, the Cube one goes through a transfer in a
    small vector stage of its own at the end of its branch. `branching` lists the
    region ops with results, inner ones first. Returns how many transfers were made."""
    count = 0
    for op in branching:
        for index, result in enumerate(op.results):
            if not isinstance(result.type, TensorType) or len(pto.producing_units(result)) < 2:
                continue
            for region in op.regions:
                for block in region.blocks:
                    term = block.last_op
                    assert term is not None
                    value = term.operands[index]
                    if "cube" in pto.producing_units(value):
                        transfer = _transfer(value, "cube", "vector")
                        block.insert_op_before(transfer, term)
                        term.operands[index] = transfer.result
                        _make_stage([transfer], "vector")
                        count += 1
    return count


def _unit_of_value(value: SSAValue) -> str | None:
    owner = value.owner
    if isinstance(owner, pto.StageOp):
        return owner.unit.data
    return pto.producing_unit(value)


def insert_transfers(all_stages: list[pto.StageOp]) -> int:
    """Route every tile that crosses between units through a `pto.transfer` at the top
    of the consuming stage; returns how many were inserted."""
    count = 0
    for stage in all_stages:
        unit = stage.unit.data
        block = stage.body.block
        made: dict[int, SSAValue] = {}
        ops = block_ops(block)
        nested = any(op.regions for op in ops)
        if nested:
            ops = list(walk_ops(stage))[1:]
        for op in ops:
            if type(op) is pto.TransferOp:
                continue
            # (`_operands`: `op.operands` indexes a view op by op; `type() is` and
            # `.parent`: isinstance on xDSL's ABC-based classes is slow)
            for index, operand in enumerate(op._operands):
                owner = operand.owner
                if owner.parent is block or type(operand.type) is not TensorType:
                    continue
                # (without nested ops, an op not in the block is outside the stage)
                if nested and isinstance(owner, Operation) and stage.is_ancestor(owner):
                    continue
                produced_on = _unit_of_value(operand)
                if produced_on is None or produced_on == unit:
                    continue
                moved = made.get(id(operand))
                if moved is None:
                    transfer = _transfer(operand, produced_on, unit)
                    first = block.first_op
                    assert first is not None
                    block.insert_op_before(transfer, first)
                    moved = made[id(operand)] = transfer.result
                    count += 1
                op.operands[index] = moved
    return count


# --------------------------------------------------------------------------- tile shapes


def _elem_bytes(t: TensorType) -> int:
    row = BY_MLIR.get(t.get_element_type())
    return row.numpy.itemsize if row is not None else 4


def _matmul_sizes(op: pto.MatmulOp | pto.ScaledMmOp) -> tuple[int, int, int]:
    a = list(op.a.type.get_shape())  # type: ignore[union-attr]
    b = list(op.b.type.get_shape())  # type: ignore[union-attr]
    m, k = (a[-1], a[-2]) if op.a_trans else (a[-2], a[-1])
    n = b[-2] if op.b_trans else b[-1]
    return m, k, n


def _vector_shape_source(op: Operation) -> TensorType | None:
    for value in (*op.results, *op.operands):
        if isinstance(value.type, TensorType):
            return value.type
    return None


_ARRAYS: dict[tuple[int, ...], pto.DenseArrayBase] = {}


def _i64_array(values: list[int]) -> pto.DenseArrayBase:
    """Attributes are immutable, so stages with one shape share one (cached) array."""
    key = tuple(values)
    array = _ARRAYS.get(key)
    if array is None:
        array = _ARRAYS[key] = pto.DenseArrayBase.from_list(pto.i64, values)
    return array


def _set_shapes(
    stage: pto.StageOp,
    op: Operation,
    vec: list[int] | None,
    cube: list[int] | None,
    platform: Platform,
) -> None:
    """Tile shapes of `stage`, whose first op with a unit is `op`."""
    if stage.unit.data == "vector" and stage.tile_shape is None:
        shape = vec
        if shape is None:
            source = _vector_shape_source(op)
            if source is None:
                return
            shape = derive_vec_tile(list(source.get_shape()), _elem_bytes(source), platform)
        stage.tile_shape = _i64_array(shape)
    elif stage.unit.data == "cube" and stage.cube_tile is None:
        tile = cube
        if tile is None and isinstance(op, pto.MatmulOp | pto.ScaledMmOp):
            m, k, n = _matmul_sizes(op)
            tile = derive_cube_tile(m, k, n, _elem_bytes(op.a.type), platform)  # type: ignore[arg-type]
        if tile is not None:
            stage.cube_tile = _i64_array(tile)


def attach_tile_shapes(kernel: pto.KernelOp, platform: Platform) -> None:
    """Set each stage's tile shapes from the settings in effect at its first op with a
    unit (transfers aside), else from `platform`. Shapes a stage already has are kept.
    Settings are statements: the walk follows program order, stage bodies included."""
    vec: list[int] | None = None
    cube: list[int] | None = None
    pending: pto.StageOp | None = None
    pending_body: Block | None = None  # (`op.parent_op() is pending`: `op.parent is` this)
    first_transfer: pto.TransferOp | None = None
    for op in walk_ops(kernel):
        kind = type(op)
        if kind is pto.SetVecTileShapesOp:
            vec = list(op.shape.get_values())  # type: ignore[attr-defined]
        elif kind is pto.SetCubeTileShapesOp:
            m, n = op.m.get_values(), op.n.get_values()  # type: ignore[attr-defined]
            cube = [*m, *op.k_pair, *n]  # type: ignore[attr-defined]
        elif kind is pto.StageOp:
            if pending is not None and first_transfer is not None:
                _set_shapes(pending, first_transfer, None, None, platform)
            pending, first_transfer = op, None  # type: ignore[assignment]
            pending_body = op.body.block  # type: ignore[attr-defined]
        elif pending is not None and op.parent is pending_body:
            if kind is pto.TransferOp:
                first_transfer = first_transfer or op  # type: ignore[assignment]
            elif op_unit(op) is not None:
                _set_shapes(pending, op, vec, cube, platform)
                pending = None
    if pending is not None and first_transfer is not None:
        # A stage that only receives a tile (made by `unify_branch_results`).
        _set_shapes(pending, first_transfer, None, None, platform)


# --------------------------------------------------------------------------- the pass


def split_kernel(kernel: pto.KernelOp, platform: Platform) -> int:
    """Run vc-split on one kernel; returns the number of transfers inserted."""
    branching: list[Operation] = []
    split_block(kernel.body.block, branching)
    transfers = unify_branch_results(branching)
    all_stages = stages(kernel)
    transfers += insert_transfers(all_stages)
    attach_tile_shapes(kernel, platform)
    pattern = flow_pattern(all_stages)
    if pattern:
        kernel.attributes[FLOW_PATTERN_ATTR] = StringAttr(pattern)
    if "labelled" in kernel.attributes:
        # New stages in a kernel that semantic-labels already saw must not go unlabelled.
        from tileir.passes.semantic_labels import label_kernel

        label_kernel(kernel)
    return transfers


def describe_kernel(kernel: pto.KernelOp) -> str:
    """One line: the flow pattern and each stage's unit, label and tile shapes."""
    parts = []
    for stage in stages(kernel):
        text = stage.unit.data
        if stage.label is not None:
            text += f" {stage.label.data!r}"
        if stage.tile_shape is not None:
            text += f" tile {list(stage.tile_shape.get_values())}"
        if stage.cube_tile is not None:
            v = list(stage.cube_tile.get_values())
            text += f" m {v[0:2]} k {v[2:4]} n {v[4:6]}"
        parts.append(text)
    pattern = flow_pattern(stages(kernel)) or "(no stages)"
    return f"@{kernel.sym_name.data}: {pattern}" + (f" [{'; '.join(parts)}]" if parts else "")


@dataclass(frozen=True)
class VCSplitPass(ModulePass):
    """Partition every kernel into Vector / Cube `pto.stage`s (see the module docstring).

    Options: `platform` (A2, A3) picks the buffer sizes used for derived tile shapes;
    `report=true` prints each kernel's flow pattern and stages to stderr.
    """

    name = "vc-split"
    establishes: ClassVar[tuple[str, ...]] = ("staged",)

    platform: str = "A2"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        platform = get_platform(self.platform)
        for kernel in kernels(op):
            transfers = split_kernel(kernel, platform)
            if self.report:
                print(
                    f"vc-split: {describe_kernel(kernel)}; {transfers} transfers added",
                    file=sys.stderr,
                )
