"""semantic-labels: user labels, the rule table, uniqueness, idempotence and the check."""

from __future__ import annotations

import pytest
from hypothesis import given

from tileir.dialect import pto
from tileir.ir import make_context, parse_module, print_module
from tileir.passes.semantic_labels import (
    RULES,
    SemanticLabelsPass,
    check_labels,
    derive_label,
)
from tileir.passes.stages import kernels, stages
from tileir.passes.vc_split import VCSplitPass
from tileir.testing import check_pass, modules


def _labelled(text: str):
    module = parse_module(text)
    ctx = make_context()
    VCSplitPass().apply(ctx, module)
    SemanticLabelsPass().apply(ctx, module)
    module.verify()
    return module


def _labels(module) -> list[str]:
    return [s.label.data for k in kernels(module) for s in stages(k)]


def _kernel(body: str, args: str = "%x: memref<8x64xf32>, %out: memref<8x64xf32>") -> str:
    return f"pto.kernel @k({args}) {{\n{body}\n}}\n"


VIEW = "%t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>"
STORE = "pto.assemble %{v} into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32>"


@pytest.mark.parametrize(
    ("ops", "result", "label"),
    [
        # RMSNorm: x * rsqrt(sum(x * x))
        (
            [
                "%a = pto.mul %t, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>",
                "%s = pto.sum %a, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>",
                "%r = pto.rsqrt %s : tensor<8x1xf32>",
                "%y = pto.mul %t, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>",
            ],
            "y",
            "rmsnorm",
        ),
        # softmax: exp(x - max) / sum
        (
            [
                "%m = pto.amax %t, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>",
                "%d = pto.sub %t, %m : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>",
                "%e = pto.exp %d : tensor<8x64xf32>",
                "%s = pto.sum %e, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>",
                "%y = pto.div %e, %s : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>",
            ],
            "y",
            "softmax",
        ),
        # GELU (erf form)
        (
            [
                "%e = pto.erf %t : tensor<8x64xf32>",
                "%y = pto.mul %t, %e : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>",
            ],
            "y",
            "gelu",
        ),
        # a reduction alone
        (
            [
                "%s = pto.sum %t, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>",
                "%y = pto.expand_clone %s : tensor<8x1xf32> -> tensor<8x64xf32>",
            ],
            "y",
            "reduce",
        ),
        # casts there and back: data movement and casts only
        (
            [
                "%h = pto.cast %t : tensor<8x64xf32> -> tensor<8x64xf16>",
                "%y = pto.cast %h : tensor<8x64xf16> -> tensor<8x64xf32>",
            ],
            "y",
            "cast",
        ),
        # plain elementwise math
        (["%y = pto.exp %t : tensor<8x64xf32>"], "y", "elementwise"),
        # a copy
        ([], "t", "copy"),
    ],
)
def test_rule_table(ops: list[str], result: str, label: str) -> None:
    module = _labelled(_kernel("\n".join([VIEW, *ops, STORE.format(v=result)])))
    assert _labels(module) == [label]


def test_rule_table_is_documented() -> None:
    from tileir.passes import semantic_labels

    doc = semantic_labels.__doc__ or ""
    for rule in RULES:
        assert f"`{rule.label}`" in doc, rule.label


def test_user_label_wins_and_derived_labels_are_unique() -> None:
    exp = "%{o} = pto.exp %{i} : tensor<8x64xf32>"
    mm = "%{o} = pto.matmul %{i}, %w b_trans : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xf32>"
    body = "\n".join(
        [
            VIEW,
            "%w = pto.view %wm[0, 0] : memref<64x64xf32> -> tensor<64x64xf32>",
            exp.format(o="a", i="t"),
            mm.format(o="b", i="a"),
            exp.format(o="c", i="b"),
            mm.format(o="d", i="c"),
            'pto.set_semantic_label "post"',
            exp.format(o="e", i="d"),
            STORE.format(v="e"),
        ]
    )
    args = "%x: memref<8x64xf32>, %wm: memref<64x64xf32>, %out: memref<8x64xf32>"
    module = _labelled(_kernel(body, args))
    # The weight view opens the first stage that needs it, but the matmuls read the
    # weight from a kernel argument either way: `linear`, then `linear-2`.
    assert _labels(module) == ["elementwise", "linear", "elementwise-2", "linear-2", "post"]


def test_idempotent_and_meaning_kept() -> None:
    text = _kernel("\n".join([VIEW, "%y = pto.exp %t : tensor<8x64xf32>", STORE.format(v="y")]))
    module = parse_module(text)
    after = check_pass([VCSplitPass(), SemanticLabelsPass()], module)
    printed = print_module(after)
    SemanticLabelsPass().apply(make_context(), after)
    assert print_module(after) == printed


def test_check_finds_lost_labels() -> None:
    module = _labelled(
        _kernel("\n".join([VIEW, "%y = pto.exp %t : tensor<8x64xf32>", STORE.format(v="y")]))
    )
    assert check_labels(module) == []
    stage = stages(next(kernels(module)))[0]
    stage.label = None
    (problem,) = check_labels(module)
    assert "vector stage in @k has no semantic label" in problem
    # A pass that moves an op out of its stage loses its label too.
    stage.label = pto.StringAttr("x")
    exp = next(op for op in module.walk() if isinstance(op, pto.ExpOp))
    exp.detach()
    stage.parent_block().insert_op_before(exp, stage)
    (problem,) = check_labels(module)
    assert "'pto.exp' in @k is outside every stage" in problem


def test_check_mode_of_the_pass() -> None:
    module = _labelled(
        _kernel("\n".join([VIEW, "%y = pto.exp %t : tensor<8x64xf32>", STORE.format(v="y")]))
    )
    SemanticLabelsPass(check=True).apply(make_context(), module)  # no problem: no error
    stages(next(kernels(module)))[0].label = None
    from tileir.diagnostics import TileirError

    with pytest.raises(TileirError, match="semantic labels lost"):
        SemanticLabelsPass(check=True).apply(make_context(), module)


def test_derive_label_quant_and_dequant() -> None:
    body = "\n".join(
        [
            VIEW,
            "%q = pto.cast %t mode rint sat : tensor<8x64xf32> -> tensor<8x64xi8>",
            "%w = pto.view %wm[0, 0] : memref<64x64xi8> -> tensor<64x64xi8>",
            "%acc = pto.matmul %q, %w : tensor<8x64xi8>, tensor<64x64xi8> -> tensor<8x64xi32>",
            "%f = pto.cast %acc : tensor<8x64xi32> -> tensor<8x64xf32>",
            "%y = pto.mul %f, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>",
            STORE.format(v="y"),
        ]
    )
    args = "%x: memref<8x64xf32>, %wm: memref<64x64xi8>, %out: memref<8x64xf32>"
    module = _labelled(_kernel(body, args))
    assert _labels(module) == ["quant", "linear", "dequant"]
    assert [derive_label(s) for s in stages(next(kernels(module)))] == [
        "quant",
        "linear",
        "dequant",
    ]


def _later_passes() -> list:
    from tileir.passes.loop_unroll import LoopUnrollPass
    from tileir.passes.stitch import StitchPass

    return [LoopUnrollPass(), StitchPass()]


@given(module=modules(templates=["rows", "cube", "accumulate"]))
def test_labels_survive_the_later_passes(module) -> None:
    """Labels given before loop-unroll and stitch are still there after them: every
    stage they create carries a label and no op is left outside a stage."""
    later = _later_passes()
    ctx = make_context()
    for p in [VCSplitPass(), SemanticLabelsPass(), *later]:
        p.apply(ctx, module)
        assert check_labels(module) == [], p.name
