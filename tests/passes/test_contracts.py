"""Pass contracts (required / established IR properties), verification once or after
every pass, and the limits that keep passes from unbounded work (issues 13, 17, 18)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, f32
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from tileir import parse_module
from tileir.diagnostics import TileirError, verify_located
from tileir.dialect import pto
from tileir.ir import make_context
from tileir.passes import apply_pipeline, get_all_passes
from tileir.passes.contracts import PROPERTIES, check_establishes, check_requires
from tileir.passes.loop_unroll import LoopUnrollPass
from tileir.passes.pipeline import run_passes
from tileir.passes.semantic_labels import SemanticLabelsPass
from tileir.passes.vc_split import VCSplitPass

PLAIN = """\
pto.kernel @k(%x: memref<4x8xf32>, %o: memref<4x8xf32>) {
  %t = pto.view %x[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
  %e = pto.exp %t : tensor<4x8xf32>
  pto.assemble %e into %o[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
}
"""

LOOP = """\
pto.kernel @k(%x: memref<13x8xf32>, %o: memref<13x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [4, 1] {
    %t = pto.view %x[%i, 0] : memref<13x8xf32> -> tensor<1x8xf32>
    %e = pto.exp %t : tensor<1x8xf32>
    pto.assemble %e into %o[%i, 0] : tensor<1x8xf32>, memref<13x8xf32>
  }
}
"""


def opt(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --------------------------------------------------------------------------- contracts


def test_every_declared_property_is_known_and_names_a_registered_provider() -> None:
    passes = {name: factory() for name, factory in get_all_passes().items()}
    for cls in passes.values():
        p = cls()
        for name in (*getattr(p, "requires", ()), *getattr(p, "establishes", ())):
            assert name in PROPERTIES, (cls.name, name)
    providers = {p.provider for p in PROPERTIES.values()} - {"pypto-legalize"}
    assert providers <= set(passes), providers  # pypto-legalize: written on another branch


def test_semantic_labels_on_unstaged_ir_says_to_run_vc_split_first() -> None:
    with pytest.raises(TileirError) as info:
        apply_pipeline(parse_module(PLAIN), "semantic-labels")
    message = str(info.value)
    assert "pass 'semantic-labels' requires staged IR" in message
    assert "pass 'vc-split' establishes" in message
    assert "-p vc-split,semantic-labels" in message


def test_cli_semantic_labels_on_unstaged_ir() -> None:
    result = opt("-p", "semantic-labels", stdin=PLAIN)
    assert result.returncode == 1
    assert "run `-p vc-split,semantic-labels`" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_requirements_hold_after_their_providers() -> None:
    module = apply_pipeline(parse_module(PLAIN), "vc-split,semantic-labels")
    stages = [op for op in module.walk() if isinstance(op, pto.StageOp)]
    assert stages and all(s.label is not None for s in stages)
    # The properties are read from the IR: a printed and re-read module still has them.
    again = parse_module(str(module))
    assert PROPERTIES["staged"].holds(again) and PROPERTIES["labelled"].holds(again)
    check_requires(SemanticLabelsPass(), again)


def test_a_hand_written_stage_is_staged() -> None:
    text = PLAIN.replace(
        "  %t = pto.view", '  pto.stage vector label "mine" {\n  %t = pto.view'
    ).replace("memref<4x8xf32>\n}", "memref<4x8xf32>\n  pto.yield\n  }\n}")
    module = parse_module(text)
    assert PROPERTIES["labelled"].holds(module)
    apply_pipeline(module, "semantic-labels")


def test_stitch_requires_unrolled_ir() -> None:
    with pytest.raises(TileirError, match="pass 'stitch' requires unrolled IR.*'loop-unroll'"):
        apply_pipeline(parse_module(LOOP), "stitch")
    module = apply_pipeline(parse_module(LOOP), "loop-unroll,stitch")
    assert any(isinstance(op, pto.StitchOp) for op in module.walk())


def test_a_loop_left_to_pypto_counts_as_unrolled() -> None:
    # Dynamic bounds plus is_loop_begin: the default pipeline leaves it (PyPTO unrolls).
    text = """\
pto.kernel @k(%x: memref<?x8xf32>) attributes {dynamic_dims = {x = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  pto.loop %i = %c0 to %n step %c1 unroll [4, 1] {
    %b = pto.is_loop_begin %i
  }
}
"""
    module = apply_pipeline(parse_module(text), "default", verify_each=True)
    assert PROPERTIES["unrolled"].holds(module)
    assert not PROPERTIES["unrolled"].holds(parse_module(LOOP))


@dataclass(frozen=True)
class _ClaimsStaged(LoopUnrollPass):
    """A pass that claims `staged` without staging anything (a broken contract)."""

    name = "claims-staged"
    establishes: ClassVar[tuple[str, ...]] = ("staged",)


def test_verify_each_checks_what_a_pass_establishes() -> None:
    module = parse_module(PLAIN)
    _ClaimsStaged().apply(make_context(), module)
    with pytest.raises(TileirError, match="internal: pass 'claims-staged' should establish"):
        check_establishes(_ClaimsStaged(), module)
    VCSplitPass().apply(make_context(), module)
    check_establishes(VCSplitPass(), module)


# --------------------------------------------------------------------------- verify once


@dataclass(frozen=True)
class _BreakStep(ModulePass):
    """Sets a step of 0, which the verifier refuses."""

    name = "break-step"

    def apply(self, ctx, op) -> None:
        for loop in op.walk():
            if isinstance(loop, pto.LoopOp):
                zero = arith.ConstantOp.from_int_and_width(0, IndexType())
                loop.parent_block().insert_op_before(zero, loop)
                loop.operands = [loop.lower_bound, loop.upper_bound, zero.result]


def test_verify_once_or_after_each_pass() -> None:
    steps = [_BreakStep(), CommonSubexpressionElimination()]
    with pytest.raises(TileirError) as once:
        run_passes(make_context(), parse_module(LOOP), steps)
    assert "after the pipeline 'break-step,cse'" in str(once.value)
    assert "--verify-each" in str(once.value)
    with pytest.raises(TileirError) as each:
        run_passes(make_context(), parse_module(LOOP), steps, verify_each=True)
    assert "step 0 must be positive (after pass 'break-step')" in str(each.value)
    assert str(each.value).startswith("<string>:5:3: error: 'pto.loop'")


def test_cli_verify_each_flag() -> None:
    for flags in ((), ("--verify-each",)):
        result = opt("-p", "default", *flags, stdin=LOOP)
        assert result.returncode == 0, result.stderr
        assert "rows_LoopUnroll4" in result.stdout


# --------------------------------------------------------------------------- limits


DYNAMIC_HUGE_UNROLL = """\
pto.kernel @k(%x: memref<?x8xf32>, %o: memref<?x8xf32>)
    attributes {dynamic_dims = {x = ["S"], o = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  pto.loop %i = %c0 to %n step %c1 name "rows" unroll [FACTOR, 1] {
    %t = pto.view %x[%i, 0] : memref<?x8xf32> -> tensor<1x8xf32>
    %e = pto.exp %t : tensor<1x8xf32>
    pto.assemble %e into %o[%i, 0] : tensor<1x8xf32>, memref<?x8xf32>
  }
}
"""


@pytest.mark.parametrize("factor", [100000, 2**62])
def test_unrolling_is_capped_with_a_located_message(factor: int) -> None:
    text = DYNAMIC_HUGE_UNROLL.replace("FACTOR", str(factor))
    result = opt("-p", "default", stdin=text)
    assert result.returncode == 1
    assert result.stderr.startswith("stdin:6:3: error: 'pto.loop' 'rows': unrolling it"), (
        result.stderr
    )
    # vc-split ran first: the body is a stage (5 ops) and its terminator.
    assert f"(6 body ops x {factor + 1} copies), more than loop-unroll's limit of 65536" in (
        result.stderr
    )
    assert "default{unroll-max-ops=N}" in result.stderr


def test_the_unroll_cap_can_be_raised() -> None:
    text = DYNAMIC_HUGE_UNROLL.replace("FACTOR", "300")
    with pytest.raises(TileirError, match="limit of 500"):
        apply_pipeline(parse_module(text), "loop-unroll{max-unrolled-ops=500}")
    module = apply_pipeline(parse_module(text), "default{unroll-max-ops=5000}")
    chunk = [op for op in module.walk() if isinstance(op, pto.LoopOp)][0]
    assert sum(isinstance(op, pto.ExpOp) for op in chunk.body.walk()) == 300


def _nested(depth: int, kind: str) -> ModuleOp:
    kernel = pto.KernelOp("k", [("x", MemRefType(f32, [4, 8]))])
    c0 = arith.ConstantOp.from_int_and_width(0, IndexType())
    c1 = arith.ConstantOp.from_int_and_width(1, IndexType())
    true = arith.ConstantOp.from_int_and_width(1, 1)
    kernel.body.block.add_ops([c0, c1, true])
    block, ends = kernel.body.block, [(kernel.body.block, pto.YieldOp)]
    for _ in range(depth):
        if kind == "loop":
            op = pto.LoopOp(c0, c1, c1)
            block.add_op(op)
            block = op.body.block
            ends.append((block, pto.YieldOp))
        else:
            op = scf.IfOp(true, [], Region(Block()))
            block.add_op(op)
            block = op.true_region.block
            ends.append((block, scf.YieldOp))
    for b, terminator in ends:
        b.add_op(terminator())
    return ModuleOp([kernel])


@pytest.mark.parametrize(("depth", "kind"), [(150, "loop"), (1000, "if")])
def test_deep_nesting_is_refused_with_the_limit(depth: int, kind: str) -> None:
    name = "pto.loop" if kind == "loop" else "scf.if"
    for run in (
        lambda m: verify_located(m),
        lambda m: apply_pipeline(m, "default"),
        lambda m: apply_pipeline(m, "vc-split,semantic-labels,loop-unroll", verify_each=True),
    ):
        with pytest.raises(TileirError, match=f"'{name}' is nested 65 regions deep; .* at most 64"):
            run(_nested(depth, kind))


def test_nesting_up_to_the_limit_runs_through_the_passes() -> None:
    module = _nested(pto.MAX_NESTING - 1, "loop")
    apply_pipeline(module, "default", verify_each=True)
