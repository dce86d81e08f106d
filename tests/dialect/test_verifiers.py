"""Each op's verifier: a valid use passes, each broken rule fails with a message that
names the op and the problem."""

from __future__ import annotations

import pytest

from tileir import parse_module
from tileir.diagnostics import TileirError
from tileir.dialect.pto import normalize_unroll_list

HEADER = (
    "pto.kernel @k(%x: memref<16x64xf32>, %h: memref<16x64xbf16>, %i: memref<4x2xi32>, "
    "%o: memref<16x64xf32>, %wide: memref<4x512xf32>, %bat: memref<2x16x64xbf16>) {\n"
)


def kernel(body: str) -> str:
    return HEADER + body + "\n}\n"


VALID = {
    "view": "%t = pto.view %x[8, 0] : memref<16x64xf32> -> tensor<8x64xf32>",
    "view-tail": (
        "%c3 = arith.constant 3 : index\n"
        "%t = pto.view %x[13, 0] valid [%c3, 64] : memref<16x64xf32> -> tensor<8x64xf32>"
    ),
    "assemble": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "pto.assemble %t into %o[8, 0] : tensor<8x64xf32>, memref<16x64xf32>"
    ),
    "broadcast": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.sum %t, 1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>\n"
        "%d = pto.div %t, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>"
    ),
    "round-decimals": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.round %t decimals -2 : tensor<8x64xf32>"
    ),
    "matmul-trans": (
        "%a = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<16x64xf32>\n"
        "%m = pto.matmul %a, %a b_trans : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x16xf32>"
    ),
    "matmul-batched-broadcast": (
        "%a = pto.view %bat[0, 0, 0] : memref<2x16x64xbf16> -> tensor<2x16x64xbf16>\n"
        "%c = pto.view %bat[0, 0, 0] : memref<2x16x64xbf16> -> tensor<1x16x64xbf16>\n"
        "%m = pto.matmul %a, %c b_trans : tensor<2x16x64xbf16>, tensor<1x16x64xbf16> "
        "-> tensor<2x16x16xf32>"
    ),
    "reshape-mem": (
        "%m = pto.reshape_mem %bat : memref<2x16x64xbf16> -> memref<32x64xbf16>\n"
        "%t = pto.view %m[16, 0] : memref<32x64xbf16> -> tensor<16x64xbf16>"
    ),
    "reshape-mem-dynamic": (
        "%c4 = arith.constant 4 : index\n"
        "%m = pto.reshape_mem %x sizes(%c4) : memref<16x64xf32> -> memref<?x256xf32>\n"
        "%n = pto.reshape_mem %m : memref<?x256xf32> -> memref<1024xf32>"
    ),
    "topk-i16-indices": (
        "%t = pto.view %wide[0, 0] : memref<4x512xf32> -> tensor<4x512xf32>\n"
        "%v, %j = pto.topk %t, 512 : tensor<4x512xf32> -> tensor<4x512xf32>, tensor<4x512xi16>"
    ),
    "loop": (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "pto.loop %j = %c0 to %c1 step %c1 unroll [8, 2, 1] {\n"
        "  %b = pto.is_loop_begin %j\n}"
    ),
}

