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

The hash is also cheaper than xDSL's, and still a function of what the equality
compares (`_RegionAwareInfo`): it is computed once per op, not on every call; operands
and the body's outside values count by identity (`SSAValue.__hash__` is Python code);
a dense array by its bytes and a tensor type by its shape (`_attribute_hash`: xDSL's
hash is a Python call per parameter, recursively; unequal arrays or types that share
bytes or a shape, which only the element type tells apart, are few). It was more than
half of the pass's time.

The driver also finds each op's memory effects once (`KnownEffects`): xDSL's asks
`get_effects` up to three times per op (is it dead, is it pure, does it only read), and
again for every op between a read and the read it repeats; for a region op
(`RecursiveMemoryEffect`: `pto.stage`, `pto.loop`, `pto.stitch`) each time walks its
whole body. Here the effects of an op are kept from its visit (a region op's body is
visited before it, so its effects are the union of its children's kept ones). They
stay right: the driver erases nothing before its walk ends, and it only changes the
operands of ops it has not visited yet (the users of an op it replaces come after that
op). The class questions (a terminator, dead when unused, isolated from above) are
asked once per class, and the blocks and ops followed by their links.

It is not registered as a pass of its own (`tileir-opt` refuses two passes named `cse`);
`-p cse` is xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, UnregisteredOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.traits import IsolatedFromAbove, MemoryEffectKind
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
    CSEDriver,
    KnownOps,
    OperationInfo,
)

from tileir.passes.known_effects import KnownEffects, results_unused


def _body_key(op: Operation) -> tuple[list[str], list[int]]:
    """The names of the ops nested in `op` (pre-order) and the values they use that are
    defined outside `op`, in order of use (by `id`: `SSAValue.__hash__` is Python code,
    and `is_structurally_equivalent` requires these to be the same objects)."""
    names: list[str] = []
    inside: set[int] = set()
    outside: list[int] = []
    _add_body(op, names, inside, outside)
    return names, outside


def _add_body(op: Operation, names: list[str], inside: set[int], outside: list[int]) -> None:
    for region in op.regions:
        for block in region.blocks:
            inside.update(map(id, block.args))
    for region in op.regions:
        for block in region.blocks:
            inner = block._first_op
            while inner is not None:
                names.append(inner.name)
                for value in inner._operands:
                    if id(value) not in inside:
                        outside.append(id(value))
                inside.update(map(id, inner.results))
                if inner.regions:
                    _add_body(inner, names, inside, outside)
                inner = inner._next_op


def _attribute_hash(attribute: Attribute) -> int:
    """A hash of `attribute` that equal attributes share: `hash(attribute)`, but of
    the part that tells the common classes apart (a dense array's bytes, a tensor
    type's shape), which is cheaper (xDSL's hash is a Python call per parameter,
    recursively)."""
    kind = type(attribute)
    if kind is DenseArrayBase:
        return hash(attribute.data.data)  # type: ignore[attr-defined]
    if kind is TensorType:
        return hash(attribute.shape.data)  # type: ignore[attr-defined]
    return hash(attribute)


_UNREGISTERED: dict[type[Operation], bool] = {}


class _RegionAwareInfo(OperationInfo):
    """The key of an op in the table. `OperationInfo.__eq__` is xDSL's; the hash is
    another function of what `__eq__` compares (so that two equal keys hash alike), and
    cheaper: an operand by its identity (`SSAValue.__hash__` is `id`, in Python code),
    an attribute or a type by `_attribute_hash`, the name without an `isinstance`
    per op. It is computed once: xDSL's `OperationInfo` recomputes it on every call,
    and its `__eq__` hashes both sides again. Caching is sound because a key lives for
    one lookup or is the key of a known op, and the driver never changes a known op's
    operands (it replaces a value's uses only when no known op uses it)."""

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = self._compute_hash()
        return self._hash

    def _compute_hash(self) -> int:
        op = self.op
        kind = type(op)
        unregistered = _UNREGISTERED.get(kind)
        if unregistered is None:
            unregistered = _UNREGISTERED[kind] = issubclass(kind, UnregisteredOp)
        attributes, properties = op.attributes, op.properties
        base = hash(
            (
                op.op_name.data if unregistered else op.name,  # type: ignore[attr-defined]
                sum([hash((k, _attribute_hash(v))) for k, v in attributes.items()])
                if attributes
                else 0,
                sum([hash((k, _attribute_hash(v))) for k, v in properties.items()])
                if properties
                else 0,
                tuple([_attribute_hash(r.type) for r in op.results]),
                tuple(map(id, op._operands)),
            )
        )
        if not op.regions or op._operands:
            # (an op with operands, such as a loop, is told apart by them well enough,
            # and its body may be large: `cse` hashes every user of a replaced value)
            return base
        names, outside = _body_key(op)
        return hash((base, tuple(names), tuple(outside)))


