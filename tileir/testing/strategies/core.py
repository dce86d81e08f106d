"""The random kernel generator's state and plumbing, and the tables of what it draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tileir.dialect import pto
from tileir.dialect.dtypes import BY_SHORT
from tileir.testing.scalars import int_expr

FLOAT_DTYPES = ("f32", "f16", "bf16")
DTYPES = ("f32", "f16", "bf16", "i32")
SIZES = (1, 2, 3, 4, 5, 7, 8, 13, 16)
"""Dim sizes: 1, primes and non-multiples of the tile sizes; the first shrinks best."""
TILE_ROWS = (1, 2, 4, 3, 8)
TEMPLATES = ("block", "rows", "accumulate", "softmax", "cube")
TEMPLATE_WEIGHTS = {"block": 2, "rows": 2}
"""The general templates hold most op kinds; the others are fixed recurrences."""
UNROLL_FACTORS = (2, 3, 4, 8)
LABELS = ("rope", "softmax", "rmsnorm", "linear", "quant", "dequant", "gelu")
SCALARS = (2.0, 0.5, -1.0, 3.0, -0.25, 1.5)
MAX_ELEMENTS = 1024
"""A generated op never makes a tile larger than this, to keep interpretation fast."""

UNARY_FLOAT: tuple[type[pto.UnaryOp], ...] = (
    pto.NegOp,
    pto.AbsOp,
    pto.ExpOp,
    pto.SqrtOp,
    pto.RsqrtOp,
    pto.LogOp,
    pto.TanhOp,
    pto.ErfOp,
    pto.SigmoidOp,
    pto.ReciprocalOp,
    pto.ReluOp,
)
UNARY_INT: tuple[type[pto.UnaryOp], ...] = (pto.NegOp, pto.AbsOp, pto.ReluOp)
NEEDS_NONNEGATIVE = (pto.SqrtOp, pto.RsqrtOp, pto.LogOp)
"""Applied to `abs(x)`: a chain of NaNs compares equal to anything a pass makes of it."""
# sub first: it is in most real kernels (x - max, x*cos - y*sin) and the one binary op
# whose operand order every rewrite can get wrong, so it gets hypothesis' first-choice bias.
BINARY_FLOAT: tuple[type[pto.BinaryOp], ...] = (
    pto.SubOp,
    pto.AddOp,
    pto.MulOp,
    pto.DivOp,
    pto.MaximumOp,
    pto.MinimumOp,
)
BINARY_INT: tuple[type[pto.BinaryOp], ...] = (
    pto.SubOp,
    pto.AddOp,
    pto.MulOp,
    pto.MaximumOp,
    pto.MinimumOp,
)
COMPARES: tuple[type[pto.CompareOp], ...] = (
    pto.LtOp,
    pto.LeOp,
    pto.GtOp,
    pto.GeOp,
    pto.EqOp,
    pto.NeOp,
)
REDUCES: tuple[type[pto.ReduceOp], ...] = (pto.SumOp, pto.AmaxOp, pto.AminOp)
TO_INT_MODES = ("rint", "none", "round", "floor", "ceil", "trunc")

STEP_KINDS = (
    "binary",
    "unary",
    "scalar",
    "where",
    "reduce",
    "cast",
    "transpose",
    "reshape",
    "concat",
    "unsqueeze",
    "expand",
    "full",
    "matmul",
    "spill",
    "pow",
    "gathermask",
    "topk",
    "index",
)
"""The kinds of op a chain step may add; `modules(steps=...)` restricts them."""
STEP_WEIGHTS = {
    "unary": 6,
    "binary": 3,
    "cast": 3,
    "scalar": 2,
    "where": 3,
    "reduce": 2,
    "index": 2,
}
"""Roughly in proportion to how many ops / modes a kind covers, so that every op shows
up in a few hundred programs."""


@dataclass(frozen=True)
class _Tile:
    """A tile value and what the generator knows about it statically."""

    value: SSAValue
    shape: tuple[int, ...]
    dtype: str
    partial: frozenset[int] = frozenset()
    """Dims whose valid size may be smaller than the tile (a tail)."""
    rows: bool = False
    """Dim 0 is the enclosing loop's row tile: the tile can be assembled at the
    iteration's row offset (its valid rows are the loop's tail rows)."""

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES


def _tensor(shape: Sequence[int], dtype: str) -> TensorType:
    return TensorType(BY_SHORT[dtype].mlir, list(shape))


def _memref(shape: Sequence[int], dtype: str) -> MemRefType:
    return MemRefType(BY_SHORT[dtype].mlir, list(shape))


def _count(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


@dataclass
class _Loop:
    """The row loop being generated: what a row tile's offset and tail are."""

    offset: SSAValue
    tile_rows: int
    total_rows: SSAValue | int
    """The tensor's row count (an SSA value when it is a `?` dim)."""
    symbol: str | None


