"""tileir's `canonicalize` (the step of `default`) is xDSL's with a faster region DCE and
class questions asked once per class: it must leave exactly what xDSL's
`CanonicalizePass` leaves (the independent reference), on the seed kernels, on random
programs, and on random programs with dead ops planted in them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.dead_code_elimination import region_dce as xdsl_region_dce

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_source
from tileir.dialect import pto
from tileir.ir import make_context, print_module
from tileir.passes import parse_pipeline
from tileir.passes.canonicalize import TileirCanonicalizePass, region_dce
from tileir.testing import modules

PREPARE = (
    "",
    "vc-split,semantic-labels",
    "vc-split,semantic-labels,loop-unroll{factors=4},stitch{max-functions=2}",
    "loop-unroll{factors=3}",
)


def _prepared(module: ModuleOp, spec: str) -> ModuleOp:
    ctx = make_context()
    for p in parse_pipeline(spec) if spec else []:
        p.apply(ctx, module)
    return module


def _both(module: ModuleOp) -> tuple[str, str]:
    ctx = make_context()
    ours, xdsls = module.clone(), module.clone()
    TileirCanonicalizePass().apply(ctx, ours)
    CanonicalizePass().apply(ctx, xdsls)
    return print_module(ours), print_module(xdsls)


@pytest.mark.parametrize("spec", PREPARE)
@pytest.mark.parametrize("seed", SEED_KERNELS, ids=[k.name for k in SEED_KERNELS])
def test_seed_kernels_as_xdsl(seed, spec):
    module = _prepared(load_source(seed.path.read_text(), str(seed.path)), spec)
    ours, xdsls = _both(module)
    assert ours == xdsls


@given(modules(max_kernels=2), st.sampled_from(PREPARE))
def test_random_programs_as_xdsl(module, spec):
    ours, xdsls = _both(_prepared(module, spec))
    assert ours == xdsls


@given(modules(max_kernels=2), st.sampled_from(PREPARE), st.data())
def test_planted_dead_ops_as_xdsl(module, spec, data):
    """Erasing some of the ops that write or set something (`pto.assemble`, the
    settings) leaves chains of dead ops behind, in loops and stages; both passes, and
    both region DCEs alone, must erase the same ones."""
    module = _prepared(module, spec)
    effectful = [
        op
        for op in module.walk()
        if isinstance(op, pto.AssembleOp | pto.SetVecTileShapesOp | pto.SetSemanticLabelOp)
    ]
    if effectful:
        drop = data.draw(st.lists(st.sampled_from(effectful), unique=True, max_size=6))
        for op in drop:
            op.detach()
            op.erase()
    ours, xdsls = _both(module)
    assert ours == xdsls
    a, b = module.clone(), module.clone()
    changed_a = region_dce(a.body)
    changed_b = xdsl_region_dce(b.body)
    assert (print_module(a), changed_a) == (print_module(b), changed_b)


def test_dead_chain_in_a_stage_goes():
    """A chain that only a dropped write used is erased, stage by stage, as by xDSL; a
    stage left with only its terminator goes too, and writes stay."""
    text = """
pto.kernel @k(%x: memref<16x64xf32>, %out: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 {
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
    pto.stage vector {
      pto.assemble %b into %out[8, 0] : tensor<8x64xf32>, memref<16x64xf32>
      pto.yield
    }
  }
}
"""
    from tileir.ir import parse_module

    module = parse_module(text)
    ours, xdsls = _both(module)
    assert ours == xdsls
    # By hand: %a is used by nothing (its stage reads and computes only): gone; %b is
    # written: stays.
    assert ours.count("pto.stage vector") == 2
    assert "pto.view %x[0, 0]" not in ours and "pto.view %x[8, 0]" in ours