class _RegionAwareKnownOps(KnownOps):
    """xDSL's table with `_RegionAwareInfo` keys. (The driver looks the op it visits
    up and records it with one key of its own: its hash is computed once.)"""

    def __getitem__(self, k: Operation):
        return self._known_ops[_RegionAwareInfo(k)]

    def __setitem__(self, k: Operation, v: Operation):
        self._known_ops[_RegionAwareInfo(k)] = v

    def __contains__(self, k: Operation):
        return _RegionAwareInfo(k) in self._known_ops

    def get(self, k: Operation, default=None):
        return self._known_ops.get(_RegionAwareInfo(k), default)

    def pop(self, k: Operation):
        return self._known_ops.pop(_RegionAwareInfo(k))


@dataclass
class _RegionAwareDriver(CSEDriver):
    known: KnownEffects = field(default_factory=KnownEffects)
    """The ops' effects, kept from their visits (see the module docstring)."""
    _isolated: dict[type[Operation], bool] = field(default_factory=dict)
    """`has_trait(IsolatedFromAbove, value_if_unregistered=True)` per op class."""

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
        # `has_other_side_effecting_op_in_between`) answered by `self.known`, and the
        # table's key of `op` made once for its lookup and its record.
        known = self.known
        info = known.traits(type(op))
        if info.terminator:
            return
        effects = known.of(op)
        if results_unused(op):  # `is_trivially_dead`
            dead = info.dead_if_unused
            if dead is None:
                dead = known.would_be_trivially_dead(op)
            if dead:
                self._mark_erasure(op)
                return
        for region in op.regions:
            first = region._first_block
            if first is not None and first._next_block is not None:
                return  # (more than one block)
        table = self._known_ops._known_ops
        key = _RegionAwareInfo(op)
        if effects is None or len(effects) != 0:
            if effects is None or not all(e.kind == MemoryEffectKind.READ for e in effects):
                return
            if existing := table.get(key):
                if op.parent is existing.parent and not self._write_between(existing, op):
                    self._replace_and_delete(op, existing)
                    return
            table[key] = op
            return
        if existing := table.get(key):
            self._replace_and_delete(op, existing)
            return
        table[key] = op

    def _simplify_block(self, block: Block):
        # xDSL 0.75's `CSEDriver._simplify_block`, the ops followed by their links (the
        # next op taken before the op is simplified, as xDSL's iterator does) and
        # `IsolatedFromAbove` asked once per class; an isolated op's regions start
        # from an empty table of this module's kind.
        isolated = self._isolated
        op = block._first_op
        while op is not None:
            following = op._next_op
            if op.regions:
                kind = type(op)
                might_be_isolated = isolated.get(kind)
                if might_be_isolated is None:
                    might_be_isolated = isolated[kind] = kind.has_trait(
                        IsolatedFromAbove, value_if_unregistered=True
                    )
                if might_be_isolated:
                    old_scope = self._known_ops
                    self._known_ops = _RegionAwareKnownOps()
                    for region in op.regions:
                        self._simplify_region(region)
                    self._known_ops = old_scope
                else:
                    for region in op.regions:
                        self._simplify_region(region)
            self._simplify_operation(op)
            op = following

    def _simplify_region(self, region: Region):
        # xDSL's scope handling, with the table of this module's kind.
        first = region._first_block
        if first is None or first._next_block is not None:
            return  # (no block, or more than one)
        old_scope = self._known_ops
        self._known_ops = _RegionAwareKnownOps(self._known_ops)
        self._simplify_block(region.block)
        self._known_ops = old_scope


class RegionAwareCSE(CommonSubexpressionElimination):
    """xDSL's `cse` (same name, same result), faster on IR with many region ops."""

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _RegionAwareDriver(_known_ops=_RegionAwareKnownOps()).simplify(op)
