"""The numpy back end on small `pto` programs, against numpy formulas written here.

Every program runs twice, batched (independent loops as whole-array ops) and iteration
by iteration, and the two must give the same bits (`run_both`). Expected values follow
the documented numeric conventions: float32 arithmetic for `+ - * /`, transcendentals
in float64 rounded once to float32, reductions and matmul accumulated in float64 and
rounded once, bf16 results rounded to nearest even.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tileir.backends.numpy import compile_kernel, random_inputs, run
from tileir.diagnostics import TileirError
from tileir.ir import parse_module

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.float32, np.float64


def run_both(
    text: str,
    inputs: dict[str, np.ndarray],
    kernel: str | None = None,
    *,
    batched: bool | None = None,
):
    """Run batched and iteration by iteration; assert identical bits; return outputs.
    `batched` (when given) asserts whether a loop really ran batched."""
    module = parse_module(text, "test.mlir")
    plan = compile_kernel(module, kernel)
    fast = plan(inputs)
    slow = compile_kernel(module, kernel, vectorize=False)(inputs)
    assert fast.keys() == slow.keys()
    for name in fast:
        assert fast[name].dtype == slow[name].dtype
        assert fast[name].tobytes() == slow[name].tobytes(), f"{name}: batched bits differ"
    if batched is not None:
        assert (plan.batched_runs > 0) == batched
    return fast


def tile_kernel(body: str, args: str, *, rows: int = 4) -> str:
    """A kernel that runs `body` once per row block of `rows` rows (loop index %i,
    block offset %row)."""
    return f"""
pto.kernel @k({args}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %crows = arith.constant {rows} : index
  pto.loop %i = %c0 to %c1 step %c1 {{
    %row = arith.muli %i, %crows : index
{body}
  }}
}}
"""


def unary_program(op: str, dtype: str = "f32") -> str:
    t = f"tensor<4x16x{dtype}>"
    m = f"memref<4x16x{dtype}>"
    return tile_kernel(
        f"""    %x = pto.view %a[%row, 0] : {m} -> {t}
    %y = pto.{op} %x : {t}
    pto.assemble %y into %out[%row, 0] : {t}, {m}""",
        f"%a: {m}, %out: {m}",
    )


RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 16)).astype(F32)
POS = (np.abs(X) + F32(0.1)).astype(F32)


def f64_to_f32(fn, x):
    with np.errstate(all="ignore"):
        return fn(x.astype(F64)).astype(F32)


@pytest.mark.parametrize(
    "op, x, expected",
    [
        ("neg", X, -X),
        ("abs", X, np.abs(X)),
        ("relu", X, np.where(X > 0, X, F32(0))),
        ("exp", X, f64_to_f32(np.exp, X)),
        ("log", POS, f64_to_f32(np.log, POS)),
        ("sqrt", POS, f64_to_f32(np.sqrt, POS)),
        ("rsqrt", POS, f64_to_f32(lambda v: 1 / np.sqrt(v), POS)),
        ("reciprocal", X, f64_to_f32(lambda v: 1 / v, X)),
        ("tanh", X, f64_to_f32(np.tanh, X)),
        ("sigmoid", X, f64_to_f32(lambda v: 1 / (1 + np.exp(-v)), X)),
    ],
)
def test_unary_f32(op, x, expected):
    out = run_both(unary_program(op), {"a": x})["out"]
    np.testing.assert_array_equal(out, expected)


def test_erf_f32():
    out = run_both(unary_program("erf"), {"a": X})["out"]
    expected = np.vectorize(math.erf)(X.astype(F64)).astype(F32)
    np.testing.assert_allclose(out, expected, rtol=2**-23, atol=0)


def test_unary_bf16_rounds_once():
    x = X.astype(BF16)
    out = run_both(unary_program("exp", "bf16"), {"a": x})["out"]
    assert out.dtype == BF16
    np.testing.assert_array_equal(out, np.exp(x.astype(F64)).astype(F32).astype(BF16))


def binary_program(op: str, lhs: str, rhs: str, result: str, *, scalar: str | None = None) -> str:
    """`out = op(a, b)` with a / b of the given tile shapes (`4x16`, `1x16`, `4x1`)."""
    ml, mr, mo = (f"memref<{s}xf32>" for s in (lhs, rhs, result))
    tl, tr, to = (f"tensor<{s}xf32>" for s in (lhs, rhs, result))
    if scalar is not None:
        return tile_kernel(
            f"""    %x = pto.view %a[0, 0] : {ml} -> {tl}
    %s = arith.constant {scalar} : f32
    %y = pto.{op} %x, %s : {tl}, f32 -> {to}
    pto.assemble %y into %out[0, 0] : {to}, {mo}""",
            f"%a: {ml}, %out: {mo}",
        )
    return tile_kernel(
        f"""    %x = pto.view %a[0, 0] : {ml} -> {tl}
    %z = pto.view %b[0, 0] : {mr} -> {tr}
    %y = pto.{op} %x, %z : {tl}, {tr} -> {to}
    pto.assemble %y into %out[0, 0] : {to}, {mo}""",
        f"%a: {ml}, %b: {mr}, %out: {mo}",
    )


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(
    "shapes", [("4x16", "4x16"), ("4x16", "1x16"), ("4x16", "4x1"), ("1x16", "4x1")]
)
def test_binary_broadcast(op, shapes):
    lhs, rhs = shapes
    a = RNG.standard_normal(tuple(int(s) for s in lhs.split("x"))).astype(F32)
    b = (RNG.standard_normal(tuple(int(s) for s in rhs.split("x"))) + 3).astype(F32)
    out = run_both(binary_program(op, lhs, rhs, "4x16"), {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(out, BINARY[op](a, b))


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_scalar_is_rounded_to_f32(op):
    # 0.1 is not a float32: the constant is f32(0.1), not the double.
    out = run_both(binary_program(op, "4x16", "4x16", "4x16", scalar="0.1"), {"a": X})["out"]
    np.testing.assert_array_equal(out, BINARY[op](X, F32(0.1)))


def test_pow():
    out = run_both(binary_program("pow", "4x16", "4x16", "4x16"), {"a": POS, "b": X})["out"]
    np.testing.assert_array_equal(out, np.power(POS.astype(F64), X.astype(F64)).astype(F32))


def test_bf16_add_computes_in_f32_and_rounds_once():
    a = RNG.standard_normal((4, 16)).astype(BF16)
    b = RNG.standard_normal((4, 16)).astype(BF16)
    text = binary_program("add", "4x16", "4x16", "4x16").replace("xf32", "xbf16")
    out = run_both(text, {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(out, (a.astype(F32) + b.astype(F32)).astype(BF16))


@pytest.mark.parametrize(
    "op, fn",
    [
        ("eq", np.equal),
        ("ne", np.not_equal),
        ("lt", np.less),
        ("le", np.less_equal),
        ("gt", np.greater),
        ("ge", np.greater_equal),
    ],
)
def test_compare(op, fn):
    a = np.round(RNG.standard_normal((4, 16))).astype(F32)
    b = np.round(RNG.standard_normal((4, 16))).astype(F32)
    text = tile_kernel(
        f"""    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %z = pto.view %b[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %y = pto.{op} %x, %z : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xi1>
    pto.assemble %y into %out[0, 0] : tensor<4x16xi1>, memref<4x16xi1>""",
        "%a: memref<4x16xf32>, %b: memref<4x16xf32>, %out: memref<4x16xi1>",
    )
    out = run_both(text, {"a": a, "b": b})["out"]
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, fn(a, b))


def test_where_and_full():
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %zero = arith.constant 0.0 : f32
    %c = pto.gt %x, %zero : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
    %two = arith.constant 2.5 : f32
    %f = pto.full %two : f32 -> tensor<4x16xf32>
    %y = pto.where %c, %x, %f : tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
    pto.assemble %y into %out[0, 0] : tensor<4x16xf32>, memref<4x16xf32>""",
        "%a: memref<4x16xf32>, %out: memref<4x16xf32>",
    )
    out = run_both(text, {"a": X})["out"]
    np.testing.assert_array_equal(out, np.where(X > 0, X, F32(2.5)))


