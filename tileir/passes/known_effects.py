"""xDSL's memory-effect queries, each answered once per op, for drivers that ask them of
many ops while the ops' effects cannot change: tileir's `cse` (which erases nothing
before its walk ends and changes only the operands of ops it has not visited yet) and
the region DCE of tileir's `canonicalize` (whose liveness propagation reads the IR and
changes nothing).

`get_effects(op)` walks a region op's whole body (`RecursiveMemoryEffect`: `pto.stage`,
`pto.loop`, `pto.stitch`), so asking it of every op of nested regions is quadratic in
the nesting; here a region op's effects are the union of its children's kept ones. The
trait queries (`has_trait`, `get_traits_of_type`, class methods) are asked once per
op class, and an op of a class whose only memory effect traits are `NoMemoryEffect`
(`Pure`) has no effects without asking. Each answer is xDSL's (tests/passes/test_cse.py compares them with
`xdsl.traits.get_effects` and `would_be_trivially_dead` on every op of the seed kernels).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import (
    EffectInstance,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    NoMemoryEffect,
    RecursiveMemoryEffect,
    SymbolOpInterface,
    get_effects,
)

Effects = AbstractSet[EffectInstance] | None
"""What `xdsl.traits.get_effects` returns: the effects, or None when unknown."""

_NONE: AbstractSet[EffectInstance] = frozenset()

# `KnownEffects._verdict`s
_READS = "reads"
_ALLOCATES = "allocates"
_OBSERVABLE = "observable"


@dataclass(frozen=True)
class ClassTraits:
    """The trait queries of the drivers, asked once per op class."""

    terminator: bool
    """`has_trait(IsTerminator)`"""
    dead_terminator: bool
    """`has_trait(IsTerminator, value_if_unregistered=False)` (`would_be_trivially_dead`'s)"""
    dead_symbol: bool
    """`has_trait(SymbolOpInterface, value_if_unregistered=False)` (likewise)"""
    memory_effects: tuple[MemoryEffect, ...]
    """`get_traits_of_type(MemoryEffect)`"""
    pure: bool
    """Every op of the class has no effects: it has memory effect traits, and each is
    `NoMemoryEffect` (as `Pure`), whose `get_effects` is the empty set for any op."""

    dead_if_unused: bool | None
    """`would_be_trivially_dead` of every op of the class, when the class decides it:
    False for a terminator, a symbol or a class without memory effect traits (unknown
    effects), True for a pure class; None when it depends on the op's effects."""

    @staticmethod
    def of(cls: type[Operation]) -> ClassTraits:
        effects = tuple(cls.get_traits_of_type(MemoryEffect))
        no_effect = NoMemoryEffect.get_effects.__func__  # type: ignore[attr-defined]
        dead_terminator = cls.has_trait(IsTerminator, value_if_unregistered=False)
        dead_symbol = cls.has_trait(SymbolOpInterface, value_if_unregistered=False)
        pure = bool(effects) and all(
            getattr(type(t).get_effects, "__func__", None) is no_effect for t in effects
        )
        dead_if_unused = (
            False if dead_terminator or dead_symbol or not effects else True if pure else None
        )
        return ClassTraits(
            cls.has_trait(IsTerminator),
            dead_terminator,
            dead_symbol,
            effects,
            pure,
            dead_if_unused,
        )


_CLASSES: dict[type[Operation], ClassTraits] = {}
"""`ClassTraits` of the classes met so far (facts about a class, shared)."""


def results_unused(op: Operation) -> bool:
    """`all(r.first_use is None for r in op.results)`, without a generator (the first
    test of `is_trivially_dead`, asked of every op the dead-code walks visit)."""
    for r in op.results:
        if r.first_use is not None:
            return False
    return True


class KnownEffects:
    """The effects of ops, found once per op. Use one while the effects of the ops it
    has answered for cannot change (their operands' types, their bodies)."""

    def __init__(self) -> None:
        self._effects: dict[int, tuple[Operation, Effects]] = {}
        """By `id`, with the op (so that the `id` is not reused while kept)."""
        self._classes = _CLASSES
        self._verdicts: dict[int, tuple[Operation, object]] = {}
        """`_verdict`s, kept like `_effects`."""

    def traits(self, cls: type[Operation]) -> ClassTraits:
        info = self._classes.get(cls)
        if info is None:
            info = self._classes[cls] = ClassTraits.of(cls)
        return info

    def of(self, op: Operation) -> Effects:
        """`xdsl.traits.get_effects(op)`."""
        known = self._effects.get(id(op))
        if known is not None:
            return known[1]
        info = self.traits(type(op))
        if info.pure:
            return _NONE
        effects: Effects = None
        traits = info.memory_effects
        if traits:
            found: set[EffectInstance] = set()
            for trait in traits:
                part = (
                    self._nested(op)
                    if type(trait) is RecursiveMemoryEffect
                    else trait.get_effects(op)
                )
                if part is None:
                    break
                found.update(part)
            else:
                effects = found
        self._effects[id(op)] = (op, effects)
        return effects

    def _nested(self, op: Operation) -> Effects:
        """`RecursiveMemoryEffect.get_effects(op)`: the union of its children's."""
        found: set[EffectInstance] = set()
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    part = self.of(child)
                    if part is None:
                        return None
                    found.update(part)
        return found

    def would_be_trivially_dead(self, op: Operation) -> bool:
        """`xdsl.transforms.dead_code_elimination.would_be_trivially_dead(op)`."""
        info = self._classes.get(type(op)) or self.traits(type(op))
        if info.dead_if_unused is not None:
            return info.dead_if_unused
        effects = self.of(op)
        # `result_only_effects`: reads, and allocations of values the op defines
        return effects is not None and all(
            e.kind == MemoryEffectKind.READ
            or (
                e.kind == MemoryEffectKind.ALLOC
                and isinstance(v := e.value, SSAValue)
                and op.is_ancestor(v.owner)
            )
            for e in effects
        )

    def would_be_dead_soon(self, op: Operation) -> bool:
        """`would_be_trivially_dead(op)` too, without finding every effect of a region
        op: it is a conjunction over the effects of the op and of the ops nested in it
        (`RecursiveMemoryEffect`), so one unknown effect, or one that is neither a read
        nor an allocation, decides it (`_verdict`); only a region op with allocations
        in it needs all of its effects (where they are allocated)."""
        info = self._classes.get(type(op)) or self.traits(type(op))
        if info.dead_if_unused is not None:
            return info.dead_if_unused
        verdict = self._verdict(op)
        if verdict is not _ALLOCATES:
            return verdict is _READS
        return self.would_be_trivially_dead(op)

    def _verdict(self, op: Operation) -> object:
        """`_READS`: every effect of `op` (nested ones included) is a read; `_OBSERVABLE`:
        one is unknown, or neither a read nor an allocation; else `_ALLOCATES`."""
        known = self._verdicts.get(id(op))
        if known is not None:
            return known[1]
        info = self._classes.get(type(op)) or self.traits(type(op))
        verdict = _READS
        if info.pure:
            return verdict
        if not info.memory_effects:
            verdict = _OBSERVABLE
        for trait in info.memory_effects:
            if type(trait) is RecursiveMemoryEffect:
                for region in op.regions:
                    for block in region.blocks:
                        child = block._first_op
                        while child is not None and verdict is not _OBSERVABLE:
                            inner = self._verdict(child)
                            if inner is not _READS:
                                verdict = inner
                            child = child._next_op
            else:
                part = trait.get_effects(op)
                if part is None:
                    verdict = _OBSERVABLE
                else:
                    for e in part:
                        if e.kind == MemoryEffectKind.ALLOC:
                            verdict = _ALLOCATES
                        elif e.kind != MemoryEffectKind.READ:
                            verdict = _OBSERVABLE
                            break
            if verdict is _OBSERVABLE:
                break
        self._verdicts[id(op)] = (op, verdict)
        return verdict

    def is_trivially_dead(self, op: Operation) -> bool:
        """`xdsl.transforms.dead_code_elimination.is_trivially_dead(op)`."""
        return results_unused(op) and self.would_be_trivially_dead(op)


def memref_effects(op: Operation) -> tuple[list[tuple[SSAValue, bool]], bool]:
    """`get_effects(op)` as (memref value, writes) pairs, and whether some effect cannot
    be placed (effects unknown, or one not on a memref value): the passes that order
    memory accesses (`stitch`, `loop-fusion`) then order the op against everything."""
    effects = get_effects(op)
    if effects is None:
        return [], True
    accesses: list[tuple[SSAValue, bool]] = []
    unknown = False
    for e in effects:
        if isinstance(e.value, SSAValue) and isinstance(e.value.type, MemRefType):
            accesses.append((e.value, e.kind != MemoryEffectKind.READ))
        else:
            unknown = True
    return accesses, unknown
