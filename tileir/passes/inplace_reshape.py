"""`inplace-reshape`: mark reshapes that need no data move `inplace`.

`pypto.reshape(x, shape, inplace=True)` gives the result the storage of `x` (PyPTO:
"Reshape inplace will not generate data move"). That is only right when nobody can tell
the difference, so the pass marks a `pto.reshape` only if all of these hold:

1. the input is a contiguous, full tile: not made by `pto.view` (a window into other
   storage; also a PyPTO rule), and no tail (`valid`) region reaches it: no view, `full`
   or reshape with a `valid` list feeds it through elementwise math;
2. the reshape has no `valid` list itself (PyPTO drops `valid_shape` when inplace) and
   both shapes are static (a dynamic reshape must already be inplace: the verifier says
   so) with the same element count;
3. the input is dead after the reshape: no use of it comes later in program order, in
   any region, and no enclosing loop (with more than one trip) that the input was
   defined outside of runs the reshape again;
4. the result is not a function output: it is not written into a kernel argument by
   `pto.assemble` (through stage results and transfers too). PyPTO's documentation
   forbids it; 0.2.0 drops such an `inplace` itself, so marking it would gain nothing.

PyPTO's last rule, "an inplace reshape sits alone inside a `loop(1)`", is left to PyPTO,
which adds that loop itself when it is missing: `pto.loop` has no results, so the IR
cannot express a one-trip loop that hands the reshaped tile on; `inplace` on a
`pto.reshape` means "PyPTO's own `loop(1)` around this reshape". The `ReshapeOp`
verifier rejects an `inplace` that breaks the PyPTO rules it can see locally (view
input, dynamic shapes without `inplace`).

`report=true` prints per kernel how many reshapes were marked, and why the others were
not, to stderr; `mark_inplace_reshapes` is the same as a function.

```mlir
%y = pto.exp %x : tensor<8x64xf32>
%r = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>
// becomes
%r = pto.reshape %y inplace : tensor<8x64xf32> -> tensor<512xf32>
```
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import OptOperandDef, VarOperandDef
from xdsl.passes import ModulePass

from tileir.dialect import pto
from tileir.passes.stages import kernels, walk_ops

_WITH_VALID = frozenset({pto.ViewOp, pto.FullOp, pto.ReshapeOp})


_BLOCK_KINDS: dict[type, bool] = {}
"""Per class of a value's owner: is it a block? (`isinstance` on xDSL's ABC-based
classes is slow.)"""

_VALID_GROUP: dict[type[Operation], tuple[int, int, bool]] = {}
"""Per class: the index of `valid_shape` among the operand definitions, their number,
and whether `valid_shape` is the only variadic one."""


def _has_valid_list(op: Operation) -> bool:
    """`op.valid_shape or op.static_valid_shape.data.data` of a `pto.view`, `pto.full`
    or `pto.reshape`, without xDSL's `valid_shape` accessor (which finds the op's
    definition and decodes its operand segments on every call): the static half is
    looked at first, and the size of the dynamic one is read off the segment sizes
    (a property), or, for an op whose one variadic group it is (`pto.reshape`), off
    the number of operands."""
    if op.static_valid_shape.data.data:  # type: ignore[attr-defined]
        return True
    kind = type(op)
    known = _VALID_GROUP.get(kind)
    if known is None:
        defs = kind.get_irdl_definition().operands
        variadic = [name for name, d in defs if isinstance(d, VarOperandDef | OptOperandDef)]
        known = _VALID_GROUP[kind] = (
            [name for name, _ in defs].index("valid_shape"),
            len(defs),
            variadic == ["valid_shape"],
        )
    group, defs, only_variadic = known
    sizes = op.properties.get("operandSegmentSizes")
    if isinstance(sizes, DenseArrayBase):
        return sizes.get_values()[group] != 0
    if only_variadic:
        return len(op._operands) > defs - 1
    return bool(op.valid_shape)  # type: ignore[attr-defined]


@dataclass
class ReshapeAnalysis:
    """Caches shared by all the reshapes of one run (so the pass stays linear)."""

    partial: dict[int, bool] = field(default_factory=dict)
    positions: dict[int, dict[int, int]] = field(default_factory=dict)
    """Keyed by `id`, like `partial`: xDSL's `__hash__` on ops and blocks is slow."""
    repeats: dict[Operation, bool] = field(default_factory=dict)

    # ------------------------------------------------------------------ full tiles

    def maybe_partial(self, value: SSAValue) -> bool:
        """Can `value` carry a valid region smaller than its shape? (Memoised by `id`:
        the values outlive the pass run, and xDSL's `SSAValue.__hash__` is Python
        code.)"""
        partial = self.partial
        stack = [value]
        while stack:
            v = stack[-1]
            if id(v) in partial:
                stack.pop()
                continue
            inputs = self._partial_inputs(v)
            if isinstance(inputs, bool):
                partial[id(v)] = inputs
                stack.pop()
                continue
            pending = [i for i in inputs if id(i) not in partial]
            if pending:
                stack.extend(pending)
                continue
            partial[id(v)] = any(partial[id(i)] for i in inputs)
            stack.pop()
        return partial[id(value)]

    @staticmethod
    def _partial_inputs(v: SSAValue) -> bool | list[SSAValue]:
        """True / False when known at once, else the values it depends on. (Exact
        `type()` tests: isinstance on xDSL's ABC-based classes dominates this loop.)"""
        if type(v.type) is not TensorType:
            return False
        owner = v.owner
        kind = type(owner)
        is_block = _BLOCK_KINDS.get(kind)
        if is_block is None:
            is_block = _BLOCK_KINDS[kind] = issubclass(kind, Block)
        if is_block:
            return True  # not made by a known op: assume the worst
        if kind in _WITH_VALID and _has_valid_list(owner):
            return True
        # (`_operands[0]`: `source`, whose accessor decodes the operand segments)
        if kind is pto.ViewOp and type(owner._operands[0].type) is MemRefType:
            return False
        if kind is pto.StageOp or kind is scf.IfOp:
            index = v.index  # type: ignore[attr-defined]
            yielded = []
            for region in owner.regions:
                term = region.block.last_op
                if term is None or index >= len(term.operands):
                    return True
                yielded.append(term.operands[index])
            return yielded
        return [o for o in owner._operands if type(o.type) is TensorType]

    # ------------------------------------------------------------------ liveness

    def _position(self, op: Operation) -> int:
        block = op.parent_block()
        assert block is not None
        table = self.positions.get(id(block))
        if table is None:
            table = self.positions[id(block)] = {id(o): i for i, o in enumerate(block.ops)}
        return table[id(op)]

    @staticmethod
    def _ancestry(op: Operation) -> list[Operation]:
        chain = [op]
        while (parent := chain[-1].parent_op()) is not None:
            chain.append(parent)
        return chain

    def runs_before(self, a: Operation, b: Operation) -> bool:
        """Does `a` finish before `b` starts in every run of one iteration (ops in the
        two branches of one `scf.if` never both run, so either counts as before)?"""
        chain_a = self._ancestry(a)
        index_a = {id(op): i for i, op in enumerate(chain_a)}
        previous = None
        for op in self._ancestry(b):
            if id(op) in index_a:
                i = index_a[id(op)]
                inner_a = chain_a[i - 1] if i else None
                if inner_a is None or previous is None:
                    return False  # one contains the other
                if inner_a.parent_block() is previous.parent_block():
                    return self._position(inner_a) < self._position(previous)
                return isinstance(op, scf.IfOp)
            previous = op
        return False

    def _repeats(self, loop: Operation) -> bool:
        known = self.repeats.get(loop)
        if known is None:
            known = self.repeats[loop] = self._trips_more_than_once(loop)
        return known

    @staticmethod
    def _trips_more_than_once(loop: Operation) -> bool:
        if not isinstance(loop, pto.LoopOp | pto.LoopUnrollOp):
            return False
        lb, ub, step = (
            pto.constant_index(v) for v in (loop.lower_bound, loop.upper_bound, loop.step)
        )
        if None in (lb, ub, step):
            return True
        return (ub - lb + step - 1) // step > 1  # type: ignore[operator]

    def dead_after(self, value: SSAValue, reshape: pto.ReshapeOp) -> bool:
        owner = value.owner
        def_op = owner.parent_op() if isinstance(owner, Block) else owner
        parent = reshape.parent_op()
        while parent is not None and not isinstance(parent, pto.KernelOp):
            if self._repeats(parent) and (def_op is None or not parent.is_ancestor(def_op)):
                return False
            parent = parent.parent_op()
        return all(
            use.operation is reshape or self.runs_before(use.operation, reshape)
            for use in value.uses
        )


