"""The `default` pipeline: keeps every program's meaning, is conservative about what it
changes, verifies between passes, and works from the CLI."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from xdsl.passes import ModulePass

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_source
from tileir.backends.numpy import run
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.ir import make_context, parse_module
from tileir.passes.loop_unroll import LoopUnrollPass
from tileir.passes.pipeline import DefaultPipelinePass
from tileir.passes.stitch import StitchPass
from tileir.testing import check_pass, modules

PLAIN = """
pto.kernel @plain(%x: memref<13x64xf32>, %out: memref<13x64xf32>) attributes {jit_options = {runtime_options = {stitch_function_max_num = 7 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" {
    pto.set_semantic_label "scale"
    pto.set_vec_tile_shapes [1, 64]
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %r = pto.exp %t : tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
"""


def _count(module, *types) -> int:
    return sum(isinstance(op, types) for op in module.walk())


def test_conservative_by_default() -> None:
    module = parse_module(PLAIN)
    DefaultPipelinePass().apply(make_context(), module)
    loops = [op for op in module.walk() if isinstance(op, pto.LoopOp)]
    # Not unrolled, not grouped, the user's stitch_function_max_num kept.
    assert [op.loop_name.data for op in loops] == ["rows"]
    assert _count(module, pto.StitchOp) == 0
    kernel = next(op for op in module.walk() if isinstance(op, pto.KernelOp))
    value = kernel.jit_options.data["runtime_options"].data["stitch_function_max_num"]
    assert value.value.data == 7
    # Settings and writes have effects: the cleanups keep them.
    assert _count(module, pto.SetSemanticLabelOp, pto.SetVecTileShapesOp) == 2
    assert _count(module, pto.AssembleOp) == 1


def test_options_reach_the_passes() -> None:
    steps = DefaultPipelinePass(
        unroll_factors=(4, 2), unroll_loops=("rows",), max_functions=2, interleave=False
    ).passes()
    assert LoopUnrollPass(factors=(4, 2), loops=("rows",), emittable=True) in steps
    assert StitchPass(max_functions=2, interleave=False) in steps
    names = [p.name for p in DefaultPipelinePass(unroll=False).passes()]
    assert "loop-unroll" not in names and "stitch" not in names
    assert names[-2:] == ["canonicalize", "cse"]


@dataclass(frozen=True)
class _BreakUnrollList(ModulePass):
    """Test only: leaves an unroll list that is not descending."""

    name = "break-unroll-list"

    def apply(self, ctx, op) -> None:
        for loop in op.walk():
            if isinstance(loop, pto.LoopOp):
                loop.unroll_list = pto._i64_array([2, 4])


def test_ir_is_verified_after_every_pass(monkeypatch) -> None:
    original = DefaultPipelinePass.passes

    def with_breaker(self):
        steps = original(self)
        return [steps[0], _BreakUnrollList(), *steps[1:]]

    monkeypatch.setattr(DefaultPipelinePass, "passes", with_breaker)
    with pytest.raises(TileirError, match="after pass 'break-unroll-list'"):
        DefaultPipelinePass(verify_each=True).apply(make_context(), parse_module(PLAIN))
    # Verified once at the end by default: loop-unroll then removes the broken list.
    DefaultPipelinePass().apply(make_context(), parse_module(PLAIN))


def test_ir_is_verified_at_the_end(monkeypatch) -> None:
    original = DefaultPipelinePass.passes
    monkeypatch.setattr(
        DefaultPipelinePass, "passes", lambda self: [*original(self), _BreakUnrollList()]
    )
    with pytest.raises(TileirError, match="after the pipeline '.*,break-unroll-list'"):
        DefaultPipelinePass().apply(make_context(), parse_module(PLAIN))


# --------------------------------------------------------------------------- meaning


@given(modules())
def test_generated_programs_keep_their_outputs(module) -> None:
    check_pass("default", module, n_inputs=2)


@given(modules(templates=("rows", "accumulate", "softmax", "cube")))
def test_default_leaves_no_dead_op_for_a_dce(module) -> None:
    """Why `default` ends with canonicalize, cse and no dce: after it, xDSL's dce
    (an independent dead-code finder) removes nothing."""
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    ctx = make_context()
    DefaultPipelinePass(unroll_factors=(2, 1)).apply(ctx, module)
    before = [op.name for op in module.walk()]
    DeadCodeElimination().apply(ctx, module)
    assert [op.name for op in module.walk()] == before


@given(modules(templates=("rows", "accumulate", "softmax", "cube")))
def test_generated_programs_keep_their_outputs_unrolled(module) -> None:
    check_pass("default{unroll-factors=4,3 max-functions=3}", module, n_inputs=2)


def _loadable():
    for k in SEED_KERNELS:
        try:
            load_source(k.path.read_text(), str(k.path))
        except TileirError:
            continue  # the frontend does not read every seed yet
        yield k


SEEDS = list(_loadable())


@pytest.mark.parametrize("spec", ["default", "default{unroll-factors=3,2 max-functions=2}"])
@pytest.mark.parametrize("seed", SEEDS, ids=[k.name for k in SEEDS])
def test_seed_kernels_through_default(seed, spec) -> None:
    from tileir.testing.check import resolve_passes

    inputs = seed.make_inputs(np.random.default_rng(0))
    module = load_source(seed.path.read_text(), str(seed.path))
    before = run(module, inputs, kernel=seed.kernel)
    for p in resolve_passes(spec):
        p.apply(make_context(), module)
    module.verify()
    after = run(module, inputs, kernel=seed.kernel)
    golden = seed.golden(inputs)
    atol, rtol = seed.tolerance
    for name in seed.outputs:
        assert np.array_equal(after[name].view(np.uint8), before[name].view(np.uint8)), name
        np.testing.assert_allclose(
            np.asarray(after[name], np.float64),
            np.asarray(golden[name], np.float64),
            atol=atol,
            rtol=rtol,
        )


def test_seed_kernels_with_unroll_lists_are_unrolled_and_stitched() -> None:
    names = {k.name for k in SEEDS}
    assert {"rope_half_split", "decode_attention", "linear_projection"} <= names
    for seed in SEEDS:
        if seed.name not in ("rope_half_split", "decode_attention"):
            continue
        module = load_source(seed.path.read_text(), str(seed.path))
        DefaultPipelinePass().apply(make_context(), module)
        assert _count(module, pto.StitchOp) > 0, seed.name


# --------------------------------------------------------------------------- CLI


def _opt(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from tileir.tools.opt import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], input=stdin, capture_output=True, text=True
    )


def test_cli_runs_default() -> None:
    result = _opt("-p", "default", stdin=PLAIN)
    assert result.returncode == 0, result.stderr
    assert "pto.kernel @plain" in result.stdout


def test_cli_bad_option_is_one_clear_line() -> None:
    result = _opt(
        "-p",
        "default{max-functions=5000}",
        stdin=PLAIN.replace(" {\n    pto.set", " unroll [2, 1] {\n    pto.set"),
    )
    assert result.returncode != 0
    assert "max-functions=5000 must be in 1..1024" in result.stderr
    assert "Traceback" not in result.stderr


DYNAMIC_STATE = """
pto.kernel @dyn(%x: memref<?x8xf32>, %out: memref<?x8xf32>) attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %S = memref.dim %x, %c0 : memref<?x8xf32>
  pto.loop %i = %c0 to %S step %c1 name "d" unroll [2, 1] {
    %b = pto.is_loop_begin %i
    %t = pto.view %x[%i, 0] : memref<?x8xf32> -> tensor<1x8xf32>
    scf.if %b {
      pto.assemble %t into %out[0, 0] : tensor<1x8xf32>, memref<?x8xf32>
    }
    pto.assemble %t into %out[%i, 0] : tensor<1x8xf32>, memref<?x8xf32>
  }
}
"""


def test_default_leaves_pypto_what_the_emitter_cannot_write() -> None:
    # Unrolled, this loop's is_loop_begin becomes `i == 0`, which PyPTO 0.2.0 cannot
    # take as an `if` condition: the default pipeline keeps the loop (PyPTO unrolls it).
    module = parse_module(DYNAMIC_STATE)
    DefaultPipelinePass().apply(make_context(), module)
    loops = [op for op in module.walk() if isinstance(op, pto.LoopOp)]
    assert [(op.loop_name.data, op.factors) for op in loops] == [("d", [2, 1])]
    result = _opt("-p", "default", "-t", "pypto", stdin=DYNAMIC_STATE)
    assert result.returncode == 0, result.stderr
    assert "unroll_list=[2, 1]" in result.stdout
    # The plain pass still unrolls it, with comparisons the numpy back end runs.
    module = parse_module(DYNAMIC_STATE)
    LoopUnrollPass().apply(make_context(), module)
    x = np.arange(40, dtype=np.float32).reshape(5, 8)
    expected = x.copy()
    expected[0] = x[0]
    np.testing.assert_array_equal(run(module, {"x": x})["out"], expected)
    assert _count(module, pto.LoopOp) == 2
