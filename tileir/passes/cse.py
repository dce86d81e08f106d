"""The `cse` step of `default`: xDSL's common subexpression elimination, with region
ops told apart by hash.

xDSL's `cse` keys its table of known ops by name, attributes, properties, result types
and operands, and compares ops whose keys hash alike with `is_structurally_equivalent`.
A region op that takes its inputs from above (`pto.stage`, `pto.stitch`) has no
operands, so every stage with the same unit, label and result types hashes alike, and
each one is compared, body and all, against every earlier one in scope: quadratic in the
stages of a loop body (an unrolled body holds hundreds). This pass is xDSL's (same
driver, same equality, same result); only the hash of an operand-less op with regions
also covers its body, by what `is_structurally_equivalent` requires to be identical in
two equivalent bodies: the names of the nested ops, in order, and the values they use
from outside the op. Two ops that compare equal therefore still hash alike.

The driver also finds each op's memory effects once (`KnownEffects`): xDSL's asks
`get_effects` up to three times per op (is it dead, is it pure, does it only read), and
again for every op between a read and the read it repeats; for a region op
(`RecursiveMemoryEffect`: `pto.stage`, `pto.loop`, `pto.stitch`) each time walks its
whole body. Here the effects of an op are kept from its visit (a region op's body is
visited before it, so its effects are the union of its children's kept ones). They
stay right: the driver erases nothing before its walk ends, and it only changes the
operands of ops it has not visited yet (the users of an op it replaces come after that
op).

It is not registered as a pass of its own (`tileir-opt` refuses two passes named `cse`);
`-p cse` is xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region, SSAValue
from xdsl.traits import MemoryEffectKind
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
    CSEDriver,
    KnownOps,
    OperationInfo,
)

from tileir.passes.known_effects import KnownEffects


def _body_key(op: Operation) -> tuple[tuple[str, ...], tuple[SSAValue, ...]]:
    """The names of the ops nested in `op` (pre-order) and the values they use that are
    defined outside `op`, in order of use."""
    names: list[str] = []
    inside: set[SSAValue] = set()
    outside: list[SSAValue] = []
    for region in op.regions:
        for block in region.blocks:
            inside.update(block.args)
    for inner in op.walk():
        if inner is op:
            continue
        names.append(inner.name)
        for region in inner.regions:
            for block in region.blocks:
                inside.update(block.args)
        outside.extend(v for v in inner.operands if v not in inside)
        inside.update(inner.results)
    return tuple(names), tuple(outside)


class _RegionAwareInfo(OperationInfo):
    """The key of an op in the table. `OperationInfo.__eq__` is xDSL's; the hash is
    another function of what `__eq__` compares (so that two equal keys hash alike), and
    cheaper: an operand by its identity (`SSAValue.__hash__` is `id`, in Python code),
    the result types without building `result_types`. It is computed once: xDSL's
    `OperationInfo` recomputes it on every call, and its `__eq__` hashes both sides
    again. Caching is sound because a key lives for one lookup or is the key of a known
    op, and the driver never changes a known op's operands (it replaces a value's uses
    only when no known op uses it)."""

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = self._compute_hash()
        return self._hash

    def _compute_hash(self) -> int:
        op = self.op
        attributes, properties = op.attributes, op.properties
        base = hash(
            (
                self.name,
                sum(map(hash, attributes.items())) if attributes else 0,
                sum(map(hash, properties.items())) if properties else 0,
                tuple([r.type for r in op.results]),
                tuple(map(id, op.operands)),
            )
        )
        if not op.regions or op.operands:
            # (an op with operands, such as a loop, is told apart by them well enough,
            # and its body may be large: `cse` hashes every user of a replaced value)
            return base
        return hash((base, _body_key(op)))


class _RegionAwareKnownOps(KnownOps):
    """xDSL's table with `_RegionAwareInfo` keys. The driver looks the op it visits up
    and then records it (`get`, then `[op] = op`, nothing changes the op in between):
    the key of the last op looked up is kept, so that its hash is computed once. A
    membership test is of another op (a user of a value about to be replaced, whose
    operands may change next), so it never reuses or keeps a key."""

    _last: _RegionAwareInfo | None = None

    def _key(self, k: Operation) -> _RegionAwareInfo:
        last = self._last
        if last is None or last.op is not k:
            last = self._last = _RegionAwareInfo(k)
        return last

    def __getitem__(self, k: Operation):
        return self._known_ops[self._key(k)]

    def __setitem__(self, k: Operation, v: Operation):
        self._known_ops[self._key(k)] = v

    def __contains__(self, k: Operation):
        return _RegionAwareInfo(k) in self._known_ops

    def get(self, k: Operation, default=None):
        return self._known_ops.get(self._key(k), default)

    def pop(self, k: Operation):
        return self._known_ops.pop(self._key(k))


@dataclass
class _RegionAwareDriver(CSEDriver):
    known: KnownEffects = field(default_factory=KnownEffects)
    """The ops' effects, kept from their visits (see the module docstring)."""

    def _write_between(self, from_op: Operation, to_op: Operation) -> bool:
        """xDSL's `has_other_side_effecting_op_in_between`, with the kept effects."""
        next_op = from_op
        while next_op is not to_op:
            effects = self.known.of(next_op)
            if effects is None or any(e.kind is MemoryEffectKind.WRITE for e in effects):
                return True
            next_op = next_op.next_op
            assert next_op is not None, "Incorrect order of ops in side-effect search"
        return False

    def _simplify_operation(self, op: Operation):
        # xDSL 0.75's `CSEDriver._simplify_operation`, each `get_effects(op)` of it
        # (in `is_trivially_dead`, `is_side_effect_free`, `only_has_effect` and
        # `has_other_side_effecting_op_in_between`) answered by `self.known`.
        known = self.known
        if known.traits(type(op)).terminator:
            return
        effects = known.of(op)
        if known.is_trivially_dead(op):
            self._mark_erasure(op)
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return
        if effects is None or len(effects) != 0:
            if effects is None or not all(e.kind == MemoryEffectKind.READ for e in effects):
                return
            if existing := self._known_ops.get(op):
                if op.parent_block() is existing.parent_block() and not self._write_between(
                    existing, op
                ):
                    self._replace_and_delete(op, existing)
                    return
            self._known_ops[op] = op
            return
        if existing := self._known_ops.get(op):
            self._replace_and_delete(op, existing)
            return
        self._known_ops[op] = op

    def _simplify_region(self, region: Region):
        # xDSL's scope handling, with the table of this module's kind: an isolated op
        # starts from an empty xDSL table, which is replaced here on entering its region.
        if len(region.blocks) != 1:
            return
        old_scope = self._known_ops
        self._known_ops = _RegionAwareKnownOps(self._known_ops)
        self._simplify_block(region.block)
        self._known_ops = old_scope


class RegionAwareCSE(CommonSubexpressionElimination):
    """xDSL's `cse` (same name, same result), faster on IR with many region ops."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _RegionAwareDriver(_known_ops=_RegionAwareKnownOps()).simplify(op)