INVALID = {
    "view-out-of-bounds": (
        "%t = pto.view %x[12, 0] : memref<16x64xf32> -> tensor<8x64xf32>",
        "'pto.view' window [12, 20) in dim 0 is outside the source of size 16",
    ),
    "view-negative-offset": (
        "%t = pto.view %x[-1, 0] : memref<16x64xf32> -> tensor<8x64xf32>",
        "offset -1 in dim 0 is negative",
    ),
    "view-rank": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x8x64xf32>",
        "result rank 3 differs from source rank 2",
    ),
    "view-dtype": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf16>",
        "changes the element type",
    ),
    "tile-rank-5": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.reshape %t : tensor<8x64xf32> -> tensor<2x2x2x2x32xf32>",
        "PyPTO tiles have 1 to 4 dims",
    ),
    "assemble-dtype": (
        "%t = pto.view %h[0, 0] : memref<16x64xbf16> -> tensor<8x64xbf16>\n"
        "pto.assemble %t into %o[0, 0] : tensor<8x64xbf16>, memref<16x64xf32>",
        "writes a bf16 tile into a f32 tensor",
    ),
    "assemble-offsets-too-many": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "pto.assemble %t into %o[0, 0, 0] : tensor<8x64xf32>, memref<16x64xf32>",
        "'pto.assemble' has 3 offsets for a rank-2 destination",
    ),
    "assemble-offsets-too-few": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "pto.assemble %t into %o[8] : tensor<8x64xf32>, memref<16x64xf32>",
        "'pto.assemble' has 1 offsets for a rank-2 destination",
    ),
    "reshape-count": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.reshape %t : tensor<8x64xf32> -> tensor<8x32xf32>",
        "changes the element count",
    ),
    "reshape-mem-count": (
        "%m = pto.reshape_mem %x : memref<16x64xf32> -> memref<16x32xf32>",
        "'pto.reshape_mem' cannot reshape [16, 64] (1024 elements) to [16, 32] (512 elements)",
    ),
    "reshape-mem-divide": (
        "%c3 = arith.constant 3 : index\n"
        "%m = pto.reshape_mem %x sizes(%c3) : memref<16x64xf32> -> memref<?x3xf32>",
        "3 does not divide 1024",
    ),
    "reshape-mem-dtype": (
        "%m = pto.reshape_mem %x : memref<16x64xf32> -> memref<1024xbf16>",
        "'pto.reshape_mem' changes the element type from f32 to bf16",
    ),
    "reshape-mem-sizes": (
        "%m = pto.reshape_mem %x : memref<16x64xf32> -> memref<?x64xf32>",
        "'pto.reshape_mem' result has 1 dynamic dims but 0 sizes",
    ),
    "reshape-mem-zero-size": (
        "%c0 = arith.constant 0 : index\n"
        "%m = pto.reshape_mem %x sizes(%c0) : memref<16x64xf32> -> memref<?x64xf32>",
        "size 0 of dynamic dim 0 is not > 0",
    ),
    "reshape-mem-strided": (
        "%m = pto.reshape_mem %x : memref<16x64xf32> -> memref<64x16xf32, strided<[1, 64]>>",
        "is not a plain row-major memref",
    ),
    "reshape-mem-of-tile": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%m = pto.reshape_mem %t : tensor<8x64xf32> -> memref<512xf32>",
        "tensor<8x64xf32> should be of base attribute memref",
    ),
    "transpose-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.transpose %t, 0, 1 : tensor<8x64xf32> -> tensor<8x64xf32>",
        "should be [64, 8]",
    ),
    "transpose-dim": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.transpose %t, 0, 2 : tensor<8x64xf32> -> tensor<64x8xf32>",
        "dim1 2 is out of range",
    ),
    "concat-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%u = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<4x64xf32>\n"
        "%r = pto.concat dim 1, %t, %u : tensor<8x64xf32>, tensor<4x64xf32> -> tensor<8x128xf32>",
        "does not match",
    ),
    "expand-non-one": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.expand_clone %t : tensor<8x64xf32> -> tensor<16x64xf32>",
        "only size-1 dims expand",
    ),
    "unsqueeze-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.unsqueeze %t, 1 : tensor<8x64xf32> -> tensor<1x8x64xf32>",
        "should be [8, 1, 64]",
    ),
    "view-type-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.view_type %t : tensor<8x64xf32> -> tensor<8x64xi8>",
        "should be [8, 256]",
    ),
    "view-type-bytes": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x5xf32>\n"
        "%r = pto.view_type %t : tensor<8x5xf32> -> tensor<8x2xi64>",
        "holds 20 bytes, not a whole number of 8-byte elements",
    ),
    "view-type-bool": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.view_type %t : tensor<8x64xf32> -> tensor<8x256xi1>",
        "has element type i1, which has no bytes to reinterpret",
    ),
    "cast-mode": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.cast %t mode nearest : tensor<8x64xf32> -> tensor<8x64xbf16>",
        "Expected `none`, `rint`, `round`, `floor`, `ceil`, `trunc`, or `odd`",
    ),
    "cast-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.cast %t : tensor<8x64xf32> -> tensor<4x64xbf16>",
        "changes the shape",
    ),
    "binary-broadcast": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%u = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<4x64xf32>\n"
        "%r = pto.add %t, %u : tensor<8x64xf32>, tensor<4x64xf32> -> tensor<8x64xf32>",
        "cannot broadcast shapes [8, 64] and [4, 64]",
    ),
    "binary-dtype": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%u = pto.view %h[0, 0] : memref<16x64xbf16> -> tensor<8x64xbf16>\n"
        "%r = pto.mul %t, %u : tensor<8x64xf32>, tensor<8x64xbf16> -> tensor<8x64xf32>",
        "mixes element types",
    ),
    "binary-no-tile": (
        "%a = arith.constant 1.0 : f32\n%r = pto.add %a, %a : f32, f32 -> tensor<8x64xf32>",
        "needs at least one tile operand",
    ),
    "compare-result": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.lt %t, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>",
        "wrong result element type",
    ),
    "index-add-alpha-int": (
        "%j = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<4x2xi32>\n"
        "%k = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<1x2xi32>\n"
        "%n = pto.reshape %k : tensor<1x2xi32> -> tensor<2xi32>\n"
        "%s = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<2x2xi32>\n"
        "%r = pto.index_add %j, 0, %n, %s alpha 5.000000e-01 : f64 : tensor<4x2xi32>, "
        "tensor<2xi32>, tensor<2x2xi32> -> tensor<4x2xi32>",
        "'pto.index_add' alpha 0.5 must be finite and an integer for integer tiles",
    ),
    "index-add-source": (
        "%j = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<4x2xi32>\n"
        "%k = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<1x2xi32>\n"
        "%n = pto.reshape %k : tensor<1x2xi32> -> tensor<2xi32>\n"
        "%r = pto.index_add %j, 0, %n, %j : tensor<4x2xi32>, tensor<2xi32>, tensor<4x2xi32> "
        "-> tensor<4x2xi32>",
        "source [4, 2] must be [2, 2] (dim 0 indexed)",
    ),
    "round-int": (
        "%j = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<4x2xi32>\n"
        "%r = pto.round %j decimals 1 : tensor<4x2xi32>",
        "'pto.round' operand has element type i32; the op takes float tiles",
    ),
    "reduce-dim": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.sum %t, 2 : tensor<8x64xf32> -> tensor<8xf32>",
        "dim 2 is out of range",
    ),
    "reduce-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.amax %t, 1 : tensor<8x64xf32> -> tensor<8x1xf32>",
        "should be [8]",
    ),
    "matmul-k": (
        "%a = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<16x64xf32>\n"
        "%m = pto.matmul %a, %a : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>",
        "contraction dims differ",
    ),
    "matmul-result": (
        "%a = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<16x64xf32>\n"
        "%m = pto.matmul %a, %a b_trans : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>",
        "should be [16, 16]",
    ),
    # issue 13: these verified, then the numpy back end refused them.
    "matmul-3d-by-2d": (
        "%a = pto.view %bat[0, 0, 0] : memref<2x16x64xbf16> -> tensor<2x16x64xbf16>\n"
        "%c = pto.view %h[0, 0] : memref<16x64xbf16> -> tensor<16x64xbf16>\n"
        "%m = pto.matmul %a, %c b_trans : tensor<2x16x64xbf16>, tensor<16x64xbf16> "
        "-> tensor<2x16x16xf32>",
        "'pto.matmul' operands must have the same rank, got [2, 16, 64] and [16, 64]",
    ),
    "matmul-bf16-to-i8": (
        "%a = pto.view %h[0, 0] : memref<16x64xbf16> -> tensor<16x64xbf16>\n"
        "%m = pto.matmul %a, %a b_trans : tensor<16x64xbf16>, tensor<16x64xbf16> "
        "-> tensor<16x16xi8>",
        "'pto.matmul' bf16 inputs cannot produce i8 (allowed: bf16, f32)",
    ),
    "matmul-bias-dtype": (
        "%a = pto.view %h[0, 0] : memref<16x64xbf16> -> tensor<16x64xbf16>\n"
        "%c = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<1x2xi32>\n"
        "%m = pto.matmul %a, %a bias %c b_trans : tensor<16x64xbf16>, tensor<16x64xbf16>, "
        "tensor<1x2xi32> -> tensor<16x16xbf16>",
        "'pto.matmul' bias element type i32 is not allowed with bf16 inputs",
    ),
    # issue 18 item 8
    "topk-i8-indices-wrap": (
        "%t = pto.view %wide[0, 0] : memref<4x512xf32> -> tensor<4x512xf32>\n"
        "%v, %j = pto.topk %t, 512 : tensor<4x512xf32> -> tensor<4x512xf32>, tensor<4x512xi8>",
        "'pto.topk' indices of type i8 cannot hold every index of a dim of size 512",
    ),
    "unsqueeze-rank-5": (
        "%t = pto.view %bat[0, 0, 0] : memref<2x16x64xbf16> -> tensor<2x16x64xbf16>\n"
        "%u = pto.unsqueeze %t, 0 : tensor<2x16x64xbf16> -> tensor<1x2x16x64xbf16>\n"
        "%r = pto.unsqueeze %u, 0 : tensor<1x2x16x64xbf16> -> tensor<1x1x2x16x64xbf16>",
        "'pto.unsqueeze' result has rank 5; PyPTO tiles have 1 to 4 dims",
    ),
    "view-negative-valid": (
        "%c = arith.constant -3 : index\n"
        "%t = pto.view %x[0, 0] valid [%c, 64] : memref<16x64xf32> -> tensor<8x64xf32>",
        "'pto.view' valid_shape -3 in dim 0 is negative",
    ),
    "full-valid-exceeds-size": (
        "%s = arith.constant 2.5 : f32\n%r = pto.full %s valid [2] : f32 -> tensor<1xf32>",
        "'pto.full' valid_shape 2 in dim 0 exceeds the tile size 1",
    ),
    "unroll-empty-generic": (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        '"pto.loop"(%c0, %c1, %c1) <{unroll_list = array<i64>}> ({\n'
        "^bb0(%j: index):\n  pto.yield\n}) : (index, index, index) -> ()",
        "'pto.loop' unroll_list is empty",
    ),
    "full-huge-dim": (
        "%f = arith.constant 1.0 : f32\n"
        "%r = pto.full %f : f32 -> tensor<1x4611686018427387904xf32>",
        "'pto.full' result has size 4611686018427387904 in dim 1; sizes must be in 1..",
    ),
    "gathermask-mode": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.gathermask %t, 9 : tensor<8x64xf32> -> tensor<8x64xf32>",
        "pattern_mode 9 is not in 1..7",
    ),
    "gather-index-type": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.gather %t, 0, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64x64xf32>",
        "must be an integer type",
    ),
    "index-select-shape": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%j = pto.view %i[0, 0] : memref<4x2xi32> -> tensor<4x2xi32>\n"
        "%r = pto.index_select %t, 0, %j : tensor<8x64xf32>, tensor<4x2xi32> -> tensor<4x64xf32>",
        "should be [4, 2, 64]",
    ),
    "topk-k": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%v, %j = pto.topk %t, 65 : tensor<8x64xf32> -> tensor<8x65xf32>, tensor<8x65xi32>",
        "k=65 must be in 1..64",
    ),
    "unroll-order": (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "pto.loop %j = %c0 to %c1 step %c1 unroll [2, 4, 1] {\n}",
        "must be strictly descending and end in 1",
    ),
    "unroll-zero": (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "pto.loop %j = %c0 to %c1 step %c1 unroll [4, 0] {\n}",
        "has a factor <= 0",
    ),
    "loop-step": (
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "pto.loop %j = %c0 to %c1 step %c0 {\n}",
        "step 0 must be positive",
    ),
    "loop-state-operand": (
        "%c0 = arith.constant 0 : index\n%b = pto.is_loop_end %c0",
        "must be the index of an enclosing pto.loop",
    ),
    "vec-tile-rank": ("pto.set_vec_tile_shapes [1, 1, 1, 1, 8]", "PyPTO tiles have 1 to 4 dims"),
    "vec-tile-zero": ("pto.set_vec_tile_shapes [0, 64]", "has a dim <= 0"),
    "cube-tile-pair": (
        "pto.set_cube_tile_shapes m [16] k [16, 16] n [16, 16]",
        "m must be an [L0, L1] pair",
    ),
    "label-empty": ('pto.set_semantic_label ""', "label must not be empty"),
    "stage-unit": (
        "pto.stage scalar {\n  pto.yield\n}",
        "Expected `vector`, or `cube`",
    ),
    "transfer-units": (
        "%t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>\n"
        "%r = pto.transfer %t from vector to vector : tensor<8x64xf32>",
        "goes from one unit to the other",
    ),
    "workspace-dynamic": (
        '%w = pto.tensor "w" : memref<?x4xf32>',
        "'pto.tensor' workspace 'w' has 1 dynamic dims but 0 sizes (one index value per `?`)",
    ),
    "workspace-sizes": (
        '%n = arith.constant 4 : index\n%w = pto.tensor "w" sizes(%n) : memref<8x4xf32>',
        "'pto.tensor' workspace 'w' has 0 dynamic dims but 1 sizes",
    ),
    "workspace-size-zero": (
        '%n = arith.constant 0 : index\n%w = pto.tensor "w" sizes(%n) : memref<?x4xf32>',
        "'pto.tensor' workspace 'w': size 0 of dynamic dim 0 is not > 0",
    ),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_ops_verify(name: str) -> None:
    parse_module(kernel(VALID[name]), f"{name}.mlir")


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_ops_are_rejected_with_a_located_message(name: str) -> None:
    body, message = INVALID[name]
    with pytest.raises(TileirError) as info:
        parse_module(kernel(body), f"{name}.mlir")
    text = str(info.value)
    assert message in text
    assert text.startswith(f"{name}.mlir:"), text


