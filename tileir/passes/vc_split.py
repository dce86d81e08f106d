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
  %z = pto.matmul %y, %w : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  pto.assemble %z into %out[%i, 0] : tensor<8x32xf32>, memref<32x32xf32>
}
```

After (`flow_pattern = "V1,C1,V1"` on the kernel):

```mlir
pto.loop %i = %c0 to %c4 step %c1 {
  %y = pto.stage "vector" tile array<i64: 8, 64> {
    %x = pto.view %in[%i, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    %y = pto.exp %x : tensor<8x64xf32>
    pto.yield %y : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %z = pto.stage "cube" cube array<i64: 16, 16, 64, 64, 32, 32> {
    %y2 = pto.transfer %y from "vector" to "cube" : tensor<8x64xf32>
    %z = pto.matmul %y2, %w : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
    pto.yield %z : tensor<8x32xf32>
  } -> tensor<8x32xf32>
  pto.stage "vector" tile array<i64: 8, 32> {
    %z2 = pto.transfer %z from "cube" to "vector" : tensor<8x32xf32>
    pto.assemble %z2 into %out[%i, 0] : tensor<8x32xf32>, memref<32x32xf32>
  }
}
```
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from tileir.dialect import pto
from tileir.dialect.dtypes import BY_MLIR
from tileir.passes.platform import Platform, derive_cube_tile, derive_vec_tile, get_platform
from tileir.passes.stages import (
    Unit,
    enclosing_stage,
    flow_pattern,
    is_container,
    kernels,
    op_unit,
    stages,
)

FLOW_PATTERN_ATTR = "flow_pattern"


# --------------------------------------------------------------------------- partition


def _segments(block: Block) -> list[list[Operation]]:
    """Runs of plain ops between region-holding ops and the terminator."""
    segments: list[list[Operation]] = [[]]
    for op in block.ops:
        if is_container(op) or op.has_trait(IsTerminator):
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


def _make_stage(run: list[Operation], unit: Unit) -> pto.StageOp:
    """Move `run` (contiguous ops of one block) into a new stage in its place; values
    used after the run leave the stage as results."""
    parent = run[0].parent_block()
    assert parent is not None
    members = set(run)

    def inside(user: Operation | None) -> bool:
        while user is not None and user.parent_block() is not parent:
            user = user.parent_op()
        return user in members

    escaping = [
        result
        for op in run
        for result in op.results
        if any(not inside(use.operation) for use in result.uses)
    ]
    body = Block()
    stage = pto.StageOp(unit, body, [v.type for v in escaping])
    parent.insert_op_before(stage, run[0])
    for op in run:
        op.detach()
        body.add_op(op)
    body.add_op(pto.YieldOp(*escaping))
    for value, result in zip(escaping, stage.outputs):
        result.name_hint = value.name_hint
        value.replace_uses_with_if(result, lambda use: not stage.is_ancestor(use.operation))
    return stage


def split_block(block: Block) -> None:
    """Partition one block (and, recursively, the blocks of its loops and ifs)."""
    for op in list(block.ops):
        if is_container(op) and not isinstance(op, pto.StageOp):
            for region in op.regions:
                for inner in region.blocks:
                    split_block(inner)
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


def unify_branch_results(kernel: pto.KernelOp) -> int:
    """Make each tile result of an `scf.if` come from one unit: where one branch yields
    a Cube tile and another a Vector tile, the Cube one goes through a transfer in a
    small vector stage of its own at the end of its branch. Returns how many."""
    count = 0
    for op in reversed(list(kernel.walk())):  # inner ifs before the ifs around them
        if isinstance(op, pto.StageOp) or not op.regions:
            continue
        for index, result in enumerate(op.results):
            if not isinstance(result.type, TensorType) or len(pto.producing_units(result)) < 2:
                continue
            for region in op.regions:
                for block in region.blocks:
                    term = block.last_op
                    assert term is not None
                    value = term.operands[index]
                    if "cube" in pto.producing_units(value):
                        transfer = pto.TransferOp(value, "cube", "vector")
                        block.insert_op_before(transfer, term)
                        term.operands[index] = transfer.result
                        _make_stage([transfer], "vector")
                        count += 1
    return count


def insert_transfers(kernel: pto.KernelOp) -> int:
    """Route every tile that crosses between units through a `pto.transfer` at the top
    of the consuming stage; returns how many were inserted."""
    count = 0
    for stage in stages(kernel):
        unit = stage.unit.data
        made: dict[SSAValue, SSAValue] = {}
        for op in list(stage.body.walk()):
            if isinstance(op, pto.TransferOp):
                continue
            for index, operand in enumerate(op.operands):
                if not isinstance(operand.type, TensorType):
                    continue
                owner = operand.owner
                if isinstance(owner, Operation) and stage.is_ancestor(owner):
                    continue
                produced_on = pto.producing_unit(operand)
                if produced_on is None or produced_on == unit:
                    continue
                moved = made.get(operand)
                if moved is None:
                    transfer = pto.TransferOp(operand, produced_on, unit)
                    transfer.result.name_hint = operand.name_hint
                    first = stage.body.block.first_op
                    assert first is not None
                    stage.body.block.insert_op_before(transfer, first)
                    moved = made[operand] = transfer.result
                    count += 1
                op.operands[index] = moved
    return count


# --------------------------------------------------------------------------- tile shapes


def _elem_bytes(t: TensorType) -> int:
    row = BY_MLIR.get(t.get_element_type())
    return row.numpy.itemsize if row is not None else 4


def _matmul_sizes(op: pto.MatmulOp) -> tuple[int, int, int]:
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


def attach_tile_shapes(kernel: pto.KernelOp, platform: Platform) -> None:
    """Set each stage's tile shapes from the settings in effect at its first op with a
    unit, else from `platform`. Shapes a stage already has are kept."""
    vec: list[int] | None = None
    cube: list[int] | None = None
    done: set[pto.StageOp] = set()
    for op in kernel.walk():
        if isinstance(op, pto.SetVecTileShapesOp):
            vec = list(op.shape.get_values())
            continue
        if isinstance(op, pto.SetCubeTileShapesOp):
            cube = [v for pair in (op.m, op.k, op.n) for v in pair.get_values()]
            continue
        if is_container(op) or op_unit(op) is None or isinstance(op, pto.TransferOp):
            continue
        stage = enclosing_stage(op)
        if stage is None or stage in done:
            continue
        done.add(stage)
        if stage.unit.data == "vector" and stage.tile_shape is None:
            shape = vec
            if shape is None:
                source = _vector_shape_source(op)
                if source is None:
                    continue
                shape = derive_vec_tile(list(source.get_shape()), _elem_bytes(source), platform)
            stage.tile_shape = pto.DenseArrayBase.from_list(pto.i64, shape)
        elif stage.unit.data == "cube" and stage.cube_tile is None:
            tile = cube
            if tile is None and isinstance(op, pto.MatmulOp):
                m, k, n = _matmul_sizes(op)
                tile = derive_cube_tile(m, k, n, _elem_bytes(op.a.type), platform)  # type: ignore[arg-type]
            if tile is not None:
                stage.cube_tile = pto.DenseArrayBase.from_list(pto.i64, tile)
    for stage in stages(kernel):
        # A stage that only receives a tile (made by `unify_branch_results`).
        first = stage.body.block.first_op
        if stage not in done and stage.tile_shape is None and isinstance(first, pto.TransferOp):
            if stage.unit.data == "vector":
                t = first.result.type
                assert isinstance(t, TensorType)
                shape = derive_vec_tile(list(t.get_shape()), _elem_bytes(t), platform)
                stage.tile_shape = pto.DenseArrayBase.from_list(pto.i64, shape)


# --------------------------------------------------------------------------- the pass


def split_kernel(kernel: pto.KernelOp, platform: Platform) -> int:
    """Run vc-split on one kernel; returns the number of transfers inserted."""
    split_block(kernel.body.block)
    transfers = unify_branch_results(kernel) + insert_transfers(kernel)
    attach_tile_shapes(kernel, platform)
    pattern = flow_pattern(kernel)
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
    pattern = flow_pattern(kernel) or "(no stages)"
    return f"@{kernel.sym_name.data}: {pattern}" + (f" [{'; '.join(parts)}]" if parts else "")


@dataclass(frozen=True)
class VCSplitPass(ModulePass):
    """Partition every kernel into Vector / Cube `pto.stage`s (see the module docstring).

    Options: `platform` (A2, A3) picks the buffer sizes used for derived tile shapes;
    `report=true` prints each kernel's flow pattern and stages to stderr.
    """

    name = "vc-split"

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
