"""The numpy back end's lowering core: a kernel becomes a tree of closures (steps) over
slot indices into one flat environment list. `_Compiler` assigns slots and lowers blocks;
`rule` registers the rule of an IR structure op (`RULES`), and a PyPTO function's rule is on
its binding. The value conventions are in `tileir.backends.numpy.interpreter`'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tileir.backends.numpy.runtime import IndexList, Step, sequence
from tileir.diagnostics import error_at, location_of
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type

if TYPE_CHECKING:
    from tileir.backends.numpy.runtime import LoopBatch


# --------------------------------------------------------------------------- helpers


def numpy_dtype(t: Attribute) -> np.dtype:
    """numpy dtype of a tensor / memref / scalar type's element type."""
    if isinstance(t, TensorType | MemRefType):
        t = t.get_element_type()
    return element_type(t).numpy


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def _rank(v: SSAValue) -> int:
    return len(_shape(v.type))


def _is_tile(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


def index_list(compiler: _Compiler, values: Sequence[int | SSAValue] | None) -> IndexList:
    """The run-time reader of a mixed static / dynamic index list (`[0, %i]`)."""
    spec = [
        (compiler.slot(v), 0) if isinstance(v, SSAValue) else (-1, int(v)) for v in values or ()
    ]
    return IndexList(compiler, spec, values is not None)


def _result_shape(compiler: _Compiler, t: Attribute, sizes: Sequence[SSAValue]) -> IndexList:
    """The shape of a result type whose `?` dims come from `sizes` operands."""
    it = iter(sizes)
    return index_list(compiler, [next(it) if s == DYNAMIC_INDEX else s for s in _shape(t)])


# --------------------------------------------------------------------------- compiler


Rule = Callable[["_Compiler", Operation], "Step | None"]
RULES: dict[type[Operation], Rule] = {}


def rule(*op_types: type[Operation]) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for t in op_types:
            RULES[t] = fn
        return fn

    return register


def _rule_for(op: Operation) -> Rule | None:
    """`RULES` holds the rules of the IR's own structure (arith, scf, stages, loops);
    a PyPTO function's rule is on its binding."""
    found = RULES.get(type(op))
    if found is not None:
        return found
    # Imported here: the bindings import this module's rules.
    from tileir.bindings import BY_OP

    binding = BY_OP.get(type(op))
    return binding.numpy if binding is not None else None


class _Compiler:
    """Lowers one kernel into steps. `batch` is set while lowering the batched form of a
    loop body, where index values may be arrays (one entry per iteration) and tiles may
    carry one leading batch dim."""

    def __init__(self) -> None:
        self.slots: dict[SSAValue, int] = {}
        self.template: list[Any] = []
        self.batch = False
        self.vectorize = True
        """Whether independent loops may run batched (False: the reference path)."""
        self.read_only: set[SSAValue] = set()
        """Memrefs no op writes (kernel inputs never assembled into)."""
        self.batchers: list[LoopBatch] = []
        self.loop_slots: dict[Operation, tuple[int, int]] = {}
        """loop op -> (slot of its (lb, ub, step), slot of its chunk length or -1)."""
        self.dies_at: dict[Operation, tuple[SSAValue, ...]] = {}
        """op -> the tiles computed in its block whose last use it is."""

    def slot(self, value: SSAValue) -> int:
        s = self.slots.get(value)
        if s is None:
            s = self.slots[value] = len(self.template)
            self.template.append(None)
        return s

    def new_slot(self) -> int:
        self.template.append(None)
        return len(self.template) - 1

    def block(self, block: Block) -> Step:
        self.dies_at.update(self._last_uses(block))
        steps: list[tuple[Step, Operation]] = []
        for op in block.ops:
            if isinstance(op, pto.YieldOp | scf.YieldOp):
                continue
            r = _rule_for(op)
            if r is None:
                raise error_at(op, f"the numpy back end does not support '{op.name}'")
            step = r(self, op)
            if step is not None:
                steps.append((step, op))
        return _sequence(self._free_dead_tiles(steps))

    @staticmethod
    def _last_uses(block: Block) -> dict[Operation, tuple[SSAValue, ...]]:
        """Each tile computed in `block` (and not yielded) under the op of the block
        that uses it last."""
        last_use: dict[SSAValue, Operation] = {}
        for op in block.ops:
            for user in op.walk():
                for v in user.operands:
                    last_use[v] = op
        kept = {v for v in (block.last_op.operands if block.last_op else ())}
        dying: dict[Operation, list[SSAValue]] = {}
        for op in block.ops:
            for v in op.results:
                if isinstance(v.type, TensorType) and v not in kept:
                    dying.setdefault(last_use.get(v, op), []).append(v)
        return {op: tuple(vs) for op, vs in dying.items()}

    def _free_dead_tiles(
        self, steps: list[tuple[Step, Operation]]
    ) -> list[tuple[Step, Operation, tuple[int, ...]]]:
        """Drop each tile computed in `block` from the environment after its last use in
        the block, as Python frees a temporary: on large tiles this keeps the memory the
        run holds (and the fresh pages it touches) close to what hand-written numpy
        needs."""
        stepped = {op for _, op in steps}  # the others' values live in the template
        out: list[tuple[Step, Operation, tuple[int, ...]]] = []
        for step, op in steps:
            dead = tuple(self.slot(v) for v in self.dies_at.get(op, ()) if v.owner in stepped)
            out.append((step, op, dead))
        return out


def _sequence(steps: Sequence[tuple[Step, Operation, tuple[int, ...]]]) -> Step:
    """Run the steps in order, dropping the slots of the tiles each used last (the third
    item); a Python exception of a step is reported at its op (`runtime.sequence`)."""
    return sequence([(f, dead, location_of(op), op.name) for f, op, dead in steps])
