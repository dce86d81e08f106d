"""The `canonicalize` step of `default`: xDSL's `canonicalize`, faster, same result.

xDSL's `CanonicalizePass` walks the IR with the canonicalization patterns and folders
(erasing ops that are dead as it meets them), and after each walk runs `region_dce`.
On a kernel of `pto.stage`s the region DCE was more than half of the pass's time: it
repeats rounds over every op until no op becomes live (at least two), and each round
asks every op not yet live whether it would be dead without uses, through
`get_effects`, which walks a region op's whole body. Here:

- `region_dce` finds the same live ops with a worklist (see its docstring), asking
  only the ops that no live op uses whether they would be dead without uses
  (`KnownEffects.would_be_dead_soon`, which stops at the first effect that decides
  it), and erases the others with xDSL's own `delete_dead` (not called when it would
  erase nothing);
- the walker (`_Walker`) keeps xDSL's worklist, in xDSL's order, but indexed by `id`
  (`Operation.__hash__` is Python code), and pops without a call to the applier the
  ops on which it would do nothing: no folder, no canonicalization pattern, and not
  dead (a result used, or a class whose ops never are);
- an integer binary `arith` op (`muli %i, %c8`) on which xDSL's generic folder and
  patterns did nothing before with the same class and the same right-hand constant
  (the left operand no constant) is left alone without running them again
  (`tileir.passes.quiet_binaries`: what they read, and why that decides it);
- the applier asks what it asks of an op's class (a terminator, a symbol, a folder,
  constant-like, has canonicalization patterns: class methods) once per class.

The order of the walk, the patterns, the folders and the dead-op test of each op
during the walk (whose IR changes as it goes) are xDSL's. tests/passes/test_canonicalize.py
compares the output with xDSL's `CanonicalizePass` on the seed kernels and on random
programs, with and without dead ops planted in them, and on random index programs
with dead loops and stages the rewrites themselves, in order. Like tileir's `cse`, it is not registered as
a pass of its own: `-p canonicalize` is xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.folder import Folder
from xdsl.ir import Block, Operation, Region
from xdsl.ir.post_order import PostOrderIterator
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, HasFolder
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern, CanonicalizePass
from xdsl.transforms.dead_code_elimination import LiveSet
from xdsl.utils.worklist import Worklist

from tileir.passes.known_effects import ClassTraits, KnownEffects, results_unused
from tileir.passes.quiet_binaries import QuietBinaries, generic_binary


def _visited_ops(region: Region, out: list[Operation]) -> bool:
    """The ops `LiveSet.propagate_region_liveness(region)` visits: those of the blocks
    `PostOrderIterator` reaches from the entry block (only the entry block when its last
    op has no successors), with the ops of their regions, recursively. Returns whether
    every region met has at most one block (then `LiveSet.delete_dead` erases no
    block, only ops that are not live)."""
    first = region.first_block
    if first is None:
        return True
    single = first.next_block is None
    last = first.last_op
    blocks = [first] if last is None or not last.successors else PostOrderIterator(first)
    for block in blocks:
        op = block._first_op
        while op is not None:
            out.append(op)
            for inner in op.regions:
                single = _visited_ops(inner, out) and single
            op = op._next_op
    return single


def region_dce(region: Region, listener: PatternRewriterListener | None = None) -> bool:
    """`xdsl.transforms.dead_code_elimination.region_dce(region, listener)`.

    xDSL's `LiveSet` repeats rounds over the ops until no op becomes live: an op is
    live when it would not be dead without uses (`would_be_trivially_dead`) or when
    an op using one of its results is live. The rounds start from no live op and only
    add ops, so they end at the smallest set closed under these two rules; here that
    set is found with a worklist (an op that is live by the first rule, then the ops
    that define its operands, and so on), among the ops the rounds visit. They are
    taken last first, so that the users of an op are mostly live before it comes up:
    the first rule is asked only of the ops not live yet. The dead ops are then erased
    by xDSL's `LiveSet.delete_dead`, which returns whether it erased anything, as
    xDSL's `region_dce` does; when every op is live and no region has a second block,
    it would erase nothing, and is not called."""
    ops: list[Operation] = []
    single = _visited_ops(region, ops)
    by_id = {id(op): op for op in ops}  # (an operand's owner that is a block is not in it)
    known = KnownEffects()
    live: set[int] = set()
    for op in reversed(ops):
        if id(op) in live or known.would_be_dead_soon(op):
            continue
        work = [id(op)]
        while work:
            n = work.pop()
            if n in live:
                continue
            live.add(n)
            for operand in by_id[n]._operands:
                owner = id(operand.owner)
                if owner in by_id and owner not in live:
                    work.append(owner)
    if single and len(live) == len(ops):
        return False
    live_set = LiveSet(changed=False, _live_ops={op for op in ops if id(op) in live})
    live_set.delete_dead(region, listener)
    return live_set.changed


@dataclass(frozen=True)
class _Class:
    """What the walk asks of an op's class."""

    dead_if_unused: bool | None
    """`would_be_trivially_dead` of every op of the class, when the class decides it
    (`ClassTraits.dead_if_unused`)"""
    folds: bool
    """`has_trait(HasFolder, value_if_unregistered=False) and not
    has_trait(ConstantLike, value_if_unregistered=True)`"""
    canonicalizes: bool
    """`get_traits_of_type(HasCanonicalizationPatternsTrait)` is not empty"""
    generic_binary: bool
    """Folded and canonicalized by the generic integer binary folder and patterns only
    (`tileir.passes.quiet_binaries`)"""