def _final_users(value: SSAValue) -> list[Operation]:
    """The ops that use `value`, looking through stage results and transfers."""
    users: list[Operation] = []
    stack = [value]
    while stack:
        v = stack.pop()
        for use in v.uses:
            op = use.operation
            if isinstance(op, pto.YieldOp) and isinstance(op.parent_op(), pto.StageOp):
                stack.append(op.parent_op().outputs[use.index])  # type: ignore[union-attr]
            elif isinstance(op, pto.TransferOp):
                stack.append(op.result)
            else:
                users.append(op)
    return users


def inplace_blockers(
    reshape: pto.ReshapeOp, analysis: ReshapeAnalysis | None = None, *, first_only: bool = False
) -> list[str]:
    """Why `reshape` cannot be inplace (empty when it can). The rules are tried cheapest
    first; `first_only` stops at the first one that fails (what the pass needs)."""
    analysis = analysis or ReshapeAnalysis()
    reasons: list[str] = []
    source = reshape._operands[0]  # (`input`: its accessor finds the op's definition)
    checks = (
        ("input made by pto.view", lambda: type(source.owner) is pto.ViewOp),
        (
            "has a valid list",
            # (an empty static half is an empty mixed list, and is cheaper to read)
            lambda: (
                bool(reshape.static_valid_shape.data.data) and reshape.mixed_valid_shape is not None
            ),
        ),
        (
            "dynamic shape",
            lambda: DYNAMIC_INDEX in (*source.type.get_shape(), *reshape.result.type.get_shape()),  # type: ignore[attr-defined]
        ),
        (
            "result is a kernel output",
            lambda: any(
                type(op) is pto.AssembleOp and pto.is_kernel_argument(pto.memory_root(op.dst))  # type: ignore[attr-defined]
                for op in _final_users(reshape.result)
            ),
        ),
        ("input used afterwards", lambda: not analysis.dead_after(source, reshape)),
        (
            "input may be a tail tile",
            lambda: type(source.owner) is not pto.ViewOp and analysis.maybe_partial(source),
        ),
    )
    for reason, fails in checks:
        if fails():
            reasons.append(reason)
            if first_only:
                break
    return reasons


def mark_inplace_reshapes(kernel: Operation) -> tuple[int, Counter[str]]:
    """Mark the reshapes of `kernel` (or a module) that can be inplace. Returns how many
    were marked and, for the ones left alone, a count of the first rule each broke."""
    analysis = ReshapeAnalysis()
    marked = 0
    reasons: Counter[str] = Counter()
    for op in walk_ops(kernel):
        if type(op) is not pto.ReshapeOp or op.inplace is not None:  # type: ignore[attr-defined]
            continue
        blockers = inplace_blockers(op, analysis, first_only=True)
        if blockers:
            reasons.update(blockers)
            continue
        op.inplace = UnitAttr()
        marked += 1
    return marked, reasons


@dataclass(frozen=True)
class InplaceReshapePass(ModulePass):
    """Mark reshapes `inplace` where no data move is needed (see the module docstring).
    `report=true` prints, per kernel, how many were marked and why others were not."""

    name = "inplace-reshape"

    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in kernels(op):
            marked, reasons = mark_inplace_reshapes(kernel)
            if self.report:
                why = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
                print(
                    f"inplace-reshape: @{kernel.sym_name.data}: marked {marked}"
                    + (f" (left alone: {why})" if why else ""),
                    file=sys.stderr,
                )
