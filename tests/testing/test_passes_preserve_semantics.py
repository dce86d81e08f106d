"""Every registered tileir pass, the default pipeline and xDSL's generic clean-ups keep
the meaning of generated programs (translation validation with `check_pass`)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileir.passes import get_all_passes
from tileir.testing import check_pass, inputs_for, modules

PIPELINES = sorted(get_all_passes()) + ["cse,canonicalize,dce"]


@pytest.mark.parametrize("pipeline", PIPELINES)
@given(data=st.data())
def test_pass_keeps_the_meaning_of_generated_programs(pipeline, data):
    module = data.draw(modules(), label="module")
    inputs = data.draw(inputs_for(module), label="inputs")
    check_pass(pipeline, module, inputs=inputs)