def reduce_program(op: str, dim: int, keepdim: bool, valid: str = "") -> str:
    shape = [4, 16]
    res = list(shape)
    if keepdim:
        res[dim] = 1
    else:
        del res[dim]
    r = "x".join(map(str, res))
    valid_part = f" valid [{valid}]" if valid else ""
    return tile_kernel(
        f"""    %x = pto.view %a[0, 0]{valid_part} : memref<4x16xf32> -> tensor<4x16xf32>
    %y = pto.{op} %x, {dim}{" keepdim" if keepdim else ""} : tensor<4x16xf32> -> tensor<{r}xf32>
    pto.assemble %y into %out[{", ".join("0" for _ in res)}] : tensor<{r}xf32>, memref<{r}xf32>""",
        f"%a: memref<4x16xf32>, %out: memref<{r}xf32>",
    )


@pytest.mark.parametrize("op, fn", [("sum", np.sum), ("amax", np.max), ("amin", np.min)])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(op, fn, dim, keepdim):
    out = run_both(reduce_program(op, dim, keepdim), {"a": X})["out"]
    np.testing.assert_array_equal(out, fn(X.astype(F64), axis=dim, keepdims=keepdim).astype(F32))


def test_sum_of_a_tail_tile_covers_only_the_valid_region():
    # rows 0..2 and columns 0..9 are valid; the sum over dim 1 must ignore columns 10..15
    out = run_both(reduce_program("sum", 1, True, valid="3, 10"), {"a": X})["out"]
    expected = X[:3, :10].astype(F64).sum(axis=1, keepdims=True).astype(F32)
    np.testing.assert_array_equal(out[:3], expected)
    # the tail row is not valid, so the assemble leaves it as it was (zero)
    np.testing.assert_array_equal(out[3], [0])


