"""inplace-reshape: which reshapes are marked and why the others are not; the verifier's
PyPTO rules; meaning kept on generated programs that have markable reshapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, settings

from tileir.backends.numpy import run
from tileir.dialect import pto
from tileir.ir import make_context, parse_module, print_module
from tileir.passes.inplace_reshape import (
    InplaceReshapePass,
    inplace_blockers,
    mark_inplace_reshapes,
)
from tileir.passes.vc_split import VCSplitPass
from tileir.testing import check_pass, modules

HEAD = "pto.kernel @k(%x: memref<16x64xf32>, %out: memref<512xf32>, %o2: memref<8x64xf32>) {\n"
VIEW = "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
EXP = "%y = pto.exp %t : tensor<8x64xf32>\n"
RESHAPE = "%r = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>\n"
NEG_STORE = (
    "%n = pto.neg %r : tensor<512xf32>\n"
    "pto.assemble %n into %out[0] : tensor<512xf32>, memref<512xf32>\n"
)


def _reshape(module) -> pto.ReshapeOp:
    return next(op for op in module.walk() if isinstance(op, pto.ReshapeOp))


def _blockers(body: str) -> list[str]:
    module = parse_module(HEAD + body + "}\n")
    return inplace_blockers(_reshape(module))


def test_dead_full_tile_is_marked() -> None:
    module = parse_module(HEAD + VIEW + EXP + RESHAPE + NEG_STORE + "}\n")
    marked, reasons = mark_inplace_reshapes(module)
    assert (marked, dict(reasons)) == (1, {})
    assert _reshape(module).inplace is not None
    module.verify()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            VIEW + "%r = pto.reshape %t : tensor<8x64xf32> -> tensor<512xf32>\n" + NEG_STORE,
            "input made by pto.view",
        ),
        (
            VIEW
            + EXP
            + RESHAPE
            + NEG_STORE
            + "pto.assemble %y into %o2[0, 0] : tensor<8x64xf32>, memref<8x64xf32>\n",
            "input used afterwards",
        ),
        (
            VIEW
            + EXP
            + RESHAPE
            + "pto.assemble %r into %out[0] : tensor<512xf32>, memref<512xf32>\n",
            "result is a kernel output",
        ),
        (
            "%c3 = arith.constant 3 : index\n"
            "%t = pto.view %x[8, 0] valid [%c3, 64] : memref<16x64xf32> -> tensor<8x64xf32>\n"
            + EXP
            + RESHAPE
            + NEG_STORE,
            "input may be a tail tile",
        ),
        (
            VIEW + EXP + "%c3 = arith.constant 3 : index\n"
            "%r = pto.reshape %y valid [%c3, 64] : tensor<8x64xf32> -> tensor<8x64xf32>\n"
            "%n = pto.neg %r : tensor<8x64xf32>\n"
            "pto.assemble %n into %o2[0, 0] : tensor<8x64xf32>, memref<8x64xf32>\n",
            "has a valid list",
        ),
    ],
)
def test_blockers(body: str, reason: str) -> None:
    assert _blockers(body) == [reason]


def test_loop_that_runs_the_reshape_again() -> None:
    loop = (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "%cN = arith.constant {n} : index\n"
        "pto.loop %i = %c0 to %cN step %c1 {{\n" + RESHAPE + NEG_STORE + "}}\n"
    )
    # Two trips: the second one reads %y again, so the first may not take its storage.
    assert _blockers(VIEW + EXP + loop.format(n=2)) == ["input used afterwards"]
    # One trip (PyPTO's loop(1)): nothing runs it again.
    assert _blockers(VIEW + EXP + loop.format(n=1)) == []
    # Defined inside the loop: a fresh tile every trip.
    inner = (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "%c2 = arith.constant 2 : index\n"
        "pto.loop %i = %c0 to %c2 step %c1 {\n" + VIEW + EXP + RESHAPE + NEG_STORE + "}\n"
    )
    assert _blockers(inner) == []


def test_use_in_an_earlier_if_and_in_a_later_if() -> None:
    def body(before: bool) -> str:
        use = (
            "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
            "%b = arith.constant true\n"
            "scf.if %b {\n"
            "pto.assemble %y into %o2[0, 0] : tensor<8x64xf32>, memref<8x64xf32>\n"
            "}\n"
        )
        return VIEW + EXP + (use + RESHAPE if before else RESHAPE + use) + NEG_STORE

    assert _blockers(body(before=True)) == []
    assert _blockers(body(before=False)) == ["input used afterwards"]


def test_kernel_output_seen_through_stages_and_transfers() -> None:
    text = (
        HEAD
        + VIEW
        + EXP
        + (
            "%r = pto.reshape %y : tensor<8x64xf32> -> tensor<16x32xf32>\n"
            "%m = pto.matmul %r, %r b_trans : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x16xf32>\n"
            "%r2 = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>\n"
            "pto.assemble %r2 into %out[0] : tensor<512xf32>, memref<512xf32>\n"
        )
        + "}\n"
    )
    module = parse_module(text)
    VCSplitPass().apply(make_context(), module)
    reshapes = [op for op in module.walk() if isinstance(op, pto.ReshapeOp)]
    assert inplace_blockers(reshapes[0]) == ["input used afterwards"]
    assert inplace_blockers(reshapes[1]) == ["result is a kernel output"]


def test_verifier_accepts_an_inplace_result_written_to_a_kernel_output() -> None:
    """`out.move(reshape(y, shape, inplace=True))`: PyPTO 0.2.0 drops the `inplace`
    itself (tests/pypto/test_inplace_reshape_output.py), so it verifies and computes the
    reshape; the pass still does not mark such a reshape."""
    text = (
        HEAD
        + VIEW
        + "%y = pto.neg %t : tensor<8x64xf32>\n"
        + (
            "%r = pto.reshape %y inplace : tensor<8x64xf32> -> tensor<512xf32>\n"
            "pto.assemble %r into %out[0] : tensor<512xf32>, memref<512xf32>\n"
        )
        + "}\n"
    )
    x = np.linspace(-1, 1, 16 * 64, dtype=np.float32).reshape(16, 64)
    out = run(parse_module(text), {"x": x, "o2": np.zeros((8, 64), np.float32)})["out"]
    np.testing.assert_array_equal(out, -x[:8].reshape(512))


def test_verifier_allows_inplace_on_views_but_the_pass_marks_none() -> None:
    """A user's inplace reshape of a view verifies (0.2.0 compiles and runs it:
    tests/pypto/test_inplace_reshape_output.py), whole tensor or window; the pass itself
    never marks a view's reshape."""
    whole = (
        "pto.kernel @k(%g: memref<64xf32>, %out: memref<1x64xf32>) {\n"
        "%t = pto.view %g[0] : memref<64xf32> -> tensor<64xf32>\n"
        "%r = pto.reshape %t inplace : tensor<64xf32> -> tensor<1x64xf32>\n"
        "%n = pto.neg %r : tensor<1x64xf32>\n"
        "pto.assemble %n into %out[0, 0] : tensor<1x64xf32>, memref<1x64xf32>\n}\n"
    )
    parse_module(whole)
    part = whole.replace("memref<64xf32>", "memref<128xf32>").replace(
        "%g[0] : memref<128xf32>", "%g[64] : memref<128xf32>"
    )
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    out = run(parse_module(part), {"g": x})["out"]
    np.testing.assert_array_equal(out, -x[64:].reshape(1, 64))
    plain = parse_module(part.replace(" inplace :", " :"))
    InplaceReshapePass().apply(make_context(), plain)
    assert "inplace" not in print_module(plain)


