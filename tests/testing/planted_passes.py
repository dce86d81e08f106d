"""Deliberately wrong passes: the checker must catch each of them on generated programs.

Each is a plausible compiler bug in a few lines: an operand swap, a forgotten tail, a
memory reordering that ignores a write, a wrong rounding mode.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from tileir.dialect import pto


@dataclass(frozen=True)
class SwapSubOperands(ModulePass):
    """`a - b` becomes `b - a` (as if sub were commutative)."""

    name = "planted-swap-sub"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for sub in list(op.walk()):
            if isinstance(sub, pto.SubOp):
                lhs, rhs = sub.lhs, sub.rhs
                sub.operands = [rhs, lhs]


@dataclass(frozen=True)
class DropTail(ModulePass):
    """Every view forgets its `valid` shape: a tail tile is read as a whole tile."""

    name = "planted-drop-tail"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for view in list(op.walk()):
            if isinstance(view, pto.ViewOp) and view.mixed_valid_shape is not None:
                whole = pto.ViewOp(
                    view.source, view.mixed_offsets, view.result.type, sizes=list(view.sizes)
                )
                Rewriter.replace_op(view, whole)


def _reads(op: Operation, buffer: SSAValue) -> bool:
    return any(isinstance(o, pto.ViewOp) and o.source == buffer for o in op.walk())


@dataclass(frozen=True)
class ReorderReadPastWrite(ModulePass):
    """Moves each `assemble` into a buffer below the next op of its block that reads
    the buffer, as a scheduler that ignores memory effects would."""

    name = "planted-reorder-read-past-write"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for write in list(op.walk()):
            if not isinstance(write, pto.AssembleOp):
                continue
            block = write.parent_block()
            assert isinstance(block, Block)
            later = write.next_op
            while later is not None and not _reads(later, write.dst):
                later = later.next_op
            if later is not None and not later.has_trait(IsTerminator):
                write.detach()
                Rewriter.insert_op(write, InsertPoint.after(later))


@dataclass(frozen=True)
class ChangeCastMode(ModulePass):
    """Every cast rounds toward -inf (a floor cast rounds toward +inf instead)."""

    name = "planted-change-cast-mode"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for cast in op.walk():
            if isinstance(cast, pto.CastOp):
                mode = (
                    pto.CastMode.CEIL
                    if cast.mode.data == pto.CastMode.FLOOR
                    else pto.CastMode.FLOOR
                )
                cast.mode = pto.CastModeAttr(mode)


PLANTED: tuple[type[ModulePass], ...] = (
    SwapSubOperands,
    DropTail,
    ReorderReadPastWrite,
    ChangeCastMode,
)
