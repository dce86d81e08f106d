"""Shared facts about units and stages, used by `vc-split`, `semantic-labels` and the
analyses that read their results.

An op runs on the Cube core (`pto.matmul`), on the Vector core (every other tile op),
or on either (`EITHER`: scalar index math, constants, `memref.dim`, views, workspace
allocation, loop-state queries and the settings statements), which do not decide where a
stage runs and join whichever stage is next to them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from xdsl.ir import Operation
from xdsl.traits import IsTerminator

from tileir.dialect import pto

Unit = Literal["vector", "cube"]

SETTINGS = (pto.SetVecTileShapesOp, pto.SetCubeTileShapesOp, pto.SetSemanticLabelOp)
_EITHER_OPS = (
    pto.ViewOp,
    pto.TensorOp,
    pto.IsLoopBeginOp,
    pto.IsLoopEndOp,
    *SETTINGS,
)
_EITHER_NAMES = frozenset({"memref.dim", "tensor.dim"})

UNIT_LETTER = {"vector": "V", "cube": "C"}


def op_unit(op: Operation) -> Unit | None:
    """The unit `op` must run on, or None for an op that runs on either (see module doc)
    and for terminators.

    Region-holding ops (loops, `scf.if`, stages) are not classified: their bodies are.
    """
    if op.has_trait(IsTerminator):
        return None
    if isinstance(op, pto.MatmulOp):
        return "cube"
    if isinstance(op, pto.TransferOp):
        return "cube" if op.dst_unit.data == "cube" else "vector"
    if isinstance(op, _EITHER_OPS) or op.name in _EITHER_NAMES or op.name.startswith("arith."):
        return None
    return "vector"


def is_container(op: Operation) -> bool:
    """Ops whose regions are partitioned on their own (loops, `scf.if`, stages)."""
    return bool(op.regions)


def kernels(module: Operation) -> Iterator[pto.KernelOp]:
    for op in module.walk():
        if isinstance(op, pto.KernelOp):
            yield op


def stages(kernel: Operation) -> list[pto.StageOp]:
    """The kernel's stages in program (pre-order) order."""
    return [op for op in kernel.walk() if isinstance(op, pto.StageOp)]


def flow_pattern(kernel: Operation) -> str:
    """The kernel's V/C flow pattern: its stages' units in program order, consecutive
    stages of one unit counted together (`V2,C1,V1`: two vector stages, e.g. one before
    and one inside a loop, then a cube stage, then a vector stage). Empty when the
    kernel has no stages."""
    runs: list[list[object]] = []
    for stage in stages(kernel):
        letter = UNIT_LETTER[stage.unit.data]
        if runs and runs[-1][0] == letter:
            runs[-1][1] = int(runs[-1][1]) + 1  # type: ignore[call-overload]
        else:
            runs.append([letter, 1])
    return ",".join(f"{letter}{count}" for letter, count in runs)


def enclosing_stage(op: Operation) -> pto.StageOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, pto.StageOp | pto.KernelOp):
        parent = parent.parent_op()
    return parent if isinstance(parent, pto.StageOp) else None
