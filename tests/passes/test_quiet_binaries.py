"""`tileir.passes.quiet_binaries`: the canonicalize applier skips an integer `arith` op
on which xDSL's folder and patterns did nothing before with what decides it. Checked
against xDSL's own applier, op by op, on random runs of such ops (constants repeated,
units and zeros among them, constants on either side, operands from outside)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import arith, test
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern

from tileir.ir import make_context
from tileir.passes.canonicalize import _Applier
from tileir.passes.quiet_binaries import generic_binary

CLASSES = [
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.DivSIOp,
    arith.DivUIOp,
    arith.FloorDivSIOp,
    arith.CeilDivSIOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.ShLIOp,
    arith.RemSIOp,
    arith.MaxSIOp,
]
TYPES = [IndexType(), IntegerType(32), IntegerType(8)]
VALUES = [-1, 0, 1, 2, 3, 8, 127]
# an operand: a block argument, a non-constant op's result, or a constant (by value);
# on the left mostly no constant (the case the memo serves)
LHS = st.sampled_from(["arg", "sum", "arg", "sum", "arg", "sum", *VALUES[:3]])
RHS = st.sampled_from(["arg", "sum", *VALUES])


def _block(
    t: object, spec: list[tuple[type[Operation], object, object]]
) -> tuple[Block, list[Operation]]:
    """The ops of `spec` (class, lhs, rhs) in a block with two arguments of type `t`, each
    with its own constant ops (new attribute objects), every result used by a sink."""
    block = Block(arg_types=[t, t])
    a, b = block.args
    total = arith.AddiOp(a, b)
    block.add_op(total)
    targets: list[Operation] = []

    def operand(kind: object) -> object:
        if kind == "arg":
            return a
        if kind == "sum":
            return total.result
        const = arith.ConstantOp(IntegerAttr(kind, t))  # type: ignore[arg-type]
        block.add_op(const)
        return const.result

    for cls, lhs, rhs in spec:
        op = cls(operand(lhs), operand(rhs))  # type: ignore[call-arg]
        block.add_op(op)
        targets.append(op)
    block.add_op(test.TestOp(operands=[op.results[0] for op in targets]))
    return block, targets


@given(
    st.sampled_from(TYPES), st.lists(st.sampled_from(CLASSES), min_size=1, max_size=3), st.data()
)
def test_ops_left_alone_as_xdsls_applier_leaves_them(t, classes, data) -> None:
    """Each op gets the same answer (and the same IR after it) from tileir's applier,
    which remembers, as from xDSL's; a few classes per run, so that ops with the same
    class and different constants follow each other."""
    spec = data.draw(
        st.lists(st.tuples(st.sampled_from(classes), LHS, RHS), min_size=1, max_size=12)
    )
    ctx = make_context()
    ours = _Applier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
    theirs = GreedyRewritePatternApplier(
        [CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True
    )
    mine, mine_ops = _block(t, spec)
    reference, reference_ops = _block(t, spec)
    for op_a, op_b in zip(mine_ops, reference_ops):
        a, b = PatternRewriter(op_a), PatternRewriter(op_b)
        ours.match_and_rewrite(op_a, a)
        theirs.match_and_rewrite(op_b, b)
        assert a.has_done_action == b.has_done_action, (str(op_b), spec)
        assert [str(o) for o in mine.ops] == [str(o) for o in reference.ops]


def test_the_memo_is_used() -> None:
    """The classes of `arith`'s integer binary ops with the generic folder and patterns
    are the ones remembered; a second `muli %x, %c8` is skipped without a call of the
    folder (which would fail here)."""
    assert all(generic_binary(cls) for cls in CLASSES)
    assert not generic_binary(arith.ConstantOp) and not generic_binary(arith.CmpiOp)
    ctx = make_context()
    applier = _Applier([CanonicalizationRewritePattern()], ctx=ctx, folding_enabled=True)
    block, (first, second) = _block(IndexType(), [(arith.MuliOp, "arg", 8)] * 2)
    applier.match_and_rewrite(first, PatternRewriter(first))
    applier.ctx = None  # (folding now raises: a second fold would be seen)
    rewriter = PatternRewriter(second)
    applier.match_and_rewrite(second, rewriter)
    assert not rewriter.has_done_action
