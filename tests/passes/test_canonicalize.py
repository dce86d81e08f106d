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


# Programs built to break the walker's and the region DCE's shortcuts: index arithmetic
# that folds (and constants that become dead as it does), loops and result-less stages
# that are dead when the walk reaches them (only reads, or a workspace allocated and
# read inside: an allocation decides nothing alone) or stay (a write, a setting, with
# unknown effects), stages whose result is used or not, nested up to three deep.
_ARITH = ("arith.addi", "arith.muli", "arith.subi")


@st.composite
def _index_programs(draw: st.DrawFn) -> str:
    lines = ["%v0 = arith.constant 3 : index", "%v1 = arith.constant 1 : index"]
    lines.append('%v2 = pto.tensor "w" : memref<8x8xf32>')
    scopes: list[list[int]] = [[0, 1]]
    count = 3

    def fresh() -> int:
        nonlocal count
        count += 1
        return count - 1

    def visible() -> int:
        return draw(st.sampled_from([k for scope in scopes for k in scope]))

    def write(k: int) -> list[str]:
        n = fresh()
        return [
            f"%t{n} = pto.view %x[%v{k}, 0] : memref<64x8xf32> -> tensor<1x8xf32>",
            f"pto.assemble %t{n} into %out[%v{k}, 0] : tensor<1x8xf32>, memref<64x8xf32>",
        ]

    def stage() -> list[str]:
        n, k = fresh(), visible()
        kind = draw(st.sampled_from(("reads", "writes", "allocates", "workspace", "setting")))
        body = [f"%t{n} = pto.view %x[%v{k}, 0] : memref<64x8xf32> -> tensor<1x8xf32>"]
        if kind == "writes":
            body += [f"pto.assemble %t{n} into %out[%v{k}, 0] : tensor<1x8xf32>, memref<64x8xf32>"]
        elif kind == "allocates":
            body = [
                f'%a{n} = pto.tensor "a" : memref<8x8xf32>',
                f"%t{n} = pto.view %a{n}[0, 0] : memref<8x8xf32> -> tensor<1x8xf32>",
            ]
        elif kind == "workspace":
            body += [f"pto.assemble %t{n} into %v2[0, 0] : tensor<1x8xf32>, memref<8x8xf32>"]
        elif kind == "setting":
            body += ["pto.set_vec_tile_shapes [1, 8]"]
        body += [f"%e{n} = pto.exp %t{n} : tensor<1x8xf32>"]
        if draw(st.booleans()):
            return ["pto.stage vector {", *body, "pto.yield", "}"]
        lines = [f"%s{n} = pto.stage vector {{", *body, f"pto.yield %e{n} : tensor<1x8xf32>"]
        lines += ["} -> tensor<1x8xf32>"]
        if draw(st.booleans()):  # the result used by a write
            lines += [
                f"pto.assemble %s{n} into %out[%v{visible()}, 0] : "
                "tensor<1x8xf32>, memref<64x8xf32>"
            ]
        return lines

    def close() -> None:
        for k in scopes.pop():
            if k > 2 and draw(st.booleans()):  # (others are dead, unless used)
                lines.extend(write(k))

    for _ in range(draw(st.integers(4, 40))):
        choice = draw(st.integers(0, 9))
        if choice == 0 and len(scopes) < 4:
            n = fresh()
            lines.append(f"pto.loop %v{n} = %v{visible()} to %v{visible()} step %v1 {{")
            scopes.append([n])
        elif choice == 1 and len(scopes) > 1:
            close()
            lines.append("}")
        elif choice == 2:
            lines.extend(stage())
        elif choice == 3:
            n = fresh()
            lines.append(f"%v{n} = arith.constant {draw(st.integers(0, 4))} : index")
            scopes[-1].append(n)
        else:
            n, a, b = fresh(), visible(), visible()
            lines.append(f"%v{n} = {draw(st.sampled_from(_ARITH))} %v{a}, %v{b} : index")
            scopes[-1].append(n)
    while len(scopes) > 1:
        close()
        lines.append("}")
    close()
    head = "pto.kernel @k(%x: memref<64x8xf32>, %out: memref<64x8xf32>) {"
    return "\n".join([head, *lines, "}"]) + "\n"


def _rewrites(module: ModuleOp, ours: bool) -> list[tuple[str, ...]]:
    """The rewrites of a canonicalize run, in order: the op each one acted on (its name
    and result types) and each region DCE's answer."""
    from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
    from xdsl.transforms.canonicalize import CanonicalizationRewritePattern

    from tileir.passes.canonicalize import _Applier, _Walker

    done: list[tuple[str, ...]] = []

    def recording(cls):
        class Recording(cls):
            def match_and_rewrite(self, op, rewriter):
                what = (op.name, *(str(r.type) for r in op.results))
                super().match_and_rewrite(op, rewriter)
                if rewriter.has_done_action:
                    done.append(what)

        return Recording

    def dce(region, listener):
        changed = (region_dce if ours else xdsl_region_dce)(region, listener)
        done.append(("region_dce", str(changed)))
        return changed

    applier = recording(_Applier if ours else GreedyRewritePatternApplier)(
        [CanonicalizationRewritePattern()], ctx=make_context(), folding_enabled=True
    )
    (_Walker if ours else PatternRewriteWalker)(applier, post_walk_func=dce).rewrite_module(module)
    return done


