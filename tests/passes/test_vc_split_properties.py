"""Property tests of vc-split, semantic-labels and inplace-reshape on random programs.

For every generated program: each pass alone, and the three in sequence, keep the numpy
back end's outputs bit-identical (translation validation by `tileir.testing.check_pass`,
which also re-verifies and round-trips the module after each pass), and running the
pass (or the sequence) a second time changes nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileir.dialect import pto
from tileir.ir import print_module
from tileir.passes.inplace_reshape import InplaceReshapePass
from tileir.passes.semantic_labels import SemanticLabelsPass, check_labels
from tileir.passes.stages import is_container, op_unit
from tileir.passes.vc_split import VCSplitPass
from tileir.testing import check_pass, check_round_trip, modules

PIPELINES = {
    "vc-split": [VCSplitPass()],
    "semantic-labels": [SemanticLabelsPass()],
    "inplace-reshape": [InplaceReshapePass()],
    "all three": [VCSplitPass(), SemanticLabelsPass(), InplaceReshapePass()],
}


def _second_run_is_noop(passes, module) -> None:
    from tileir.ir import make_context

    text = print_module(module)
    ctx = make_context()
    for p in passes:
        p.apply(ctx, module)
    assert print_module(module) == text, "a second run changed the module"


@pytest.mark.parametrize("name", list(PIPELINES))
@given(module=modules(), seed=st.integers(0, 1000))
def test_passes_keep_meaning_and_are_idempotent(name, module, seed) -> None:
    passes = PIPELINES[name]
    # Round trips are the costly part of the check: for the sequence, check the text
    # once at the end rather than after each pass.
    single = len(passes) == 1
    after = check_pass(passes, module, n_inputs=2, seed=seed, round_trip=single)
    if not single:
        check_round_trip(after)
    _second_run_is_noop(passes, after)


@given(module=modules(templates=["cube"], max_ops=6))
def test_no_tile_crosses_units_without_a_transfer(module) -> None:
    after = check_pass([VCSplitPass(), SemanticLabelsPass()], module, n_inputs=1)
    for op in after.walk():
        if isinstance(op, pto.StageOp):
            assert op.label is not None
            for inner in op.body.block.ops:
                unit = op_unit(inner)
                # Every op with a unit sits in a stage of that unit.
                assert unit in (None, op.unit.data), (inner.name, op.unit.data)
        elif not is_container(op) and op_unit(op) is not None:
            parent = op.parent_op()
            assert isinstance(parent, pto.StageOp), f"{op.name} outside every stage"
    assert check_labels(after) == []


@given(
    module=modules(
        templates=["block", "rows"], steps=["unary", "reshape", "scalar", "cast"], max_ops=6
    )
)
def test_inplace_reshape_on_reshape_heavy_programs(module) -> None:
    """Programs made mostly of reshapes, so that some of them can be marked."""
    passes = [InplaceReshapePass()]
    after = check_pass(passes, module, n_inputs=2)
    _second_run_is_noop(passes, after)
