"""An IR transformation script: build a kernel with xDSL's Builder, walk it, rewrite it
with a RewritePattern, verify it and print it.

Run: `python examples/transform_script.py`
"""

from __future__ import annotations

from collections import Counter

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, MemRefType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tileir import parse_module, print_module
from tileir.dialect import pto

ROWS, COLS = 13, 64


def build_kernel() -> ModuleOp:
    """`out[i] = x[i] * x[i]` over rows, written with the builders of the `pto` ops."""
    mem = MemRefType(f32, [ROWS, COLS])
    row = TensorType(f32, [1, COLS])
    kernel = pto.KernelOp("square", [("x", mem), ("out", mem)])
    x, out = kernel.body.block.args
    b = Builder(InsertPoint.at_end(kernel.body.block))
    c0, c1, cn = (
        b.insert(arith.ConstantOp.from_int_and_width(v, IndexType())) for v in (0, 1, ROWS)
    )
    loop = b.insert(pto.LoopOp(c0, cn, c1, Block(arg_types=[IndexType()]), name="rows"))
    lb = Builder(InsertPoint.at_end(loop.body.block))
    (i,) = loop.body.block.args
    tile = lb.insert(pto.ViewOp(x, [i, 0], row))
    sq = lb.insert(pto.MulOp(tile, tile, row))
    lb.insert(pto.AssembleOp(sq, out, [i, 0]))
    lb.insert(pto.YieldOp())
    b.insert(pto.YieldOp())
    return ModuleOp(Region(Block([kernel])))


class SquareToPow(RewritePattern):
    """`x * x` -> `pow(x, 2.0)`: a rewrite a user might try on their own kernels."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pto.MulOp, rewriter: PatternRewriter) -> None:
        if op.lhs is not op.rhs:
            return
        two = arith.ConstantOp(FloatAttr(2.0, f32))
        rewriter.replace(op, [two, pto.PowOp(op.lhs, two, op.result.type)])


def main() -> None:
    module = build_kernel()
    module.verify()
    # Text round trip: what a script reads back is the same module.
    module = parse_module(print_module(module), "square.mlir")
    print("ops before:", dict(Counter(op.name for op in module.walk())))
    PatternRewriteWalker(SquareToPow()).rewrite_module(module)
    module.verify()
    print("ops after: ", dict(Counter(op.name for op in module.walk())))
    print(print_module(module))


if __name__ == "__main__":
    main()
