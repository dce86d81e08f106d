"""A differential test of the numpy back end on generated programs: running loops as
whole-array numpy operations (`vectorize=True`) must give exactly what running them
iteration by iteration gives."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import run
from tileir.ir import parse_module
from tileir.testing import check_pass, compare_outputs, inputs_for, modules

LOOPS = ["rows", "accumulate", "softmax", "cube"]


def _assert_batching_exact(module, inputs) -> None:
    batched = run(module, inputs, vectorize=True)
    stepped = run(module, inputs, vectorize=False)
    diff = compare_outputs(stepped, batched)
    assert diff is None, diff.message


@given(data=st.data())
def test_batched_loops_equal_iteration_by_iteration(data):
    module = data.draw(modules(templates=LOOPS))
    _assert_batching_exact(module, data.draw(inputs_for(module)))


@given(data=st.data())
def test_batched_loops_equal_iteration_by_iteration_after_the_default_pipeline(data):
    # The pipeline's output (stages, unrolled chunks, stitched groups) is IR that no
    # one writes by hand, and where the batcher once failed.
    module = check_pass("default", data.draw(modules(templates=LOOPS)), n_inputs=1)
    _assert_batching_exact(module, data.draw(inputs_for(module)))


# Found by the generator (the `default` pipeline on a generated program: after vc-split
# and canonicalize, a row loop's assemble offset is a `pto.stage` result); the batcher
# used to crash on it. Kept as a regression test.
STAGE_OFFSET = """
pto.kernel @k(%x: memref<?x4xf32>, %out: memref<?x4xf32>)
    attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.dim %x, %c0 : memref<?x4xf32>
  %n = arith.ceildivsi %s, %c2 : index
  pto.loop %i = %c0 to %n step %c1 name "rows" {
    %off, %t = pto.stage vector {
      %o = arith.muli %i, %c2 : index
      %left = arith.subi %s, %o : index
      %rows = arith.minsi %left, %c2 : index
      %t0 = pto.view %x[%o, 0] valid [%rows, 4] : memref<?x4xf32> -> tensor<2x4xf32>
      pto.yield %o, %t0 : index, tensor<2x4xf32>
    } -> index, tensor<2x4xf32>
    pto.stage vector {
      %r = pto.neg %t : tensor<2x4xf32>
      pto.assemble %r into %out[%off, 0] : tensor<2x4xf32>, memref<?x4xf32>
      pto.yield
    }
  }
}
"""


def test_batched_loop_with_offset_from_a_stage():
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    # 5 rows in tiles of 2 (the last holds 1): every row is negated
    out = run(parse_module(STAGE_OFFSET), {"x": x}, vectorize=True)["out"]
    assert np.array_equal(out, -x)