def matmul_program(
    a: str, b: str, r: str, flags: str = "", bias: str | None = None, dt: str = "f32"
) -> str:
    ta, tb, tr = f"tensor<{a}x{dt}>", f"tensor<{b}x{dt}>", f"tensor<{r}xf32>"
    ma, mb, mr = f"memref<{a}x{dt}>", f"memref<{b}x{dt}>", f"memref<{r}xf32>"
    bias_args = f", %c: memref<{bias}xf32>" if bias else ""
    bias_view = (
        f"\n    %z = pto.view %c[0, 0] : memref<{bias}xf32> -> tensor<{bias}xf32>" if bias else ""
    )
    bias_use = " bias %z" if bias else ""
    bias_type = f", tensor<{bias}xf32>" if bias else ""
    return tile_kernel(
        f"""    %x = pto.view %a[0, 0] : {ma} -> {ta}
    %y = pto.view %b[0, 0] : {mb} -> {tb}{bias_view}
    %m = pto.matmul %x, %y{bias_use}{flags} : {ta}, {tb}{bias_type} -> {tr}
    pto.assemble %m into %out[0, 0] : {tr}, {mr}""",
        f"%a: {ma}, %b: {mb}{bias_args}, %out: {mr}",
    )


def ref_matmul(a, b):
    return (a.astype(F64) @ b.astype(F64)).astype(F32)


@pytest.mark.parametrize("a_trans", [False, True])
@pytest.mark.parametrize("b_trans", [False, True])
def test_matmul_transposes(a_trans, b_trans):
    a = RNG.standard_normal((4, 8)).astype(F32)
    b = RNG.standard_normal((8, 16)).astype(F32)
    a_in = a.T.copy() if a_trans else a
    b_in = b.T.copy() if b_trans else b
    flags = (" a_trans" if a_trans else "") + (" b_trans" if b_trans else "")
    sa = "x".join(map(str, a_in.shape))
    sb = "x".join(map(str, b_in.shape))
    out = run_both(matmul_program(sa, sb, "4x16", flags), {"a": a_in, "b": b_in})["out"]
    np.testing.assert_array_equal(out, ref_matmul(a, b))


def test_matmul_bf16_accumulates_wide_and_adds_bias_in_f32():
    a = RNG.standard_normal((4, 64)).astype(BF16)
    b = RNG.standard_normal((64, 16)).astype(BF16)
    c = RNG.standard_normal((1, 16)).astype(F32)
    out = run_both(
        matmul_program("4x64", "64x16", "4x16", bias="1x16", dt="bf16"), {"a": a, "b": b, "c": c}
    )["out"]
    np.testing.assert_array_equal(out, ref_matmul(a, b) + c)


def test_matmul_contracts_only_the_valid_k():
    a = RNG.standard_normal((4, 8)).astype(F32)
    b = RNG.standard_normal((8, 16)).astype(F32)
    text = matmul_program("4x8", "8x16", "4x16").replace(
        "%x = pto.view %a[0, 0] :", "%x = pto.view %a[0, 0] valid [4, 5] :"
    )
    out = run_both(text, {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(out, ref_matmul(a[:, :5], b[:5]))


@pytest.mark.parametrize(
    "mode, fn",
    [
        ("floor", np.floor),
        ("ceil", np.ceil),
        ("trunc", np.trunc),
        ("rint", np.rint),
        ("none", np.trunc),
    ],
)
def test_cast_f32_to_i32_modes(mode, fn):
    x = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7] * 2] * 4, F32)
    text = tile_kernel(
        f"""    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %y = pto.cast %x mode {mode} : tensor<4x16xf32> -> tensor<4x16xi32>
    pto.assemble %y into %out[0, 0] : tensor<4x16xi32>, memref<4x16xi32>""",
        "%a: memref<4x16xf32>, %out: memref<4x16xi32>",
    )
    out = run_both(text, {"a": x})["out"]
    np.testing.assert_array_equal(out, fn(x).astype(np.int32))


def test_cast_round_is_half_away_from_zero():
    x = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6] * 2] * 4, F32)
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %y = pto.cast %x mode round sat : tensor<4x16xf32> -> tensor<4x16xi8>
    pto.assemble %y into %out[0, 0] : tensor<4x16xi8>, memref<4x16xi8>""",
        "%a: memref<4x16xf32>, %out: memref<4x16xi8>",
    )
    out = run_both(text, {"a": x})["out"]
    expected = np.sign(x) * np.floor(np.abs(x) + 0.5)
    np.testing.assert_array_equal(out, expected.astype(np.int8))


def layout_program(body: str, a: str, out: str) -> str:
    return tile_kernel(body, f"%a: memref<{a}xf32>, %out: memref<{out}xf32>")


def test_reshape_transpose_unsqueeze_expand():
    x = RNG.standard_normal((4, 16)).astype(F32)
    text = layout_program(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %r = pto.reshape %x : tensor<4x16xf32> -> tensor<8x8xf32>
    %t = pto.transpose %r, 0, 1 : tensor<8x8xf32> -> tensor<8x8xf32>
    %u = pto.unsqueeze %t, 0 : tensor<8x8xf32> -> tensor<1x8x8xf32>
    %e = pto.expand_clone %u : tensor<1x8x8xf32> -> tensor<3x8x8xf32>
    pto.assemble %e into %out[0, 0, 0] : tensor<3x8x8xf32>, memref<3x8x8xf32>""",
        "4x16",
        "3x8x8",
    )
    out = run_both(text, {"a": x})["out"]
    np.testing.assert_array_equal(out, np.broadcast_to(x.reshape(8, 8).T, (3, 8, 8)))