def _scaled_mm(
    a="16x128xf8E4M3FN",
    b="128x32xf8E5M2",
    sa="16x2x2xf8E8M0FNU",
    sb="2x32x2xf8E8M0FNU",
    out="16x32xf32",
    flags="",
    bias="",
) -> str:
    """A kernel around one `pto.scaled_mm` of these types (`bias`: the bias type)."""
    args = [("a", a), ("b", b), ("sa", sa), ("sb", sb)] + ([("bias", bias)] if bias else [])
    zeros = {n: ", ".join("0" * len(t.split("x")[:-1])) for n, t in args}
    head = ", ".join(f"%{n}: memref<{t}>" for n, t in args)
    views = "\n".join(
        f"%{n}_t = pto.view %{n}[{zeros[n]}] : memref<{t}> -> tensor<{t}>" for n, t in args
    )
    with_bias = " bias %bias_t" if bias else ""
    types = ", ".join(f"tensor<{t}>" for _, t in args)
    return (
        f"pto.kernel @k({head}) {{\n{views}\n"
        f"%r = pto.scaled_mm %a_t, %b_t scales %sa_t, %sb_t{with_bias}{flags} : {types} "
        f"-> tensor<{out}>\n}}\n"
    )


SCALED_MM_VALID = {
    "plain": _scaled_mm(),
    "all-trans": _scaled_mm(
        a="128x16xf8E5M2",
        b="32x128xf8E4M3FN",
        sa="2x16x2xf8E8M0FNU",
        sb="32x2x2xf8E8M0FNU",
        out="16x32xbf16",
        flags=" a_trans b_trans scale_a_trans scale_b_trans",
    ),
    "bias": _scaled_mm(bias="1x32xf16", out="16x32xf16"),
}

