"""`set-unroll-list`: choose the `unroll_list` PyPTO compiles a loop with.

PyPTO compiles a `pto.loop` with `unroll_list=[f1, ..., 1]` into one graph per factor and
splits each graph into tasks that run on the AI cores. The list is a pure scheduling
choice, and the SIM cost model is sensitive to it: a RoPE over 64 rows in 8 blocks costs
13.5 us with `[8, 4, 2, 1]` (one graph of 8 blocks: PyPTO adds HUB synchronisation tasks
around it, about 8 us) and 4.7 us with `[2, 1]` (four graphs of 2 blocks, no HUB, the 8
tasks still on 8 cores). This pass only rewrites the attribute; the loop stays a loop
(unlike `loop-unroll`, which writes the cascade out in the IR), so what the kernel
computes does not change on any back end.

Contract: every selected `pto.loop` gets `unroll [factors]`, normalised as PyPTO does
(descending, 1 added). `pto.loop_unroll` loops are left alone (their body sees the chunk
length). Options: `factors` (default 1: `[1]`), `loops` (names, default all).

```mlir
// before
pto.loop %i = %c0 to %c8 step %c1 name "rows" unroll [8, 4, 2, 1] { ... }
// after set-unroll-list{factors=2}
pto.loop %i = %c0 to %c8 step %c1 name "rows" unroll [2, 1] { ... }
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from tileir.dialect.pto import LoopOp, normalize_unroll_list


class SetUnrollList(RewritePattern):
    """Give one selected `pto.loop` the unroll list (once: a loop already holding it
    is not rewritten again)."""

    def __init__(self, factors: list[int], loops: tuple[str, ...] | None):
        self.factors, self.loops = factors, loops

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, LoopOp) or op.factors == self.factors:
            return
        if self.loops is not None and (op.loop_name is None or op.loop_name.data not in self.loops):
            return
        op.properties["unroll_list"] = DenseArrayBase.from_list(i64, self.factors)
        rewriter.has_done_action = True


@dataclass(frozen=True)
class SetUnrollListPass(ModulePass):
    """Set the unroll list of every selected `pto.loop` (see the module docstring)."""

    name = "set-unroll-list"

    factors: tuple[int, ...] = (1,)
    """The unroll list (normalised: descending, 1 added); default [1], no unrolling."""

    loops: tuple[str, ...] | None = None
    """Only loops with these names (default: all)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            factors = normalize_unroll_list(self.factors)
        except ValueError as e:
            raise ValueError(f"set-unroll-list: option factors: {e}") from None
        PatternRewriteWalker(
            SetUnrollList(factors, self.loops), apply_recursively=False
        ).rewrite_module(op)


__all__ = ["SetUnrollList", "SetUnrollListPass"]
