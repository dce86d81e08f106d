"""The `canonicalize` step of `default`: xDSL's `canonicalize`, faster, same result.

xDSL's `CanonicalizePass` walks the IR with the canonicalization patterns and folders
(erasing ops that are dead as it meets them), and after each walk runs `region_dce`.
On a kernel of `pto.stage`s the region DCE was more than half of the pass's time: it
repeats rounds over every op until no op becomes live (at least two), and each round
asks every op not yet live whether it would be dead without uses, through
`get_effects`, which walks a region op's whole body. Here:

- `region_dce` finds the same live ops with a worklist (see its docstring), asking
  each op once (`KnownEffects`), and erases the others with xDSL's own `delete_dead`;
- the walk's applier asks what it asks of an op's class (a terminator, a symbol, a
  folder, constant-like, has canonicalization patterns: class methods) once per class.

The walk, the patterns, the folders and the dead-op test of each op during the walk
(whose IR changes as it goes) are xDSL's. tests/passes/test_canonicalize.py compares
the output with xDSL's `CanonicalizePass` on the seed kernels and on random programs,
with and without dead ops planted in them. Like tileir's `cse`, it is not registered as
a pass of its own: `-p canonicalize` is xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.folder import Folder
from xdsl.ir import Operation, Region
from xdsl.ir.post_order import PostOrderIterator
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
)
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, HasFolder
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern, CanonicalizePass
from xdsl.transforms.dead_code_elimination import LiveSet, result_only_effects

from tileir.passes.known_effects import ClassTraits, KnownEffects


def _visited_ops(region: Region, out: list[Operation]) -> None:
    """The ops `LiveSet.propagate_region_liveness(region)` visits: those of the blocks
    `PostOrderIterator` reaches from the entry block (only the entry block when its last
    op has no successors), with the ops of their regions, recursively."""
    first = region.first_block
    if first is None:
        return
    last = first.last_op
    blocks = [first] if last is None or not last.successors else PostOrderIterator(first)
    for block in blocks:
        for op in block.ops:
            out.append(op)
            for inner in op.regions:
                _visited_ops(inner, out)


def region_dce(region: Region, listener: PatternRewriterListener | None = None) -> bool:
    """`xdsl.transforms.dead_code_elimination.region_dce(region, listener)`.

    xDSL's `LiveSet` repeats rounds over the ops until no op becomes live: an op is
    live when it would not be dead without uses (`would_be_trivially_dead`) or when
    an op using one of its results is live. The rounds start from no live op and only
    add ops, so they end at the smallest set closed under these two rules; here that
    set is found with a worklist (the ops that are live by the first rule, then the
    ops that define their operands, and so on), among the ops the rounds visit. The
    dead ops are then erased by xDSL's `LiveSet.delete_dead`, which returns whether it
    erased anything, as xDSL's `region_dce` does."""
    ops: list[Operation] = []
    _visited_ops(region, ops)
    by_id = {id(op): op for op in ops}  # (an operand's owner that is a block is not in it)
    known = KnownEffects()
    live: set[int] = set()
    work = [id(op) for op in ops if not known.would_be_trivially_dead(op)]
    while work:
        n = work.pop()
        if n in live:
            continue
        live.add(n)
        for operand in by_id[n].operands:
            owner = id(operand.owner)
            if owner in by_id and owner not in live:
                work.append(owner)
    live_set = LiveSet(changed=False, _live_ops={op for op in ops if id(op) in live})
    live_set.delete_dead(region, listener)
    return live_set.changed


@dataclass(frozen=True)
class _Class:
    """What the walk asks of an op's class."""

    dead_terminator_or_symbol: bool
    """`would_be_trivially_dead`'s trait checks (either makes an op live)"""
    folds: bool
    """`has_trait(HasFolder, value_if_unregistered=False) and not
    has_trait(ConstantLike, value_if_unregistered=True)`"""
    canonicalizes: bool
    """`get_traits_of_type(HasCanonicalizationPatternsTrait)` is not empty"""


class _Classes(dict[type[Operation], _Class]):
    def __missing__(self, cls: type[Operation]) -> _Class:
        traits = ClassTraits.of(cls)
        info = self[cls] = _Class(
            traits.dead_terminator or traits.dead_symbol,
            cls.has_trait(HasFolder, value_if_unregistered=False)
            and not cls.has_trait(ConstantLike, value_if_unregistered=True),
            bool(cls.get_traits_of_type(HasCanonicalizationPatternsTrait)),
        )
        return info


@dataclass(eq=False, repr=False)
class _Applier(GreedyRewritePatternApplier):
    """xDSL's `GreedyRewritePatternApplier` of `CanonicalizePass` (its one pattern is
    `CanonicalizationRewritePattern`), with the class questions answered from
    `classes`."""

    classes: _Classes = field(default_factory=_Classes, kw_only=True)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        # xDSL 0.75's `GreedyRewritePatternApplier.match_and_rewrite`, line for line.
        info = self.classes[type(op)]
        if (
            self.dce_enabled
            and all(r.first_use is None for r in op.results)  # `is_trivially_dead`
            and not info.dead_terminator_or_symbol
            and result_only_effects(op)
        ):
            rewriter.erase(op)
            return

        if self.folding_enabled and info.folds:
            if self.ctx is None:
                raise ValueError("Context is required for folding")
            folded = Folder(self.ctx).try_fold(op)
            if folded is not None:
                folded_values, folded_ops = folded
                rewriter.replace(op, new_ops=folded_ops, new_results=folded_values)
                return

        if not info.canonicalizes:
            return  # (`CanonicalizationRewritePattern` would do nothing)
        for pattern in self.rewrite_patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return
        return


class TileirCanonicalizePass(CanonicalizePass):
    """xDSL's `canonicalize` (same name, same result), its region DCE faster."""

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # xDSL 0.75's `CanonicalizePass.apply`, with this module's applier and
        # `region_dce`.
        pattern = _Applier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
        PatternRewriteWalker(pattern, post_walk_func=region_dce).rewrite_module(op)