SCALED_MM_INVALID = {
    "rank": (_scaled_mm(a="1x16x128xf8E4M3FN"), "operands must be 2-D, got [1, 16, 128]"),
    "scale-rank": (_scaled_mm(sa="16x4xf8E8M0FNU"), "scales must be 3-D, got [16, 4]"),
    "k-align": (
        _scaled_mm(
            a="16x96xf8E4M3FN", b="96x32xf8E5M2", sa="16x1x2xf8E8M0FNU", sb="1x32x2xf8E8M0FNU"
        ),
        "K=96 must be a multiple of 64",
    ),
    "scale-a-k": (
        _scaled_mm(sa="16x4x2xf8E8M0FNU"),
        "scale_a shape [16, 4, 2] should be [16, 2, 2]",
    ),
    "scale-a-trans": (
        _scaled_mm(flags=" scale_a_trans"),
        "scale_a shape [16, 2, 2] should be [2, 16, 2] (scale_a_trans)",
    ),
    "scale-b-n": (
        _scaled_mm(sb="2x16x2xf8E8M0FNU"),
        "scale_b shape [2, 16, 2] should be [2, 32, 2]",
    ),
    "scale-pair": (
        _scaled_mm(sb="2x32x1xf8E8M0FNU"),
        "scale_b shape [2, 32, 1] should be [2, 32, 2]",
    ),
    "operand-dtype": (_scaled_mm(a="16x128xbf16"), "mat_a has bf16 elements"),
    "scale-dtype": (_scaled_mm(sb="2x32x2xf8E4M3FN"), "scale_b has f8E4M3FN elements; scales are"),
    "out-dtype": (_scaled_mm(out="16x32xi8"), "out element type i8 is not one of f16, bf16, f32"),
    "bias-dtype": (_scaled_mm(bias="1x32xi32"), "bias element type i32 is not one of"),
    "bias-shape": (_scaled_mm(bias="2x32xf32"), "bias shape [2, 32] should be [32] or [1, 32]"),
    "result": (_scaled_mm(out="16x16xf32"), "result shape [16, 16] should be [16, 32]"),
    "k-mismatch": (_scaled_mm(b="64x32xf8E5M2"), "contraction dims differ"),
}


