"""`check_pass` and its parts, on hand-written modules whose expected outputs are worked
out by hand."""

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from planted_passes import ChangeCastMode, DropTail, SwapSubOperands
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.test import TestOp as UnknownOp
from xdsl.passes import ModulePass

from tileir.dialect import pto
from tileir.ir import parse_module, print_module
from tileir.testing import (
    RoundTripFailure,
    SemanticsMismatch,
    Tolerance,
    UnrunnableProgram,
    VerificationFailure,
    check_pass,
    compare_outputs,
    random_inputs,
)

DIFF = """
pto.kernel @diff(%x: memref<2x3xf32>, %y: memref<2x3xf32>, %out: memref<2x3xf32>) {
  %a = pto.view %x[0, 0] : memref<2x3xf32> -> tensor<2x3xf32>
  %b = pto.view %y[0, 0] : memref<2x3xf32> -> tensor<2x3xf32>
  %d = pto.sub %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  pto.assemble %d into %out[0, 0] : tensor<2x3xf32>, memref<2x3xf32>
}
"""

DIFF_INPUTS = {
    "x": np.array([[1, 2, 3], [4, 5, 6]], np.float32),
    "y": np.array([[1, 0, 3], [4, 5, 6]], np.float32),
    "out": np.zeros((2, 3), np.float32),
}

TAIL = """
pto.kernel @tail(%x: memref<?x4xf32>, %out: memref<?x4xf32>)
    attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.dim %x, %c0 : memref<?x4xf32>
  pto.loop %i = %c0 to %s step %c2 name "rows" {
    %left = arith.subi %s, %i : index
    %rows = arith.minsi %left, %c2 : index
    %t = pto.view %x[%i, 0] valid [%rows, 4] : memref<?x4xf32> -> tensor<2x4xf32>
    %h = arith.constant 2.000000e+00 : f32
    %r = pto.mul %t, %h : tensor<2x4xf32>, f32 -> tensor<2x4xf32>
    pto.assemble %r into %out[%i, 0] : tensor<2x4xf32>, memref<?x4xf32>
  }
}
"""

CAST = """
pto.kernel @narrow(%x: memref<3xf32>, %out: memref<3xbf16>) {
  %t = pto.view %x[0] : memref<3xf32> -> tensor<3xf32>
  %r = pto.cast %t mode rint : tensor<3xf32> -> tensor<3xbf16>
  pto.assemble %r into %out[0] : tensor<3xbf16>, memref<3xbf16>
}
"""


@dataclass(frozen=True)
class Identity(ModulePass):
    name = "identity"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class BogusCastMode(ModulePass):
    name = "bogus-cast-mode"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for cast in op.walk():
            if isinstance(cast, pto.CastOp):
                cast.mode = StringAttr("bogus")


@dataclass(frozen=True)
class AddUnknownOp(ModulePass):
    """Adds an op of a dialect that tileir's context does not load: it verifies and
    prints, but does not parse back."""

    name = "add-unknown-op"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernel = next(o for o in op.walk() if isinstance(o, pto.KernelOp))
        kernel.body.block.insert_op_before(UnknownOp(), kernel.body.block.first_op)


def test_swapped_sub_is_reported_with_place_values_and_reproducer():
    module = parse_module(DIFF)
    with pytest.raises(SemanticsMismatch) as info:
        check_pass(SwapSubOperands(), module, inputs=DIFF_INPUTS)
    e = info.value
    # x - y = [[0, 2, 0], [0, 0, 0]]; y - x = [[0, -2, 0], ...]: only [0, 1] differs.
    assert (e.pass_name, e.kernel, e.output, e.index) == ("planted-swap-sub", "diff", "out", (0, 1))
    assert "before 2.0 (0x40000000), after -2.0 (0xc0000000)" in e.summary
    assert "1 of 6 elements differ (bit for bit)" in e.summary
    assert "pass 'planted-swap-sub'" in e.summary
    # the reproducer is the module before the pass, and parses back to it
    assert print_module(parse_module(e.reproducer)) == print_module(module)
    assert "pto.sub %a, %b" in e.reproducer


def test_random_input_mismatch_names_the_seed_that_reproduces_it():
    module = parse_module(DIFF)
    with pytest.raises(SemanticsMismatch) as info:
        check_pass(SwapSubOperands(), module, n_inputs=2, seed=7)
    assert "random_inputs(module, 'diff', seed=7)" in info.value.summary
    inputs = random_inputs(module, "diff", seed=7)
    expected = inputs["x"] - inputs["y"]
    idx = info.value.index
    assert idx is not None and expected[idx] != 0


def test_the_checked_module_is_left_alone_and_a_clone_returned():
    module = parse_module(DIFF)
    before = print_module(module)
    out = check_pass(Identity(), module, inputs=DIFF_INPUTS)
    assert out is not module
    assert print_module(module) == before == print_module(out)


def test_a_pipeline_string_names_the_pass_that_broke_it():
    module = parse_module(DIFF)
    with pytest.raises(SemanticsMismatch) as info:
        check_pass([Identity(), SwapSubOperands(), Identity()], module, inputs=DIFF_INPUTS)
    assert info.value.pass_name == "planted-swap-sub"
    # xDSL's and tileir's registered passes are found by name
    check_pass("cse,canonicalize,dce", module, inputs=DIFF_INPUTS)