class _Classes(dict[type[Operation], _Class]):
    def __missing__(self, cls: type[Operation]) -> _Class:
        info = self[cls] = _Class(
            ClassTraits.of(cls).dead_if_unused,
            cls.has_trait(HasFolder, value_if_unregistered=False)
            and not cls.has_trait(ConstantLike, value_if_unregistered=True),
            bool(cls.get_traits_of_type(HasCanonicalizationPatternsTrait)),
            generic_binary(cls),
        )
        return info


@dataclass(eq=False, repr=False)
class _Applier(GreedyRewritePatternApplier):
    """xDSL's `GreedyRewritePatternApplier` of `CanonicalizePass` (its one pattern is
    `CanonicalizationRewritePattern`), with the class questions answered from
    `classes`, and whether an op without uses is dead (`would_be_trivially_dead`) by
    `KnownEffects.would_be_dead_soon`, which stops at the first effect that decides
    it (a fresh one each time: the IR changes between two ops)."""

    classes: _Classes = field(default_factory=_Classes, kw_only=True)
    quiet: QuietBinaries = field(default_factory=QuietBinaries, kw_only=True)
    """(Used only when the one pattern is `CanonicalizationRewritePattern`, as in
    `canonicalize`: the verdicts it keeps are those of the generic folder and patterns.)"""

    def __post_init__(self) -> None:
        patterns = self.rewrite_patterns
        self._remember = len(patterns) == 1 and type(patterns[0]) is CanonicalizationRewritePattern

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        # xDSL 0.75's `GreedyRewritePatternApplier.match_and_rewrite`, line for line,
        # but for an integer binary op on which the generic folder and patterns did
        # nothing before with what decides it (`QuietBinaries`): it is left as it is.
        info = self.classes[type(op)]
        if self.dce_enabled and results_unused(op):  # `is_trivially_dead`
            dead = info.dead_if_unused
            if dead is None:
                dead = KnownEffects().would_be_dead_soon(op)
            if dead:
                rewriter.erase(op)
                return
        key = self.quiet.key(op) if info.generic_binary and self._remember else None
        if key is None:
            self._fold_or_rewrite(op, rewriter, info)
        elif key not in self.quiet:
            self._fold_or_rewrite(op, rewriter, info)
            if not rewriter.has_done_action:
                self.quiet.remember(key)

    def _fold_or_rewrite(self, op: Operation, rewriter: PatternRewriter, info: _Class) -> None:
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


_MISSING = object()