@dataclass
class _GenCore:
    """The generator's state and plumbing: builder, arguments, fresh names, scalars,
    views, row loops and ifs; the op steps (`steps._Steps`) and the kernel templates
    (`templates._Templates`) build on it."""

    draw: Callable[[st.SearchStrategy[Any]], Any]
    max_ops: int
    steps: tuple[str, ...]
    dtypes: tuple[str, ...]
    int_arith: bool = True
    """Whether scalar operands may be computed by integer arithmetic (`scalars`)."""
    block: Block = field(default_factory=Block)
    args: list[tuple[str, MemRefType]] = field(default_factory=list)
    dynamic: dict[str, list[str]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    loop: _Loop | None = None

    def __post_init__(self) -> None:
        self.builder = Builder(InsertPoint.at_end(self.block))

    # ---------------------------------------------------------------- plumbing

    def fresh(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return f"{prefix}{n}"

    def insert(self, op: Operation) -> Operation:
        return self.builder.insert(op)

    def value(self, op: Operation) -> SSAValue:
        self.insert(op)
        return op.results[0]

    @contextmanager
    def at(self, block: Block) -> Iterator[None]:
        saved = self.builder
        self.builder = Builder(InsertPoint.at_end(block))
        try:
            yield
        finally:
            self.builder = saved

    def add_arg(self, prefix: str, type: MemRefType, symbols: Sequence[str] = ()) -> SSAValue:
        name = self.fresh(prefix)
        self.args.append((name, type))
        if symbols:
            self.dynamic[name] = list(symbols)
        return self.block.insert_arg(type, len(self.block.args))

    def index(self, v: int) -> SSAValue:
        return self.value(arith.ConstantOp(IntegerAttr(v, IndexType())))

    def scalar(self, dtype: str) -> SSAValue:
        """A scalar operand for a `dtype` tile: a constant, or (one in three) computed
        by scalar integer arithmetic (`tileir.testing.scalars`)."""
        if self.int_arith and self.chance(3):
            if dtype in FLOAT_DTYPES:
                cast = arith.SIToFPOp if self.draw(st.booleans()) else arith.UIToFPOp
                return self.value(cast(self.int_expr(IntegerType(8)), f32))
            return self.int_expr(BY_SHORT[dtype].mlir)
        v = self.draw(st.sampled_from(SCALARS))
        if dtype in FLOAT_DTYPES:
            return self.value(arith.ConstantOp(FloatAttr(v, f32)))
        return self.value(arith.ConstantOp(IntegerAttr(int(v * 2), BY_SHORT[dtype].mlir)))

    def int_expr(self, target: Attribute) -> SSAValue:
        leaves = [self.loop.offset] if self.loop is not None else []
        return int_expr(self.draw, self.value, target, leaves)

    def chance(self, one_in: int) -> bool:
        """True about once in `one_in` draws; shrinks to False."""
        return self.draw(st.integers(0, one_in - 1)) == one_in - 1

    def size(self, limit: int = 16) -> int:
        return self.draw(st.sampled_from([s for s in SIZES if s <= limit]))

    def workspace(self, shape: Sequence[int], dtype: str) -> SSAValue:
        """A `pto.tensor` at the top of the kernel (one buffer, not one per iteration);
        every second one has its first dim a `?` sized by an index value (`sizes`),
        decided without a draw so that the programs drawn are otherwise unchanged."""
        if self.counters.get("ws", 0) % 2 == 0:
            op = pto.TensorOp(self.fresh("ws"), _memref(shape, dtype))
            self.builder.insert(op, InsertPoint.at_start(self.block))
            return op.result
        size = arith.ConstantOp(IntegerAttr(shape[0], IndexType()))
        op = pto.TensorOp(
            self.fresh("ws"), _memref([DYNAMIC_INDEX, *shape[1:]], dtype), [size.result]
        )
        self.builder.insert(op, InsertPoint.at_start(self.block))
        self.builder.insert(size, InsertPoint.at_start(self.block))
        return op.result

    def settings(self) -> None:
        """Sometimes a `set_semantic_label` or `set_vec_tile_shapes` before an op."""
        if self.chance(6):
            self.insert(pto.SetSemanticLabelOp(self.draw(st.sampled_from(LABELS))))
        if self.chance(6):
            rank = self.draw(st.integers(1, 2))
            shape = [self.draw(st.sampled_from((1, 8, 16, 64))) for _ in range(rank)]
            self.insert(pto.SetVecTileShapesOp(shape))

    def view(
        self,
        source: SSAValue,
        shape: Sequence[int],
        dtype: str,
        offsets: Sequence[int | SSAValue] | None = None,
        valid: Sequence[int | SSAValue] | None = None,
    ) -> SSAValue:
        offs = list(offsets) if offsets is not None else [0] * len(shape)
        return self.value(pto.ViewOp(source, offs, _tensor(shape, dtype), valid_shape=valid))

    def input_tile(self, shape: Sequence[int], dtype: str, tail: bool = False) -> _Tile:
        """A new kernel argument read whole, or (tail) with a static valid prefix of rows."""
        arg = self.add_arg("x", _memref(shape, dtype))
        if tail and shape[0] > 1:
            rows = self.draw(st.integers(1, shape[0] - 1))
            valid = [rows, *shape[1:]]
            return _Tile(
                self.view(arg, shape, dtype, valid=valid), tuple(shape), dtype, frozenset({0})
            )
        return _Tile(self.view(arg, shape, dtype), tuple(shape), dtype)

    # ---------------------------------------------------------------- chain steps

    def pick(
        self, pool: Sequence[_Tile], ok: Callable[[_Tile], bool] = lambda t: True
    ) -> _Tile | None:
        """A tile of the pool, most recent first (so chains stay connected when shrunk)."""
        cands = [t for t in reversed(pool) if ok(t) and t.dtype != "i1"]
        if not cands:
            return None
        return cands[self.draw(st.integers(0, len(cands) - 1))]

    def step(self, pool: list[_Tile], kinds: Sequence[str] | None = None) -> _Tile | None:
        """Add one op on tiles of `pool`; the new tile is appended to it."""
        kinds = [k for k in (kinds or self.steps) if k in self.steps] or list(self.steps)
        weighted = [k for k in kinds for _ in range(STEP_WEIGHTS.get(k, 1))]
        kind = self.draw(st.sampled_from(weighted))
        self.settings()
        tile = getattr(self, f"_{kind}")(pool)
        if tile is not None:
            pool.append(tile)
        return tile

    def chain(self, pool: list[_Tile], n: int | None = None) -> None:
        n = self.draw(st.integers(1, self.max_ops)) if n is None else n
        for _ in range(n):
            self.step(pool)

    # ---------------------------------------------------------------- outputs

    def output(self, tile: _Tile) -> None:
        """Assemble `tile` into a new output argument (at the loop's row offset when
        `tile` is a row tile)."""
        loop = self.loop
        if loop is not None and tile.rows:
            total = loop.total_rows
            shape = [total if isinstance(total, int) else DYNAMIC_INDEX, *tile.shape[1:]]
            symbols = [loop.symbol] if loop.symbol else []
            out = self.add_arg("out", _memref(shape, tile.dtype), symbols)
            offsets: list[int | SSAValue] = [loop.offset] + [0] * (len(shape) - 1)
        else:
            out = self.add_arg("out", _memref(tile.shape, tile.dtype))
            offsets = [0] * len(tile.shape)
        self.insert(pto.AssembleOp(tile.value, out, offsets))

    def outputs(self, pool: list[_Tile], ok: Callable[[_Tile], bool] = lambda t: True) -> None:
        """One to three outputs, always including the most recent eligible tile."""
        cands = [t for t in pool if ok(t) and t.dtype != "i1"]
        assert cands, "every template keeps an eligible tile"
        chosen = [cands[-1]]
        for _ in range(self.draw(st.integers(0, 2))):
            chosen.append(cands[self.draw(st.integers(0, len(cands) - 1))])
        for t in chosen:
            self.output(t)

    # ---------------------------------------------------------------- loops

    def row_loop(
        self, rows: int, tile_rows: int, dynamic: bool, x: SSAValue, batches: int = 1
    ) -> tuple[pto.LoopOp, SSAValue | int, int | SSAValue]:
        """A `pto.loop` over the row tiles of `x`; returns the loop, the row count and
        the tail's valid row count (an int when there is no tail).

        With `batches > 1`, `x` holds `batches` blocks of `rows` rows, and the row loop
        is nested in a loop over the blocks (each block has its own tail). The caller
        closes the loops with `close_loops`."""
        total: SSAValue | int = rows
        if dynamic:
            total = self.value(memref.DimOp(x, self.index(0)))
        base: SSAValue | None = None
        self.open_loops: list[Block] = []
        if batches > 1:
            outer = pto.LoopOp(
                self.index(0),
                self.index(batches),
                self.index(1),
                name=self.fresh("batch"),
                idx_name="b",
                unroll_list=self.unroll_list(),
            )
            self.insert(outer)
            self.open_loops.append(outer.body.block)
            self.builder = Builder(InsertPoint.at_end(outer.body.block))
            base = self.value(arith.MuliOp(outer.induction_var, self.index(rows)))
        by_offset = self.draw(st.booleans())
        unroll = self.unroll_list()
        c0, c1, ct = self.index(0), self.index(1), self.index(tile_rows)
        total_v = total if isinstance(total, SSAValue) else self.index(rows)
        if by_offset:
            lb, ub, step = c0, total_v, ct
        else:
            n_tiles = (
                self.value(arith.CeilDivSIOp(total_v, ct))
                if dynamic
                else self.index(-(-rows // tile_rows))
            )
            lb, ub, step = c0, n_tiles, c1
        loop = pto.LoopOp(lb, ub, step, name=self.fresh("loop"), idx_name="i", unroll_list=unroll)
        self.insert(loop)
        self.open_loops.append(loop.body.block)
        with self.at(loop.body.block):
            i = loop.induction_var
            local = i if by_offset else self.value(arith.MuliOp(i, self.index(tile_rows)))
            offset = local if base is None else self.value(arith.AddiOp(base, local))
            has_tail = dynamic or rows % tile_rows != 0
            valid: int | SSAValue = tile_rows
            if has_tail:
                left = self.value(arith.SubiOp(total_v, local))
                valid = self.value(arith.MinSIOp(left, self.index(tile_rows)))
        out_rows = total if isinstance(total, SSAValue) else rows * batches
        self.loop = _Loop(offset, tile_rows, out_rows, "S" if dynamic else None)
        return loop, total, valid

    def close_loops(self) -> None:
        """Terminate the loops `row_loop` opened (innermost first) and continue after
        the outermost."""
        for block in reversed(self.open_loops):
            block.add_op(pto.YieldOp())
        self.builder = Builder(InsertPoint.at_end(self.block))
        self.open_loops = []
        self.loop = None

    def unroll_list(self) -> list[int] | None:
        factors = self.draw(st.sets(st.sampled_from(UNROLL_FACTORS), max_size=3))
        return pto.normalize_unroll_list(sorted(factors)) if factors else None

    def row_tile(self, x: SSAValue, cols: int, dtype: str, valid: int | SSAValue) -> _Tile:
        assert self.loop is not None
        tail = not isinstance(valid, int)
        v = self.view(
            x,
            (self.loop.tile_rows, cols),
            dtype,
            offsets=[self.loop.offset, 0],
            valid=[valid, cols] if tail else None,
        )
        return _Tile(
            v, (self.loop.tile_rows, cols), dtype, frozenset({0}) if tail else frozenset(), True
        )

    def loop_input(
        self, dtype: str, cols: int, nested: bool = False
    ) -> tuple[SSAValue, int, int, bool, int]:
        """The tensor a row loop walks: `rows` (or `?`) x `cols`, or `batches` blocks
        of `rows` rows when `nested`."""
        rows = self.size()
        tile_rows = self.draw(st.sampled_from(TILE_ROWS))
        dynamic = self.chance(3)
        batches = self.draw(st.integers(2, 3)) if nested and not dynamic and self.chance(3) else 1
        shape = [DYNAMIC_INDEX if dynamic else rows * batches, cols]
        x = self.add_arg("x", _memref(shape, dtype), ["S"] if dynamic else [])
        return x, rows, tile_rows, dynamic, batches

    def if_op(self, cond: SSAValue, with_else: bool) -> tuple[Block, Block | None]:
        then_block, else_block = Block(), Block() if with_else else None
        op = scf.IfOp(
            cond,
            [],
            Region(then_block),
            Region(else_block) if else_block is not None else None,
        )
        self.insert(op)
        return then_block, else_block

    @staticmethod
    def close(*blocks: Block | None) -> None:
        for b in blocks:
            if b is not None:
                b.add_op(scf.YieldOp())

    # ---------------------------------------------------------------- templates

    def finish(self, name: str) -> pto.KernelOp:
        self.block.add_op(pto.YieldOp())
        region = Region(self.block)
        return pto.KernelOp(name, self.args, region, dynamic_dims=self.dynamic or None)
