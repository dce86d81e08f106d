"""`set-unroll-list`: only the unroll list changes (the loop stays a loop, numpy outputs
bit for bit the same on random programs), normalised as PyPTO does."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontends.kernels import kernel_by_name
from frontends.pypto import load_file
from tileir.dialect import pto
from tileir.passes import apply_pipeline
from tileir.testing import check_pass, modules


def test_lists_are_normalised_and_nothing_else_changes() -> None:
    seed = kernel_by_name("rms_norm_rope")
    before = load_file(seed.path, kernel=seed.kernel)
    after = apply_pipeline(before.clone(), "set-unroll-list{factors=4,2}")
    loops = [o for o in after.walk() if isinstance(o, pto.LoopOp)]
    assert [lp.factors for lp in loops] == [[4, 2, 1]]
    # Put the old list back by hand: the modules are equal again.
    loops[0].properties["unroll_list"] = next(
        o for o in before.walk() if isinstance(o, pto.LoopOp)
    ).properties["unroll_list"]
    assert str(after) == str(before)


def test_duplicate_factors_are_an_error() -> None:
    module = load_file(kernel_by_name("mean").path)
    with pytest.raises(ValueError, match="duplicate factors"):
        apply_pipeline(module, "set-unroll-list{factors=2,2}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.sampled_from([(1,), (2,), (4, 2), (3,)]))
def test_any_program_keeps_its_meaning(module, factors) -> None:
    check_pass(f"set-unroll-list{{factors={','.join(map(str, factors))}}}", module, n_inputs=1)
