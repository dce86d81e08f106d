"""A differential test of the numpy back end on generated programs: running loops as
whole-array numpy operations (`vectorize=True`) must give exactly what running them
iteration by iteration gives."""

from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import run
from tileir.testing import compare_outputs, inputs_for, modules


@given(data=st.data())
def test_batched_loops_equal_iteration_by_iteration(data):
    module = data.draw(modules(templates=["rows", "accumulate", "softmax", "cube"]))
    inputs = data.draw(inputs_for(module))
    batched = run(module, inputs, vectorize=True)
    stepped = run(module, inputs, vectorize=False)
    diff = compare_outputs(stepped, batched)
    assert diff is None, diff.message