def test_concat_and_tile_views():
    x = RNG.standard_normal((4, 16)).astype(F32)
    text = layout_program(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %l = pto.view %x[0, 0] : tensor<4x16xf32> -> tensor<4x8xf32>
    %h = pto.view %x[0, 8] : tensor<4x16xf32> -> tensor<4x8xf32>
    %n = pto.neg %h : tensor<4x8xf32>
    %c = pto.concat dim 1, %n, %l : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
    %d = pto.concat dim 0, %c, %x : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
    pto.assemble %d into %out[0, 0] : tensor<8x16xf32>, memref<8x16xf32>""",
        "4x16",
        "8x16",
    )
    out = run_both(text, {"a": x})["out"]
    np.testing.assert_array_equal(
        out, np.concatenate([np.concatenate([-x[:, 8:], x[:, :8]], 1), x], 0)
    )


@pytest.mark.parametrize(
    "mode, start, step",
    [(1, 0, 2), (2, 1, 2), (3, 0, 4), (4, 1, 4), (5, 2, 4), (6, 3, 4), (7, 0, 1)],
)
def test_gathermask(mode, start, step):
    n = 16 // step
    text = layout_program(
        f"""    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %g = pto.gathermask %x, {mode} : tensor<4x16xf32> -> tensor<4x{n}xf32>
    pto.assemble %g into %out[0, 0] : tensor<4x{n}xf32>, memref<4x{n}xf32>""",
        "4x16",
        f"4x{n}",
    )
    out = run_both(text, {"a": X})["out"]
    np.testing.assert_array_equal(out, X[:, start::step])


def test_index_select():
    idx = np.array([3, 0, 0, 2, 1], np.int32)
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %j = pto.view %i_in[0] : memref<5xi32> -> tensor<5xi32>
    %g = pto.index_select %x, 0, %j : tensor<4x16xf32>, tensor<5xi32> -> tensor<5x16xf32>
    pto.assemble %g into %out[0, 0] : tensor<5x16xf32>, memref<5x16xf32>""",
        "%a: memref<4x16xf32>, %i_in: memref<5xi32>, %out: memref<5x16xf32>",
    )
    out = run_both(text, {"a": X, "i_in": idx})["out"]
    np.testing.assert_array_equal(out, X[idx])


def test_gather_with_an_index_of_the_inputs_rank():
    # The dialect's result shape rule (index shape replaces dim `dim`) and the numpy
    # semantics (torch.gather: the result has the index's shape) agree when the index
    # has a size-1 dim at `dim`... and only there; that case is what this checks.
    idx = np.array([[2], [0], [3], [1]], np.int32)
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    %j = pto.view %i_in[0, 0] : memref<4x1xi32> -> tensor<4x1xi32>
    %g = pto.gather %x, 1, %j : tensor<4x16xf32>, tensor<4x1xi32> -> tensor<4x4x1xf32>
    pto.assemble %g into %out[0, 0, 0] : tensor<4x4x1xf32>, memref<4x4x1xf32>""",
        "%a: memref<4x16xf32>, %i_in: memref<4x1xi32>, %out: memref<4x4x1xf32>",
    )
    with pytest.raises(TileirError, match="pto.gather"):
        run(parse_module(text), {"a": X, "i_in": idx})


def test_topk_values_indices_and_ties():
    x = np.array([[1, 5, 5, 2, 9, 9, 0, 3]] * 2, F32)
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<2x8xf32> -> tensor<2x8xf32>
    %v, %j = pto.topk %x, 3 : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x3xi32>
    pto.assemble %v into %vals[0, 0] : tensor<2x3xf32>, memref<2x3xf32>
    pto.assemble %j into %idx[0, 0] : tensor<2x3xi32>, memref<2x3xi32>""",
        "%a: memref<2x8xf32>, %vals: memref<2x3xf32>, %idx: memref<2x3xi32>",
    )
    out = run_both(text, {"a": x})
    np.testing.assert_array_equal(out["vals"], [[9, 9, 5]] * 2)
    # ties: the lower index first
    np.testing.assert_array_equal(out["idx"], [[4, 5, 1]] * 2)


# --------------------------------------------------------------------------- tails