@pytest.mark.parametrize("name", sorted(SCALED_MM_VALID))
def test_scaled_mm_verifies(name: str) -> None:
    parse_module(SCALED_MM_VALID[name], f"{name}.mlir")


@pytest.mark.parametrize("name", sorted(SCALED_MM_INVALID))
def test_scaled_mm_rules_are_located_errors(name: str) -> None:
    text, message = SCALED_MM_INVALID[name]
    with pytest.raises(TileirError) as info:
        parse_module(text, f"{name}.mlir")
    got = str(info.value)
    assert got.startswith(f"{name}.mlir:") and "'pto.scaled_mm'" in got, got
    assert message in got, got


def test_kernel_arguments_must_be_memrefs() -> None:
    with pytest.raises(TileirError, match="kernel arguments are memrefs"):
        parse_module("pto.kernel @k(%x: tensor<4xf32>) {\n}\n")


def test_kernel_dynamic_dims_must_be_named() -> None:
    with pytest.raises(TileirError, match="has 1 dynamic dims but 0 names"):
        parse_module("pto.kernel @k(%x: memref<?x4xf32>) {\n}\n")


def test_kernel_argument_dims_are_bounded() -> None:
    with pytest.raises(TileirError, match="argument 'x' has size 4611686018427387904 in dim 0"):
        parse_module("pto.kernel @k(%x: memref<4611686018427387904xf32>) {\n}\n")


def test_empty_unroll_list_is_a_parse_error() -> None:
    text = kernel(
        "%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n"
        "pto.loop %j = %c0 to %c1 step %c1 unroll [] {\n}"
    )
    with pytest.raises(TileirError, match=r"unroll list is empty") as info:
        parse_module(text, "u.mlir")
    assert str(info.value).startswith("u.mlir:4:"), str(info.value)


def test_kernel_element_type_must_be_pypto_type() -> None:
    with pytest.raises(TileirError, match="which PyPTO does not have"):
        parse_module("pto.kernel @k(%x: memref<4xf64>) {\n}\n")


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ([8, 4, 2, 1], [8, 4, 2, 1]),
        ([2, 8], [8, 2, 1]),
        ([1], [1]),
        ([128, 64, 32], [128, 64, 32, 1]),
    ],
)
def test_unroll_list_normalization(given: list[int], normalized: list[int]) -> None:
    assert normalize_unroll_list(given) == normalized


@pytest.mark.parametrize(
    ("bad", "message"), [([4, 4], "duplicate"), ([0, 2], "positive"), ([-2], "positive")]
)
def test_unroll_list_rejects(bad: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalize_unroll_list(bad)