def test_report_and_idempotence(capsys) -> None:
    module = parse_module(HEAD + VIEW + EXP + RESHAPE + NEG_STORE + "}\n")
    InplaceReshapePass(report=True).apply(make_context(), module)
    assert "inplace-reshape: @k: marked 1" in capsys.readouterr().err
    text = print_module(module)
    InplaceReshapePass(report=True).apply(make_context(), module)
    assert print_module(module) == text
    assert "marked 0" in capsys.readouterr().err


def _markable(module) -> bool:
    return mark_inplace_reshapes(module.clone())[0] > 0


def test_generated_programs_with_markable_reshapes_keep_meaning() -> None:
    """The general property test rarely draws a reshape the pass can mark; find one."""
    strategy = modules(
        templates=["block", "rows"], steps=["unary", "reshape", "scalar", "cast"], max_ops=6
    )
    module = find(
        strategy,
        _markable,
        settings=settings(
            max_examples=2000,
            database=None,
            phases=[Phase.generate],  # the first one found will do: no shrinking
            suppress_health_check=list(HealthCheck),
        ),
    )
    after = check_pass(InplaceReshapePass(), module, n_inputs=3)
    assert any(isinstance(op, pto.ReshapeOp) and op.inplace is not None for op in after.walk())


# Views, fulls and reshapes with each operand group (offsets, valid list, sizes) there or
# not, dynamic or static: the pass reads whether an op has a valid list without xDSL's
# accessors, off the static half and the operand segment sizes.
VALID_LISTS = """
pto.kernel @k(%x: memref<16x64xf32>, %y: memref<?x64xf32>)
    attributes {dynamic_dims = {y = ["S"]}} {
  %n = arith.constant 3 : index
  %f = arith.constant 1.0 : f32
  %a = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
  %b = pto.view %x[%n, 0] : memref<16x64xf32> -> tensor<8x64xf32>
  %c = pto.view %x[%n, 0] valid [%n, 64] : memref<16x64xf32> -> tensor<8x64xf32>
  %d = pto.view %x[0, 0] valid [3, 64] : memref<16x64xf32> -> tensor<8x64xf32>
  %e = pto.view %y[%n, 0] sizes(%n) : memref<?x64xf32> -> tensor<?x64xf32>
  %g = pto.view %y[0, 0] valid [%n, 64] sizes(%n) : memref<?x64xf32> -> tensor<?x64xf32>
  %h = pto.full %f : f32 -> tensor<8x64xf32>
  %i = pto.full %f valid [%n, 64] : f32 -> tensor<8x64xf32>
  %j = pto.full %f sizes(%n) : f32 -> tensor<?x64xf32>
  %k = pto.full %f valid [2, %n] sizes(%n) : f32 -> tensor<?x64xf32>
  %l = pto.reshape %a : tensor<8x64xf32> -> tensor<512xf32>
  %m = pto.reshape %a valid [%n, 64] : tensor<8x64xf32> -> tensor<8x64xf32>
  %o = pto.reshape %a valid [4, 64] : tensor<8x64xf32> -> tensor<8x64xf32>
}
"""


def test_valid_lists_read_as_xdsls_accessors() -> None:
    from tileir.passes.inplace_reshape import _has_valid_list

    module = parse_module(VALID_LISTS)
    ops = [op for op in module.walk() if isinstance(op, pto.ViewOp | pto.FullOp | pto.ReshapeOp)]
    answers = [_has_valid_list(op) for op in ops]
    assert answers == [bool(op.valid_shape or op.static_valid_shape.data.data) for op in ops]
    # By hand: the ops with `valid`.
    assert answers == [False, False, True, True, False, True] + [False, True, False, True] + [
        False,
        True,
        True,
    ]
    # Ops the verifier rejects (a dynamic valid list without its static half) are read
    # as the accessors read them too.
    a, n = ops[0].result, ops[1].offsets[0]
    reshape = pto.ReshapeOp.create(
        operands=[a, n],
        properties={"static_valid_shape": ops[0].static_valid_shape},
        result_types=[a.type],
    )
    view = ops[2].clone()
    view.static_valid_shape = ops[0].static_valid_shape
    for op in (reshape, view):
        assert _has_valid_list(op) is True is bool(op.valid_shape)
