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

It is not registered as a pass of its own (`tileir-opt` refuses two passes named `cse`);
`-p cse` is xDSL's.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region, SSAValue
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
    CSEDriver,
    KnownOps,
    OperationInfo,
)


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
    """The key of an op in the table. Its hash is computed once: xDSL's `OperationInfo`
    recomputes it on every call, and its `__eq__` hashes both sides again. Caching is
    sound because a key lives for one lookup or is the key of a known op, and the
    driver never changes a known op's operands (it replaces a value's uses only when no
    known op uses it)."""

    _hash: int | None = None

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = self._compute_hash()
        return self._hash

    def _compute_hash(self) -> int:
        base = super().__hash__()
        if not self.op.regions or self.op.operands:
            # (an op with operands, such as a loop, is told apart by them well enough,
            # and its body may be large: `cse` hashes every user of a replaced value)
            return base
        return hash((base, _body_key(self.op)))


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


class _RegionAwareDriver(CSEDriver):
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