def test_tail_view_is_zero_outside_valid_and_assemble_writes_only_valid():
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] valid [2, 3] : memref<4x16xf32> -> tensor<4x4xf32>
    %one = arith.constant 1.0 : f32
    %y = pto.add %x, %one : tensor<4x4xf32>, f32 -> tensor<4x4xf32>
    pto.assemble %y into %tail[0, 0] : tensor<4x4xf32>, memref<4x4xf32>
    %w = pto.reshape %y valid [4, 4] : tensor<4x4xf32> -> tensor<4x4xf32>
    pto.assemble %w into %whole[0, 0] : tensor<4x4xf32>, memref<4x4xf32>""",
        "%a: memref<4x16xf32>, %tail: memref<4x4xf32>, %whole: memref<4x4xf32>",
    )
    sentinel = np.full((4, 4), -7, F32)
    out = run_both(text, {"a": X, "tail": sentinel})
    expected_tail = sentinel.copy()
    expected_tail[:2, :3] = X[:2, :3] + F32(1)
    np.testing.assert_array_equal(out["tail"], expected_tail)
    # what the partial tile holds: data + 1 in the valid region, 0 + 1 outside it
    expected_whole = np.ones((4, 4), F32)
    expected_whole[:2, :3] = X[:2, :3] + F32(1)
    np.testing.assert_array_equal(out["whole"], expected_whole)


ROWS_TAIL = """
pto.kernel @k(%x: memref<10x32xf32>, %out: memref<10x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %c3 = arith.constant 3 : index
  pto.loop %i = %c0 to %c3 step %c1 name "tiles" idx_name "i" unroll [2, 1] {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %c10, %row : index
    %rows = arith.minsi %left, %c4 : index
    %t = pto.view %x[%row, 0] valid [%rows, 32] : memref<10x32xf32> -> tensor<4x32xf32>
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %m = pto.mul %t, %two : tensor<4x32xf32>, f32 -> tensor<4x32xf32>
    %a = pto.add %m, %one : tensor<4x32xf32>, f32 -> tensor<4x32xf32>
    %s = pto.sum %a, 1 keepdim : tensor<4x32xf32> -> tensor<4x1xf32>
    %b = pto.sub %a, %s : tensor<4x32xf32>, tensor<4x1xf32> -> tensor<4x32xf32>
    pto.assemble %b into %out[%row, 0] : tensor<4x32xf32>, memref<10x32xf32>
  }
}
"""


def test_tail_loop_matches_numpy_and_runs_batched():
    x = RNG.standard_normal((10, 32)).astype(F32)
    out = run_both(ROWS_TAIL, {"x": x}, batched=True)["out"]
    a = x * F32(2) + F32(1)
    s = a.astype(F64).sum(axis=1, keepdims=True).astype(F32)
    np.testing.assert_array_equal(out, a - s)


def test_inputs_are_not_modified():
    x = RNG.standard_normal((10, 32)).astype(F32)
    out0 = np.full((10, 32), 5, F32)
    keep_x, keep_out = x.copy(), out0.copy()
    run(parse_module(ROWS_TAIL), {"x": x, "out": out0})
    np.testing.assert_array_equal(x, keep_x)
    np.testing.assert_array_equal(out0, keep_out)


# --------------------------------------------------------------------------- loops and state

ACCUMULATE = """
pto.kernel @accumulate(%x: memref<32x64xf32>, %out: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %acc = pto.tensor "acc" : memref<4x64xf32>
  pto.loop %i = %c0 to %c8 step %c1 name "blocks" idx_name "i" {
    %row = arith.muli %i, %c4 : index
    %t = pto.view %x[%row, 0] : memref<32x64xf32> -> tensor<4x64xf32>
    %first = pto.is_loop_begin %i
    scf.if %first {
      pto.assemble %t into %acc[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    } else {
      %a = pto.view %acc[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
      %s = pto.add %a, %t : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %s into %acc[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    }
    %last = pto.is_loop_end %i
    scf.if %last {
      %a = pto.view %acc[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %a into %out[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    }
  }
}
"""


def test_loop_carried_workspace_with_begin_and_end():
    x = RNG.standard_normal((32, 64)).astype(F32)
    out = run_both(ACCUMULATE, {"x": x}, batched=False)["out"]
    expected = x[0:4].copy()
    for b in range(1, 8):
        expected = expected + x[4 * b : 4 * b + 4]
    np.testing.assert_array_equal(out, expected)


def chunk_program(factors: str, lb: int, ub: int, step: int, n: int) -> str:
    """Writes each chunk's length at its start index and marks the begin / end chunks."""
    return f"""
pto.kernel @chunks(%lens: memref<{n}xi32>, %flags: memref<{n}xi32>) {{
  %lb = arith.constant {lb} : index
  %ub = arith.constant {ub} : index
  %st = arith.constant {step} : index
  pto.loop_unroll %i, %n = %lb to %ub step %st unroll [{factors}] {{
    %len = arith.index_cast %n : index to i32
    %t = pto.full %len : i32 -> tensor<1xi32>
    pto.assemble %t into %lens[%i] : tensor<1xi32>, memref<{n}xi32>
    %b = pto.is_loop_begin %i
    %e = pto.is_loop_end %i
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    %zero = arith.constant 0 : i32
    %fb = arith.select %b, %one, %zero : i32
    %fe = arith.select %e, %two, %zero : i32
    %f = arith.addi %fb, %fe : i32
    %ft = pto.full %f : i32 -> tensor<1xi32>
    pto.assemble %ft into %flags[%i] : tensor<1xi32>, memref<{n}xi32>
  }}
}}
"""


@pytest.mark.parametrize(
    "factors, lb, ub, step, chunks",
    [
        ("8, 4, 2, 1", 0, 13, 1, [(0, 8), (8, 4), (12, 1)]),
        ("3, 2, 1", 0, 7, 1, [(0, 3), (3, 3), (6, 1)]),
        ("3, 2, 1", 0, 8, 1, [(0, 3), (3, 3), (6, 2)]),
        ("4, 1", 2, 15, 2, [(2, 4), (10, 1), (12, 1), (14, 1)]),
    ],
)
def test_loop_unroll_chunks_cascade(factors, lb, ub, step, chunks):
    out = run_both(chunk_program(factors, lb, ub, step, 16), {})
    expected_lens = np.zeros(16, np.int32)
    expected_flags = np.zeros(16, np.int32)
    for k, (start, length) in enumerate(chunks):
        expected_lens[start] = length
        expected_flags[start] = (k == 0) + 2 * (k == len(chunks) - 1)
    np.testing.assert_array_equal(out["lens"], expected_lens)
    np.testing.assert_array_equal(out["flags"], expected_flags)


def test_loop_unroll_list_must_end_in_one():
    with pytest.raises(TileirError, match="end in 1"):
        parse_module(chunk_program("3, 2", 0, 7, 1, 16))


def test_loop_state_in_a_plain_loop():
    text = chunk_program("1", 0, 5, 1, 16).replace("pto.loop_unroll %i, %n =", "pto.loop %i =")
    text = text.replace(" unroll [1]", "").replace(
        "%len = arith.index_cast %n", "%len = arith.index_cast %i"
    )
    out = run_both(text, {})
    np.testing.assert_array_equal(out["flags"][:6], [1, 0, 0, 0, 2, 0])
    np.testing.assert_array_equal(out["lens"][:6], [0, 1, 2, 3, 4, 0])


def test_nested_loops_and_stage_transfer():
    text = """
pto.kernel @k(%x: memref<6x8xf32>, %out: memref<6x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c3 step %c1 {
    %r = arith.muli %i, %c2 : index
    pto.loop %j = %c0 to %c2 step %c1 {
      %c = arith.muli %j, %c4 : index
      %t = pto.view %x[%r, %c] : memref<6x8xf32> -> tensor<2x4xf32>
      %y = pto.stage vector {
        %e = pto.exp %t : tensor<2x4xf32>
        pto.yield %e : tensor<2x4xf32>
      } -> tensor<2x4xf32>
      %z = pto.transfer %y from vector to cube : tensor<2x4xf32>
      pto.assemble %z into %out[%r, %c] : tensor<2x4xf32>, memref<6x8xf32>
    }
  }
}
"""
    x = RNG.standard_normal((6, 8)).astype(F32)
    out = run_both(text, {"x": x})["out"]
    np.testing.assert_array_equal(out, f64_to_f32(np.exp, x))


# --------------------------------------------------------------------------- dynamic shapes

DYNAMIC = """
pto.kernel @dyn(%x: memref<?x16xf32>, %out: memref<?x16xf32>) attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %s = memref.dim %x, %c0 : memref<?x16xf32>
  %n = arith.ceildivsi %s, %c4 : index
  pto.loop %i = %c0 to %n step %c1 {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %s, %row : index
    %rows = arith.minsi %left, %c4 : index
    %t = pto.view %x[%row, 0] valid [%rows, 16] : memref<?x16xf32> -> tensor<4x16xf32>
    %e = pto.neg %t : tensor<4x16xf32>
    pto.assemble %e into %out[%row, 0] : tensor<4x16xf32>, memref<?x16xf32>
  }
}
"""


@pytest.mark.parametrize("rows", [1, 4, 9, 17])
def test_dynamic_dims(rows):
    x = RNG.standard_normal((rows, 16)).astype(F32)
    out = run_both(DYNAMIC, {"x": x})["out"]
    np.testing.assert_array_equal(out, -x)


def test_random_inputs_have_declared_dtypes_and_seeded_values():
    module = parse_module(DYNAMIC)
    a = random_inputs(module, seed=3, dims={"S": 7})
    b = random_inputs(module, seed=3, dims={"S": 7})
    assert list(a) == ["x"] and a["x"].shape == (7, 16) and a["x"].dtype == F32
    np.testing.assert_array_equal(a["x"], b["x"])
    # the kernel's plan gives the same arrays (the CLI passes the plan it has)
    c = random_inputs(compile_kernel(module), seed=3, dims={"S": 7})
    assert c["x"].tobytes() == a["x"].tobytes()
    ints = random_inputs(parse_module(index_select_bf16_program()), seed=0)
    assert ints["i_in"].dtype == np.int32
    assert ints["i_in"].min() >= 0 and ints["i_in"].max() < 4


def index_select_bf16_program() -> str:  # noqa: PT004 - a helper, not a test
    return tile_kernel(
        """    %x = pto.view %a[0, 0] : memref<4x16xbf16> -> tensor<4x16xbf16>
    %j = pto.view %i_in[0] : memref<5xi32> -> tensor<5xi32>
    %g = pto.index_select %x, 0, %j : tensor<4x16xbf16>, tensor<5xi32> -> tensor<5x16xbf16>
    pto.assemble %g into %out[0, 0] : tensor<5x16xbf16>, memref<5x16xbf16>""",
        "%a: memref<4x16xbf16>, %i_in: memref<5xi32>, %out: memref<5x16xbf16>",
    )


# --------------------------------------------------------------------------- errors

OOB = """
pto.kernel @k(%x: memref<10x32xf32>, %out: memref<10x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c3 = arith.constant 3 : index
  pto.loop %i = %c0 to %c3 step %c1 {
    %row = arith.muli %i, %c4 : index
    %t = pto.view %x[%row, 0] : memref<10x32xf32> -> tensor<4x32xf32>
    pto.assemble %t into %out[%row, 0] : tensor<4x32xf32>, memref<10x32xf32>
  }
}
"""


def test_out_of_bounds_view_names_op_location_and_offsets():
    with pytest.raises(TileirError) as e:
        run(parse_module(OOB, "oob.mlir"), {"x": np.zeros((10, 32), F32)})
    msg = str(e.value)
    assert msg.startswith("oob.mlir:9:") and "pto.view" in msg and "[8, 0]" in msg


def test_out_of_bounds_assemble():
    text = OOB.replace(
        "%t = pto.view %x[%row, 0] : memref<10x32xf32> -> tensor<4x32xf32>",
        "%t = pto.view %x[0, 0] : memref<10x32xf32> -> tensor<4x32xf32>",
    )
    with pytest.raises(TileirError) as e:
        run(parse_module(text, "oob.mlir"), {"x": np.zeros((10, 32), F32)})
    assert (
        "oob.mlir:10:" in str(e.value)
        and "pto.assemble" in str(e.value)
        and "[8, 0]" in str(e.value)
    )


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({}, "missing input 'x'"),
        ({"x": np.zeros((10, 32), F64)}, "dtype float64, expected float32"),
        ({"x": np.zeros((10, 31), F32)}, "shape \\[10, 31\\]"),
        ({"x": np.zeros((10, 32), F32), "y": np.zeros(1)}, "no argument 'y'"),
    ],
)
def test_input_errors(inputs, message):
    with pytest.raises(TileirError, match=message):
        run(parse_module(ROWS_TAIL, "k.mlir"), inputs)


def test_inconsistent_dynamic_dims_are_named():
    text = DYNAMIC.replace(
        "%out: memref<?x16xf32>)", "%out: memref<?x16xf32>, %y: memref<?x16xf32>)"
    ).replace('out = ["S"]}', 'out = ["S"], y = ["S"]}')
    with pytest.raises(TileirError, match="dynamic dim S is 4 in 'x' but 5 in 'y'"):
        run(parse_module(text), {"x": np.zeros((4, 16), F32), "y": np.zeros((5, 16), F32)})


def test_unknown_op_is_named_with_its_location():
    text = OOB.replace(
        "    %row = arith.muli %i, %c4 : index\n",
        "    %row = arith.muli %i, %c4 : index\n    %bad = memref.alloc() : memref<4xf32>\n",
    )
    with pytest.raises(
        TileirError,
        match=r"u.mlir:9:\d+: error: the numpy back end does not support 'memref.alloc'",
    ):
        run(parse_module(text, "u.mlir"), {"x": np.zeros((10, 32), F32)})


def test_several_kernels_need_a_name():
    module = parse_module(ROWS_TAIL + ACCUMULATE)
    with pytest.raises(TileirError, match="2 kernels"):
        run(module, {})
    x = np.ones((32, 64), F32)
    assert run(module, {"x": x}, kernel="accumulate")["out"][0, 0] == 8


# --------------------------------------------------------------------------- valid shapes through layout ops


def valid_program(body: str, out: str) -> str:
    """`%x` is a 4x8 tile of `a` whose valid region is 3x5; `body` ends in `%r`."""
    return tile_kernel(
        f"""    %x = pto.view %a[0, 0] valid [3, 5] : memref<4x8xf32> -> tensor<4x8xf32>
{body}
    pto.assemble %r into %out[{", ".join("0" for _ in out.split("x"))}] : tensor<{out}xf32>, memref<{out}xf32>""",
        f"%a: memref<4x8xf32>, %out: memref<{out}xf32>",
    )


A48 = np.arange(1, 33, dtype=F32).reshape(4, 8)


def only_valid(shape, valid, values):
    """An output that starts at -1 with `values` written in its valid region."""
    out = np.full(shape, -1, F32)
    region = tuple(slice(0, v) for v in valid)
    out[region] = values[region]
    return out


def run_valid(body, out_shape):
    out = "x".join(map(str, out_shape))
    return run_both(valid_program(body, out), {"a": A48, "out": np.full(out_shape, -1, F32)})["out"]


def test_valid_through_transpose():
    got = run_valid("    %r = pto.transpose %x, 0, 1 : tensor<4x8xf32> -> tensor<8x4xf32>", (8, 4))
    np.testing.assert_array_equal(got, only_valid((8, 4), (5, 3), A48.T))


def test_valid_through_unsqueeze_and_expand_clone():
    got = run_valid(
        """    %u = pto.unsqueeze %x, 0 : tensor<4x8xf32> -> tensor<1x4x8xf32>
    %r = pto.expand_clone %u : tensor<1x4x8xf32> -> tensor<2x4x8xf32>""",
        (2, 4, 8),
    )
    np.testing.assert_array_equal(
        got, only_valid((2, 4, 8), (2, 3, 5), np.broadcast_to(A48, (2, 4, 8)))
    )


def test_valid_through_concat_stops_at_the_first_partial_operand():
    # along dim 1: [x (5 of 8 valid) | x]: only the first 5 columns are valid
    got = run_valid(
        "    %r = pto.concat dim 1, %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>",
        (4, 16),
    )
    np.testing.assert_array_equal(got, only_valid((4, 16), (3, 5), np.concatenate([A48, A48], 1)))


def test_valid_through_gathermask_counts_kept_elements():
    # mode 2 keeps columns 1, 3, 5, 7: of the 5 valid columns, 1 and 3 are kept
    got = run_valid("    %r = pto.gathermask %x, 2 : tensor<4x8xf32> -> tensor<4x4xf32>", (4, 4))
    np.testing.assert_array_equal(got, only_valid((4, 4), (3, 2), A48[:, 1::2]))


def test_topk_ranks_only_the_valid_part():
    # x's valid columns are 1..5 of each row: the top 3 of those, values and indices
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] valid [3, 5] : memref<4x8xf32> -> tensor<4x8xf32>
    %v, %j = pto.topk %x, 3 : tensor<4x8xf32> -> tensor<4x3xf32>, tensor<4x3xi32>
    pto.assemble %v into %vals[0, 0] : tensor<4x3xf32>, memref<4x3xf32>
    pto.assemble %j into %idx[0, 0] : tensor<4x3xi32>, memref<4x3xi32>""",
        "%a: memref<4x8xf32>, %vals: memref<4x3xf32>, %idx: memref<4x3xi32>",
    )
    out = run_both(text, {"a": A48})
    np.testing.assert_array_equal(out["vals"][:3], A48[:3, [4, 3, 2]])
    np.testing.assert_array_equal(out["idx"][:3], [[4, 3, 2]] * 3)
    np.testing.assert_array_equal(out["vals"][3], [0, 0, 0])  # not valid: not written


def test_valid_through_elementwise_broadcast():
    # a 4x1 column with 2 valid rows times x (3x5 valid): 2x5 valid
    text = tile_kernel(
        """    %x = pto.view %a[0, 0] valid [3, 5] : memref<4x8xf32> -> tensor<4x8xf32>
    %c = pto.view %a[0, 0] valid [2, 1] : memref<4x8xf32> -> tensor<4x1xf32>
    %r = pto.mul %x, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    pto.assemble %r into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>""",
        "%a: memref<4x8xf32>, %out: memref<4x8xf32>",
    )
    got = run_both(text, {"a": A48, "out": np.full((4, 8), -1, F32)})["out"]
    np.testing.assert_array_equal(got, only_valid((4, 8), (2, 5), A48 * A48[:, :1]))


def test_scf_if_with_results_and_tensor_dim():
    # even rows are doubled, odd rows negated; tensor.dim gives the tile's column count
    text = """
pto.kernel @k(%x: memref<4x8xf32>, %out: memref<4x8xf32>, %n: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %r = arith.remsi %i, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    %y = scf.if %even -> (tensor<1x8xf32>) {
      %d = pto.add %t, %t : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
      scf.yield %d : tensor<1x8xf32>
    } else {
      %m = pto.neg %t : tensor<1x8xf32>
      scf.yield %m : tensor<1x8xf32>
    }
    pto.assemble %y into %out[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
    %cols = tensor.dim %y, %c1 : tensor<1x8xf32>
    %ci = arith.index_cast %cols : index to i32
    %ct = pto.full %ci : i32 -> tensor<1xi32>
    pto.assemble %ct into %n[0] : tensor<1xi32>, memref<1xi32>
  }
}
"""
    x = RNG.standard_normal((4, 8)).astype(F32)
    out = run_both(text, {"x": x})
    np.testing.assert_array_equal(out["out"], np.where(np.arange(4)[:, None] % 2 == 0, x + x, -x))
    np.testing.assert_array_equal(out["n"], [8])


def test_loop_with_dynamic_bounds_and_step():
    text = DYNAMIC.replace(
        "%n = arith.ceildivsi %s, %c4 : index",
        "%n = arith.ceildivsi %s, %c4 : index\n  %two = arith.constant 2 : index",
    )
    text = text.replace("pto.loop %i = %c0 to %n step %c1", "pto.loop %i = %c1 to %n step %two")
    x = RNG.standard_normal((20, 16)).astype(F32)
    out = run_both(text, {"x": x})["out"]
    expected = np.zeros_like(x)
    for i in (1, 3):  # tiles 1 and 3 of 5
        expected[4 * i : 4 * i + 4] = -x[4 * i : 4 * i + 4]
    np.testing.assert_array_equal(out, expected)
