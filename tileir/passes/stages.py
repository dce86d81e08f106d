"""Shared facts about units and stages, used by `vc-split`, `semantic-labels` and the
analyses that read their results.

An op runs on the Cube core (`pto.matmul`), on the Vector core (every other tile op),
or on either (`EITHER`: scalar index math, constants, `memref.dim`, views, element reads
(`get_tensor_data`), workspace allocation, reshapes of memory, loop-state queries and the
settings statements), which do not decide where a stage runs and join whichever stage is
next to them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

from xdsl.ir import Operation
from xdsl.traits import IsTerminator

from tileir.bindings.matmul import CUBE_OPS
from tileir.dialect import pto
from tileir.ir import block_ops

Unit = Literal["vector", "cube"]

SETTINGS = (
    pto.SetVecTileShapesOp,
    pto.SetCubeTileShapesOp,
    pto.SetSemanticLabelOp,
    pto.SetOptionsOp,
)
_EITHER_OPS = (
    pto.ViewOp,
    pto.GetTensorDataOp,
    pto.TensorOp,
    pto.ReshapeMemOp,
    pto.IsLoopBeginOp,
    pto.IsLoopEndOp,
    *SETTINGS,
)
_EITHER_NAMES = frozenset({"memref.dim", "tensor.dim"})

UNIT_LETTER = {"vector": "V", "cube": "C"}


_TRANSFER = "transfer"
_UNIT_OF_TYPE: dict[type[Operation], str | None] = {}
"""Unit by op class: everything `op_unit` looks at is a property of the class, except
the direction of a transfer (a dict lookup is ~20x cheaper than the isinstance chain
over xDSL's ABC-based op classes)."""


def _unit_of_type(op: Operation) -> str | None:
    if op.has_trait(IsTerminator):
        return None
    if isinstance(op, CUBE_OPS):
        return "cube"
    if isinstance(op, pto.TransferOp):
        return _TRANSFER
    if isinstance(op, _EITHER_OPS) or op.name in _EITHER_NAMES or op.name.startswith("arith."):
        return None
    return "vector"


def op_unit(op: Operation) -> Unit | None:
    """The unit `op` must run on, or None for an op that runs on either (see module doc)
    and for terminators.

    Region-holding ops (loops, `scf.if`, stages) are not classified: their bodies are.
    """
    kind = type(op)
    unit = _UNIT_OF_TYPE.get(kind, _TRANSFER + "?")
    if unit == _TRANSFER + "?":
        unit = _UNIT_OF_TYPE[kind] = _unit_of_type(op)
    if unit == _TRANSFER:
        assert isinstance(op, pto.TransferOp)
        return "cube" if op.dst_unit.data == "cube" else "vector"
    return unit  # type: ignore[return-value]


_TERMINATOR_TYPES: dict[type[Operation], bool] = {}


def is_terminator(op: Operation) -> bool:
    kind = type(op)
    known = _TERMINATOR_TYPES.get(kind)
    if known is None:
        known = _TERMINATOR_TYPES[kind] = op.has_trait(IsTerminator)
    return known


def is_container(op: Operation) -> bool:
    """Ops whose regions are partitioned on their own (loops, `scf.if`, stages)."""
    return bool(op.regions)


def walk_ops(root: Operation) -> Iterator[Operation]:
    """`root` and every op inside it, in pre-order (program order), like
    `Operation.walk` but iterative: xDSL's nested generators cost several times more,
    and the passes walk modules of 100k ops."""
    stack = [root]
    while stack:
        op = stack.pop()
        yield op
        if op.regions:
            children: list[Operation] = []
            for region in op.regions:
                for block in region.blocks:
                    children += block_ops(block)
            children.reverse()
            stack.extend(children)


def kernels(module: Operation) -> Iterator[pto.KernelOp]:
    """The kernels of a module (top level), or the op itself if it is a kernel."""
    if isinstance(module, pto.KernelOp):
        yield module
        return
    for region in module.regions:
        for block in region.blocks:
            for op in block.ops:
                if isinstance(op, pto.KernelOp):
                    yield op


def stages(kernel: Operation) -> list[pto.StageOp]:
    """The kernel's stages in program (pre-order) order."""
    return [op for op in walk_ops(kernel) if type(op) is pto.StageOp]


def flow_pattern(kernel_or_stages: Operation | Sequence[pto.StageOp]) -> str:
    """The V/C flow pattern of a kernel (or of its stages, in program order): the
    stages' units in program order, consecutive stages of one unit counted together
    (`V2,C1,V1`: two vector stages, e.g. one before and one inside a loop, then a cube
    stage, then a vector stage). Empty when there are no stages."""
    found = (
        stages(kernel_or_stages) if isinstance(kernel_or_stages, Operation) else kernel_or_stages
    )
    runs: list[tuple[str, int]] = []
    for stage in found:
        letter = UNIT_LETTER[stage.unit.data]
        if runs and runs[-1][0] == letter:
            runs[-1] = (letter, runs[-1][1] + 1)
        else:
            runs.append((letter, 1))
    return ",".join(f"{letter}{count}" for letter, count in runs)


def enclosing_stage(op: Operation) -> pto.StageOp | None:
    parent = op.parent_op()
    if isinstance(parent, pto.StageOp):
        return parent
    while parent is not None and not isinstance(parent, pto.StageOp | pto.KernelOp):
        parent = parent.parent_op()
    return parent if isinstance(parent, pto.StageOp) else None