@given(_index_programs())
def test_index_programs_as_xdsl(text):
    """The same output, from the same rewrites in the same order (the walker skips only
    ops on which xDSL's applier does nothing)."""
    from tileir.ir import parse_module

    ours, xdsls = _both(parse_module(text))
    assert ours == xdsls
    assert _rewrites(parse_module(text), True) == _rewrites(parse_module(text), False)
    a, b = parse_module(text), parse_module(text)
    assert (region_dce(a.body), print_module(a)) == (xdsl_region_dce(b.body), print_module(b))


def test_dead_region_ops_go_and_others_stay():
    """By hand: a loop of stages that only read, or allocate a workspace and read it,
    is dead when the walk reaches it; a stage that writes a workspace, one that sets a
    tile shape (unknown effects) and the loop holding them stay; the folded index
    arithmetic leaves one constant."""
    from tileir.ir import parse_module

    text = """
pto.kernel @k(%x: memref<64x8xf32>, %out: memref<64x8xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %w = pto.tensor "w" : memref<8x8xf32>
  pto.loop %i = %c1 to %c3 step %c1 {
    pto.stage vector {
      %a = pto.tensor "a" : memref<8x8xf32>
      %t = pto.view %a[0, 0] : memref<8x8xf32> -> tensor<1x8xf32>
      pto.yield
    }
    pto.stage vector {
      %t = pto.view %x[%i, 0] : memref<64x8xf32> -> tensor<1x8xf32>
      pto.yield
    }
  }
  pto.loop %j = %c1 to %c3 step %c1 {
    %two = arith.addi %c1, %c1 : index
    pto.stage vector {
      %t = pto.view %x[%two, 0] : memref<64x8xf32> -> tensor<1x8xf32>
      pto.assemble %t into %w[0, 0] : tensor<1x8xf32>, memref<8x8xf32>
      pto.yield
    }
    pto.stage vector {
      pto.set_vec_tile_shapes [1, 8]
      pto.yield
    }
  }
}
"""
    ours, xdsls = _both(parse_module(text))
    assert ours == xdsls
    assert ours.count("pto.loop") == 1 and "%i" not in ours
    assert ours.count("pto.stage") == 2 and '"a"' not in ours
    assert "arith.addi" not in ours and "arith.constant 2 : index" in ours


def test_unreachable_blocks_as_xdsl():
    """A region with a second block (unreachable, or empty): the region DCE's shortcut
    (nothing dead, nothing to erase) does not hold, xDSL's erases the blocks."""
    from tileir.ir import parse_module

    text = """
func.func @f(%a: index) -> index {
  func.return %a : index
^bb1:
  %d = arith.addi %a, %a : index
  func.return %d : index
^bb2:
}
"""
    a, b = parse_module(text), parse_module(text)
    assert (region_dce(a.body), print_module(a)) == (xdsl_region_dce(b.body), print_module(b))
    assert "^bb" not in print_module(a) and "arith.addi" not in print_module(a)
    ours, xdsls = _both(parse_module(text))
    assert ours == xdsls


@given(st.lists(st.tuples(st.sampled_from("push pop remove bool".split()), st.integers(0, 5))))
def test_worklist_as_xdsls(steps):
    """The walker's worklist (keyed by `id`) answers as xDSL's `Worklist`."""
    from xdsl.dialects.test import TestOp
    from xdsl.utils.worklist import Worklist

    from tileir.passes.canonicalize import _IdWorklist

    ops = [TestOp() for _ in range(6)]
    ours, xdsls = _IdWorklist(), Worklist()
    for step, k in steps:
        if step == "bool":
            assert bool(ours) == bool(xdsls)
        elif step == "push":
            ours.push(ops[k])
            xdsls.push(ops[k])
        elif step == "remove":
            ours.remove(ops[k])
            xdsls.remove(ops[k])
        elif xdsls:
            assert ours.pop() is xdsls.pop()
        else:
            assert not ours
            with pytest.raises(IndexError):
                ours.pop()
    while xdsls:
        assert ours.pop() is xdsls.pop()
    assert not ours


@pytest.mark.parametrize("seed", SEED_KERNELS[:4], ids=[k.name for k in SEED_KERNELS[:4]])
def test_walk_order_as_xdsls(seed):
    """The walker fills its worklist in xDSL's order (and pushes one by one, skipping
    the ops already in it, when it is not empty)."""
    from xdsl.pattern_rewriter import PatternRewriteWalker

    from tileir.passes.canonicalize import _Applier, _Walker

    module = _prepared(load_source(seed.path.read_text(), str(seed.path)), PREPARE[2])
    ours = _Walker(_Applier([]))
    xdsls = PatternRewriteWalker(_Applier([]))
    ours._populate_worklist(module.body)
    xdsls._populate_worklist(module.body)
    assert [id(op) for op in ours._worklist._stack] == [id(op) for op in xdsls._worklist._stack]
    some = [op for op in module.walk()][::7]
    ours, xdsls = _Walker(_Applier([])), PatternRewriteWalker(_Applier([]))
    for walker in (ours, xdsls):
        for op in some:
            walker._worklist.push(op)
        walker._populate_worklist(module.body)
    assert [id(op) for op in ours._worklist._stack] == [id(op) for op in xdsls._worklist._stack]
