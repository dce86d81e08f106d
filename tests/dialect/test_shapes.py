"""The shared shape rules (`tileir.dialect.shapes`), with expected shapes worked out by
hand from the PyPTO / torch / numpy semantics of each op, and the same rule seen through
a verifier and through the frontend."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX as Q

from frontends.pypto import load_source
from tileir.diagnostics import TileirError
from tileir.dialect import shapes
from tileir.ir import parse_module


@pytest.mark.parametrize(
    ("got", "want"),
    [
        (lambda: shapes.broadcast((8, 64), (8, 1), ()), (8, 64)),
        (lambda: shapes.broadcast((Q, 1), (4,)), (Q, 4)),
        (lambda: shapes.reduce((8, 64), -1, True), (8, 1)),
        (lambda: shapes.reduce((64,), 0, False), (1,)),
        (
            lambda: shapes.matmul((2, 16, 32), (1, 64, 32), a_trans=False, b_trans=True),
            (2, 16, 64),
        ),
        (lambda: shapes.matmul((32, 16), (32, 8), a_trans=True, b_trans=False), (16, 8)),
        (lambda: shapes.concat([(8, 16), (8, 48)], -1), (8, 64)),
        (lambda: shapes.concat([(Q, 16), (4, 16)], 0), (Q, 16)),
        (lambda: shapes.transpose((2, 3, 5), 0, -1), (5, 3, 2)),
        (lambda: shapes.unsqueeze((8, 64), 2), (8, 64, 1)),
        (lambda: shapes.expand((1, 8, 1), (3, 8, 5)), (3, 8, 5)),
        (lambda: shapes.reshape((8, 64), (2, 256)), (2, 256)),
        (lambda: shapes.gather((16, 8), (4, 8), 0), (4, 8)),
        (lambda: shapes.index_select((100, 32), (1, 6), 0), (1, 6, 32)),
        (lambda: shapes.gathermask((4, 64), 3), (4, 16)),
        (lambda: shapes.gathermask((4, 64), 7), (4, 64)),
        (lambda: shapes.topk((4, 64), 8, -1), (4, 8)),
    ],
)
def test_rules(got, want) -> None:
    assert got() == want


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda: shapes.broadcast((8, 64), (4, 64)), "cannot broadcast shapes [8, 64] and [4, 64]"),
        (lambda: shapes.reduce((8, 64), 2, False), "dim 2 is out of range for a rank-2"),
        (
            lambda: shapes.matmul((16, 64), (16, 64), a_trans=False, b_trans=False),
            "contraction dims differ",
        ),
        (lambda: shapes.concat([(8, 64), (4, 64)], 1), "does not match [8, 64] outside dim 1"),
        (lambda: shapes.expand((8, 64), (16, 64)), "only size-1 dims expand"),
        (lambda: shapes.reshape((8, 64), (8, 32)), "(512 elements) to [8, 32] (256 elements)"),
        (lambda: shapes.gather((16, 8), (4, 9), 0), "no larger outside dim 0"),
        (lambda: shapes.gathermask((4, 6), 3), "last dim 6 is not a multiple of 4"),
        (lambda: shapes.gathermask((4, 8), 0), "pattern_mode 0 is not in 1..7"),
        (lambda: shapes.topk((4, 64), 65, 1), "k=65 must be in 1..64"),
        (lambda: shapes.broadcast((Q, 3), (4,)), "[?, 3] and [4]"),
        (
            lambda: shapes.matmul((2, 16, 32), (32, 8), a_trans=False, b_trans=False),
            "must have the same rank, got [2, 16, 32] and [32, 8]",
        ),
        (lambda: shapes.matmul_dtypes("bf16", "i8"), "bf16 inputs cannot produce i8"),
        (lambda: shapes.matmul_dtypes("i16", "i32"), "has i16 inputs"),
        (lambda: shapes.matmul_dtypes("f16", "f32", "bf16"), "bias element type bf16"),
        (lambda: shapes.matmul_bias((1, 1, 8), (4, 8)), "bias shape [1, 1, 8] should be"),
        (lambda: shapes.index_fits(512, 8, "indices"), "i8 cannot hold every index"),
        (lambda: shapes.index_fits(Q, 16), "of a dynamic dim"),
    ],
)
def test_rule_errors(bad, message: str) -> None:
    with pytest.raises(shapes.ShapeError) as e:
        bad()
    assert message in str(e.value)


def test_verifier_and_frontend_apply_the_same_rule() -> None:
    """A gather index larger than the input outside `dim` is rejected both when the
    frontend builds the op and when a verifier checks hand-written IR."""
    ir = (
        "pto.kernel @k(%x: memref<16x8xf32>, %i: memref<4x9xi32>) {\n"
        "  %t = pto.view %x[0, 0] : memref<16x8xf32> -> tensor<16x8xf32>\n"
        "  %j = pto.view %i[0, 0] : memref<4x9xi32> -> tensor<4x9xi32>\n"
        "  %r = pto.gather %t, 0, %j : tensor<16x8xf32>, tensor<4x9xi32> -> tensor<4x9xf32>\n"
        "}\n"
    )
    with pytest.raises(TileirError, match="'pto.gather' index \\[4, 9\\] must have the rank"):
        parse_module(ir, "g.mlir")
    py = (
        "import pypto\n\n\n@pypto.frontend.jit\n"
        "def k(x: pypto.Tensor([16, 8], pypto.DT_FP32), i: pypto.Tensor([4, 9], pypto.DT_INT32),"
        " out: pypto.Tensor([4, 9], pypto.DT_FP32)):\n"
        "    t = pypto.view(x, [16, 8], [0, 0])\n"
        "    j = pypto.view(i, [4, 9], [0, 0])\n"
        "    pypto.assemble(pypto.gather(t, 0, j), [0, 0], out)\n"
    )
    with pytest.raises(TileirError, match="pypto.gather: index \\[4, 9\\] must have the rank"):
        load_source(py, "g.py")


def test_the_dynamic_dim_marker_is_xdsls():
    """`shapes` spells xDSL's `DYNAMIC_INDEX` itself (the numpy semantics read these rules
    without importing xDSL): the two must be one value."""
    from xdsl.dialects import builtin

    assert shapes.DYNAMIC_INDEX == builtin.DYNAMIC_INDEX


def test_the_element_type_table_builds_each_mlir_type_once():
    """The MLIR column of the element-type table is made on first use (no xDSL at
    import); every row's type maps back to its row and the spellings agree."""
    from xdsl.dialects import builtin

    from tileir.dialect import dtypes

    expected = {
        "bf16": builtin.BFloat16Type(),
        "f16": builtin.Float16Type(),
        "f32": builtin.Float32Type(),
        "i1": builtin.IntegerType(1),
        "i8": builtin.IntegerType(8),
        "i16": builtin.IntegerType(16),
        "i32": builtin.IntegerType(32),
        "i64": builtin.IntegerType(64),
        "f8E4M3FN": builtin.Float8E4M3FNType(),
        "f8E5M2": builtin.Float8E5M2Type(),
        "f8E8M0FNU": builtin.Float8E8M0FNUType(),
    }
    assert {t.short: t.mlir for t in dtypes.ELEMENT_TYPES} == expected
    for t in dtypes.ELEMENT_TYPES:
        assert dtypes.element_type(t.mlir) is t and dtypes.BY_MLIR[t.mlir] is t
        assert t.mlir is t.mlir  # made once
        assert str(t.mlir) == t.short
