"""The PyPTO writer's expressions keep the IR's tree (issue 18, item 2) and dynamic
shapes it cannot spell are located errors (item 3).

The oracle is Python's own parser: an expression the writer prints, parsed back with
`ast`, must have the tree it was printed from. Generated trees cover every operator the
writer prints (index arithmetic, comparisons, the scalar-left tile operators) with
names, positive and negative numbers as leaves.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.pypto.emitter import emit_module
from tileir.bindings import index as index_ops
from tileir.diagnostics import TileirError
from tileir.ir import parse_module

Tree = str | int | tuple[str, "Tree", "Tree"]

OPERATORS = sorted(index_ops.PRECEDENCE)
_AST_BINOP = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
_AST_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

leaves = st.one_of(st.sampled_from(["a", "b", "i", "n"]), st.integers(-9, 9))
trees = st.recursive(
    leaves,
    lambda sub: st.tuples(st.sampled_from(OPERATORS), sub, sub),
    max_leaves=12,
)


def write(tree: Tree) -> index_ops.Expr:
    """The tree printed the way the writer prints it."""
    if isinstance(tree, str):
        return tree, index_ops.ATOM
    if isinstance(tree, int):
        return index_ops.number(repr(tree))
    sym, lhs, rhs = tree
    return index_ops.binary(sym, write(lhs), write(rhs))


def read(node: ast.expr) -> Tree:
    """The tree Python reads (a minus sign on a number literal is part of the number)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    ):
        return -node.operand.value
    if isinstance(node, ast.BinOp):
        return (_AST_BINOP[type(node.op)], read(node.left), read(node.right))
    if isinstance(node, ast.Compare):
        assert len(node.ops) == 1, f"a chained comparison: {ast.unparse(node)}"
        return (_AST_CMP[type(node.ops[0])], read(node.left), read(node.comparators[0]))
    raise AssertionError(f"unexpected node {ast.dump(node)}")


@given(trees)
def test_printed_expressions_parse_back_to_their_tree(tree: Tree) -> None:
    text, _ = write(tree)
    assert read(ast.parse(text, mode="eval").body) == tree, text


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (("*", ("<", "i", 1), "t"), "(i < 1) * t"),
        (("-", "a", ("-", "b", "c")), "a - (b - c)"),
        (("-", ("-", "a", "b"), "c"), "a - b - c"),
        (("**", -2, "k"), "(-2) ** k"),
        (("**", "a", ("**", "b", "c")), "a ** (b ** c)"),
        (("<", ("<", "a", "b"), "c"), "(a < b) < c"),
        (("+", "i", -1), "i + (-1)"),
        (("*", ("+", "a", "b"), "c"), "(a + b) * c"),
        (("+", ("*", "a", "b"), "c"), "a * b + c"),
    ],
)
def test_parentheses_only_where_needed(tree: Tree, text: str) -> None:
    assert write(tree)[0] == text


PRECEDENCE_KERNEL = """
pto.kernel @k(%x: memref<2x4xf32>, %out: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 {
    %p = arith.cmpi slt, %i, %c1 : index
    %t = pto.view %x[0, 0] : memref<2x4xf32> -> tensor<2x4xf32>
    %s = pto.mul %p, %t : i1, tensor<2x4xf32> -> tensor<2x4xf32>
    pto.assemble %s into %out[0, 0] : tensor<2x4xf32>, memref<2x4xf32>
  }
}
"""


def test_comparison_times_tile_keeps_its_parentheses() -> None:
    """Issue 18's case: `cmpi slt, %i, %c1` then `mul %p, %t` was written
    `s = i < 1 * t` (which Python reads as `i < (1 * t)`)."""
    source = emit_module(parse_module(PRECEDENCE_KERNEL, "prec.mlir"))
    (stmt,) = [
        s
        for s in ast.walk(ast.parse(source))
        if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "s"
    ]
    assert read(stmt.value) == ("*", ("<", "i", 1), "t"), ast.unparse(stmt)


@pytest.mark.parametrize(
    ("op", "result"),
    [
        ("pto.expand_clone %t : tensor<?x1xf32> -> tensor<?x64xf32>", "tensor<?x64xf32>"),
        ("pto.reshape %t inplace : tensor<?x1xf32> -> tensor<?xf32>", "tensor<?xf32>"),
    ],
)
def test_dynamic_shape_without_sizes_is_a_located_error(op: str, result: str) -> None:
    """Issue 18 item 3: these gave `error: StopIteration` with no location. The op holds
    no SSA size for its `?` dims, so there is nothing to write them with."""
    text = f"""
pto.kernel @k(%x: memref<?x1xf32>, %out: memref<?x1xf32>) attributes {{dynamic_dims = {{x = ["S"], out = ["S"]}}}} {{
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x1xf32>
  %v = pto.view %x[0, 0] sizes(%n) : memref<?x1xf32> -> tensor<?x1xf32>
  %t = pto.exp %v : tensor<?x1xf32>
  %e = {op}
}}
"""
    with pytest.raises(TileirError) as info:
        emit_module(parse_module(text, "dyn.mlir"))
    message = str(info.value)
    assert message.startswith("dyn.mlir:7:3: error: "), message
    assert f"dynamic result type {result}" in message