class _IdWorklist(Worklist[Operation]):
    """xDSL's `Worklist` (a stack that holds an op at most once; a removed op leaves a
    hole), its index keyed by `id`: `Operation.__hash__` is Python code, called on
    every push, pop and removal. An `id` stays an op's while the op is in the index,
    since the stack holds the op."""

    def __bool__(self) -> bool:
        stack = self._stack
        while stack and stack[-1] is _MISSING:
            stack.pop()
        return bool(stack)

    def push(self, item: Operation) -> None:
        key = id(item)
        if key not in self._map:
            self._map[key] = len(self._stack)  # type: ignore[index]
            self._stack.append(item)

    def pop(self) -> Operation:
        stack = self._stack
        try:
            while (item := stack.pop()) is _MISSING:
                pass
        except IndexError:
            raise IndexError("pop from empty worklist") from None
        del self._map[id(item)]  # type: ignore[arg-type]
        return item  # type: ignore[return-value]

    def remove(self, item: Operation) -> None:
        index = self._map.pop(id(item), None)  # type: ignore[call-overload]
        if index is not None:
            self._stack[index] = _MISSING  # type: ignore[call-overload]

    def fill(self, ops: list[Operation]) -> None:
        """Push `ops` in order (as `push` one by one would)."""
        if self._stack:
            for op in ops:
                self.push(op)
            return
        self._stack = ops  # type: ignore[assignment]
        self._map = {id(op): i for i, op in enumerate(ops)}  # type: ignore[misc]


def _preorder(block: Block, out: list[Operation]) -> None:
    op = block._first_op
    while op is not None:
        out.append(op)
        for region in op.regions:
            for inner in region.blocks:
                _preorder(inner, out)
        op = op._next_op


@dataclass(eq=False, repr=False)
class _Walker(PatternRewriteWalker):
    """xDSL's `PatternRewriteWalker` with `_Applier` (default options: forward walk,
    ops before their regions, recursive), with the same worklist in the same order,
    but an op on which the applier would do nothing is popped without a call to it:
    one whose class has no folder and no canonicalization patterns, and that the
    applier would not erase as dead, because a result is used or no op of its class
    is ever dead (a terminator, a symbol, unknown effects), checked when the op is
    popped, as the applier does."""

    pattern: _Applier
    _worklist: Worklist = field(default_factory=_IdWorklist, init=False)

    def _populate_worklist(self, op: Operation | Region | Block) -> None:
        # xDSL's pushes `op.walk(reverse=True, region_first=True)`: the pre-order,
        # last op first.
        if not isinstance(op, Region):
            return super()._populate_worklist(op)
        ops: list[Operation] = []
        for block in op.blocks:
            _preorder(block, ops)
        ops.reverse()
        self._worklist.fill(ops)  # type: ignore[attr-defined]

    def _process_worklist(self, listener: PatternRewriterListener) -> bool:
        # xDSL 0.75's `PatternRewriteWalker._process_worklist`, with the skip above.
        worklist = self._worklist
        applier = self.pattern
        classes = applier.classes
        done = False
        rewriter: PatternRewriter | None = None
        while worklist:
            op = worklist.pop()
            info = classes[type(op)]
            if not info.folds and not info.canonicalizes:
                if info.dead_if_unused is False or not results_unused(op):
                    continue
            if rewriter is None:
                rewriter = PatternRewriter(op)
                rewriter.extend_from_listener(listener)
            rewriter.has_done_action = False
            rewriter.current_operation = op
            rewriter.insertion_point = InsertPoint.before(op)
            rewriter.name_hint = None
            try:
                applier.match_and_rewrite(op, rewriter)
            except Exception as err:
                op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
            done |= rewriter.has_done_action
        return done


class TileirCanonicalizePass(CanonicalizePass):
    """xDSL's `canonicalize` (same name, same result), faster."""

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # xDSL 0.75's `CanonicalizePass.apply`, with this module's walker, applier and
        # `region_dce`.
        pattern = _Applier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
        _Walker(pattern, post_walk_func=region_dce).rewrite_module(op)
