"""tileir's `cse` is xDSL's with a finer hash for operand-less region ops: it must leave
exactly what xDSL's `cse` leaves (the independent reference), stages included."""

from __future__ import annotations

import pytest
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_source
from tileir.ir import make_context, parse_module
from tileir.passes import parse_pipeline
from tileir.passes.cse import RegionAwareCSE

STAGES = """
pto.kernel @k(%x: memref<16x64xf32>, %out: memref<16x64xf32>) {
  %a = pto.stage vector {
    %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %b = pto.stage vector {
    %t = pto.view %x[8, 0] : memref<16x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %c = pto.stage vector {
    %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %d = pto.stage vector {
    %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
    %e = pto.rsqrt %t : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  pto.stage vector {
    pto.assemble %a into %out[0, 0] : tensor<8x64xf32>, memref<16x64xf32>
    pto.assemble %b into %out[8, 0] : tensor<8x64xf32>, memref<16x64xf32>
    pto.yield
  }
  %f = pto.stage vector {
    %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  pto.stage vector {
    pto.assemble %c into %out[0, 0] : tensor<8x64xf32>, memref<16x64xf32>
    pto.assemble %d into %out[8, 0] : tensor<8x64xf32>, memref<16x64xf32>
    pto.assemble %f into %out[0, 0] : tensor<8x64xf32>, memref<16x64xf32>
    pto.yield
  }
}
"""


def _both(text: str) -> tuple[str, str]:
    ctx = make_context()
    ours, xdsls = parse_module(text), parse_module(text)
    RegionAwareCSE().apply(ctx, ours)
    CommonSubexpressionElimination().apply(ctx, xdsls)
    return str(ours), str(xdsls)


def test_stages_merge_as_xdsl_merges_them():
    ours, xdsls = _both(STAGES)
    assert ours == xdsls
    # By hand: %c repeats %a (same view, same op; no write between) and goes; %b reads
    # another window, %d computes another op, %f follows a write to %out: all stay.
    stages = ours.count("pto.stage vector")
    assert stages == 7 - 1


@pytest.mark.parametrize("seed", SEED_KERNELS, ids=[k.name for k in SEED_KERNELS])
def test_seed_kernels_unrolled_and_stitched_as_xdsl(seed):
    ctx = make_context()
    module = load_source(seed.path.read_text(), str(seed.path))
    spec = "vc-split,semantic-labels,loop-unroll{factors=4},stitch{max-functions=2}"
    for p in parse_pipeline(spec):
        p.apply(ctx, module)
    ours, xdsls = module.clone(), module.clone()
    RegionAwareCSE().apply(ctx, ours)
    CommonSubexpressionElimination().apply(ctx, xdsls)
    assert str(ours) == str(xdsls)