def test_a_pass_that_breaks_a_tail_fails_at_run_time_and_is_reported():
    # With S = 5 and tiles of 2 rows the last tile has 1 valid row; without the valid
    # shape it reads row 5 of a 5-row tensor.
    module = parse_module(TAIL)
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    inputs = {"x": x, "out": np.zeros((5, 4), np.float32)}
    assert check_pass(Identity(), module, inputs=inputs) is not None
    with pytest.raises(SemanticsMismatch, match="fails after the pass but not before"):
        check_pass(DropTail(), module, inputs=inputs)


def test_tolerance_accepts_small_rounding_changes_and_exact_rejects_them():
    module = parse_module(CAST)
    # 1 + 3 * 2**-9 lies between the bf16 neighbours 1 and 1 + 2**-7: RINT gives the
    # upper one, FLOOR the lower: they differ by 2**-7, about 0.8 %.
    x = np.array([1 + 3 * 2.0**-9, 2.0, -0.5], np.float32)
    inputs = {"x": x, "out": np.zeros(3, ml_dtypes.bfloat16)}
    with pytest.raises(SemanticsMismatch) as info:
        check_pass(ChangeCastMode(), module, inputs=inputs)
    assert info.value.index == (0,)
    assert "before 1.0078125 (0x3f81), after 1.0 (0x3f80)" in info.value.summary
    check_pass(ChangeCastMode(), module, inputs=inputs, tolerance=Tolerance(rtol=1e-2))
    with pytest.raises(SemanticsMismatch, match="within Tolerance"):
        check_pass(ChangeCastMode(), module, inputs=inputs, tolerance=1e-3)


def test_a_module_that_no_longer_verifies_is_reported():
    with pytest.raises(VerificationFailure, match="after pass 'bogus-cast-mode'") as info:
        check_pass(BogusCastMode(), parse_module(CAST), n_inputs=1)
    assert '"bogus" should be of base attribute pto.cast_mode' in info.value.summary


def test_a_module_that_does_not_parse_back_is_reported():
    with pytest.raises(RoundTripFailure, match="after pass 'add-unknown-op' does not parse"):
        check_pass(AddUnknownOp(), parse_module(CAST), n_inputs=1)
    # without the round trip, the semantic check is next to object (the op cannot run)
    with pytest.raises(SemanticsMismatch, match="fails after the pass but not before"):
        check_pass(AddUnknownOp(), parse_module(CAST), n_inputs=1, round_trip=False)


def test_a_module_that_fails_before_the_pass_is_not_blamed_on_it():
    module = parse_module(TAIL)
    # out has 3 rows but x has 5: the assemble of the third tile is out of bounds.
    inputs = {"x": np.zeros((5, 4), np.float32), "out": np.zeros((3, 4), np.float32)}
    with pytest.raises(UnrunnableProgram, match="before any pass"):
        check_pass(Identity(), module, inputs=inputs)


def _f32(bits: int) -> np.ndarray:
    return np.array([bits], np.uint32).view(np.float32)


def test_comparison_is_bitwise_with_nan_equal_to_nan():
    nan_a, nan_b = _f32(0x7FC00000), _f32(0x7FC00001)  # two NaN payloads
    assert compare_outputs({"o": nan_a}, {"o": nan_b}) is None
    diff = compare_outputs({"o": np.float32([0.0])}, {"o": np.float32([-0.0])})
    assert diff is not None and "(0x00000000), after -0.0 (0x80000000)" in diff.message
    diff = compare_outputs({"o": np.float32([np.inf])}, {"o": np.float32([1e38])})
    assert diff is not None
    assert compare_outputs({"o": np.float32([np.inf])}, {"o": np.float32([1e38])}, Tolerance(1, 1))


def test_comparison_reports_changed_dtype_shape_and_names():
    a = {"o": np.zeros(3, np.float32)}
    assert (
        "changed from float32[3] to float16[3]"
        in compare_outputs(a, {"o": np.zeros(3, np.float16)}).message
    )
    assert (
        "changed from float32[3] to float32[4]"
        in compare_outputs(a, {"o": np.zeros(4, np.float32)}).message
    )
    assert "outputs changed from ['o'] to ['p']" in compare_outputs(a, {"p": a["o"]}).message
    ints = compare_outputs({"o": np.int32([1, 2])}, {"o": np.int32([1, 3])}, Tolerance(1, 1))
    assert ints is not None and ints.index == (1,)  # integers stay exact


def test_every_kernel_of_a_module_is_checked_and_the_broken_one_named():
    other = """
pto.kernel @scale(%x: memref<4xf32>, %out: memref<4xf32>) {
  %t = pto.view %x[0] : memref<4xf32> -> tensor<4xf32>
  %e = pto.exp %t : tensor<4xf32>
  pto.assemble %e into %out[0] : tensor<4xf32>, memref<4xf32>
}
"""
    module = parse_module(other + DIFF)
    with pytest.raises(SemanticsMismatch) as info:
        check_pass(SwapSubOperands(), module, n_inputs=1)
    assert info.value.kernel == "diff"
    with pytest.raises(ValueError, match="inputs given for a module of 2 kernels; name one"):
        check_pass(Identity(), module, inputs=DIFF_INPUTS)
    check_pass(Identity(), module, inputs=DIFF_INPUTS, kernel="diff")
