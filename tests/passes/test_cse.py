"""tileir's `cse` is xDSL's with a finer hash for operand-less region ops: it must leave
exactly what xDSL's `cse` leaves (the independent reference), stages included."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.traits import get_effects
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


# Region ops whose effects include allocations, of values inside them or not, beside
# reads, writes and settings (unknown effects).
WORKSPACES = """
pto.kernel @k(%x: memref<16x64xf32>, %out: memref<16x64xf32>) {
  %c1 = arith.constant 1 : index
  %w = pto.tensor "w" : memref<8x64xf32>
  pto.loop %i = %c1 to %c1 step %c1 {
    pto.stage vector {
      %a = pto.tensor "a" : memref<8x64xf32>
      %t = pto.view %a[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
      pto.yield
    }
    %s = pto.stage vector {
      %a = pto.tensor "b" : memref<8x64xf32>
      pto.yield %a : memref<8x64xf32>
    } -> memref<8x64xf32>
    pto.stage vector {
      %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
      pto.assemble %t into %w[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
      pto.yield
    }
    pto.stage vector {
      pto.set_vec_tile_shapes [8, 64]
      %a = pto.tensor "c" : memref<8x64xf32>
      pto.yield
    }
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


# Index arithmetic with repeats whose operands only become equal once an earlier repeat
# is replaced (`%b2 = %b1 * 2` after `%b1` turned into `%a1`), in nested loops: the cases
# where a hash kept from before an op's operands changed would make tileir's cse differ
# from xDSL's. Each value is written to memory at the end of its scope, so that none is
# dead (a dead op is erased, not compared).
_ARITH = ("arith.addi", "arith.muli", "arith.subi")
_WRITE = (
    "%t{k} = pto.view %x[%v{k}, 0] : memref<64x8xf32> -> tensor<1x8xf32>\n"
    "pto.assemble %t{k} into %out[%v{k}, 0] : tensor<1x8xf32>, memref<64x8xf32>"
)


@st.composite
def _index_programs(draw: st.DrawFn) -> str:
    lines = ["%v0 = arith.constant 3 : index", "%v1 = arith.constant 3 : index"]
    scopes: list[list[int]] = [[0, 1]]
    count = 2

    def close() -> None:
        lines.extend(_WRITE.format(k=k) for k in scopes.pop() if k > 1)

    for _ in range(draw(st.integers(4, 30))):
        choice = draw(st.integers(0, 7))
        if choice == 0 and len(scopes) < 3:
            lines.append(f'pto.loop %i{len(lines)} = %v0 to %v1 step %v1 name "l" {{')
            scopes.append([])
        elif choice == 1 and len(scopes) > 1:
            close()
            lines.append("}")
        else:
            visible = [k for scope in scopes for k in scope]
            a, b = draw(st.sampled_from(visible)), draw(st.sampled_from(visible))
            lines.append(f"%v{count} = {draw(st.sampled_from(_ARITH))} %v{a}, %v{b} : index")
            scopes[-1].append(count)
            count += 1
    while len(scopes) > 1:
        close()
        lines.append("}")
    close()
    head = "pto.kernel @k(%x: memref<64x8xf32>, %out: memref<64x8xf32>) {"
    return "\n".join([head, *lines, "}"]) + "\n"


@given(_index_programs())
def test_cascading_repeats_as_xdsl(text):
    ours, xdsls = _both(text)
    assert ours == xdsls


def _check_kept_effects(module) -> None:
    from xdsl.ir import Operation
    from xdsl.transforms.dead_code_elimination import (
        is_trivially_dead,
        would_be_trivially_dead,
    )

    from tileir.passes.known_effects import KnownEffects

    ops: list[Operation] = list(module.walk())
    for order in (list(reversed(ops)), ops):
        known = KnownEffects()
        for op in order:
            assert known.of(op) == get_effects(op), op.name
            assert known.would_be_trivially_dead(op) == would_be_trivially_dead(op)
            assert known.would_be_dead_soon(op) == would_be_trivially_dead(op), op.name
            assert known.is_trivially_dead(op) == is_trivially_dead(op)


@pytest.mark.parametrize("seed", SEED_KERNELS[:6], ids=[k.name for k in SEED_KERNELS[:6]])
def test_kept_effects_are_xdsls(seed):
    """The kept effects of an op (a region op's from its children's kept ones) are
    what xDSL's `get_effects` finds, and so are the dead-op checks made from them, for every op of a seed kernel after `default` and
    of `STAGES` (stages that read and write memory), in the order the driver visits
    them (children first) and from the outermost op down."""
    from tileir.passes import apply_pipeline

    module = load_source(seed.path.read_text(), str(seed.path))
    apply_pipeline(module, "default{unroll-factors=4,2,1}")
    _check_kept_effects(module)
    stages = parse_module(STAGES)
    _check_kept_effects(stages)
    _check_kept_effects(parse_module(WORKSPACES))
    # (the stages of STAGES have known effects: a read, a write)
    assert all(get_effects(op) for op in stages.walk() if op.name == "pto.stage")


# Pure ops whose attributes and result types are equal but separate objects (merged),
# or differ only where tileir's cheaper hash does not look (a dense array's element
# type under the same bytes, a tensor type's element type or encoding under the same
# shape): these must stay apart, as in xDSL's cse.
HASHED_APART = """
func.func @f() -> (i32, i32, i32, tensor<8x64xf32>, tensor<8x64xf16>,
                   tensor<8x64xf32, "enc">, tensor<8x64xf32>, tensor<8x64xf32>,
                   tensor<8x64xf32>) {
  %a = "test.pureop"() {v = array<i32: 1, 0>} : () -> i32
  %b = "test.pureop"() {v = array<i64: 1>} : () -> i32
  %c = "test.pureop"() {v = array<i32: 1, 0>} : () -> i32
  %d = "test.pureop"() : () -> tensor<8x64xf32>
  %e = "test.pureop"() : () -> tensor<8x64xf16>
  %f = "test.pureop"() : () -> tensor<8x64xf32, "enc">
  %g = "test.pureop"() : () -> tensor<8x64xf32>
  %h = "test.pureop"() {w = array<i64: 3>} : () -> tensor<8x64xf32>
  %i = "test.pureop"() {w = array<i64: 3>} : () -> tensor<8x64xf32>
  func.return %a, %b, %c, %d, %e, %f, %g, %h, %i : i32, i32, i32, tensor<8x64xf32>,
    tensor<8x64xf16>, tensor<8x64xf32, "enc">, tensor<8x64xf32>, tensor<8x64xf32>,
    tensor<8x64xf32>
}
"""


def test_equal_attributes_merge_and_unequal_ones_stay_as_in_xdsl():
    from xdsl.dialects.test import Test

    ctx = make_context()
    ctx.load_dialect(Test)
    ours, xdsls = parse_module(HASHED_APART, ctx=ctx), parse_module(HASHED_APART, ctx=ctx)
    RegionAwareCSE().apply(ctx, ours)
    CommonSubexpressionElimination().apply(ctx, xdsls)
    assert str(ours) == str(xdsls)
    # By hand: %c repeats %a, %g repeats %d, %i repeats %h.
    assert str(ours).count('"test.pureop"') == 9 - 3


def test_attribute_hash_is_equalitys():
    """Equal attributes (separate objects: each module parsed on its own) hash alike,
    for every attribute and result type of the seed kernels after `default`."""
    from tileir.passes import apply_pipeline
    from tileir.passes.cse import _attribute_hash

    def attributes(module):
        for op in module.walk():
            yield from op.attributes.values()
            yield from op.properties.values()
            yield from (r.type for r in op.results)

    for seed in SEED_KERNELS:
        text = str(load_source(seed.path.read_text(), str(seed.path)))
        a, b = parse_module(text), parse_module(text)
        for module in (a, b):
            apply_pipeline(module, "default{unroll-factors=4,2,1}")
        for x, y in zip(attributes(a), attributes(b), strict=True):
            assert x == y
            assert _attribute_hash(x) == _attribute_hash(y), x
