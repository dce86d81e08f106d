"""Hypothesis strategies for random, well-typed, verifying `pto` programs.

A pass that "preserves semantics" has to be checked on programs nobody wrote by hand;
these strategies write them. Every module they produce verifies, runs on the numpy back
end, and stays small (a few ops on tiles of at most a few hundred elements), so that
hundreds of them run in seconds. Sizes and op counts are drawn first and shrink toward
small values, so a failing program shrinks to a short one.

```python
from hypothesis import given
from tileir.testing import check_pass, modules

@given(modules())
def test_my_pass(module):
    check_pass(MyPass(), module)
```

What the programs contain (each kernel is one of these *templates*, chosen at random):

- `block`: straight-line code on whole tensors: elementwise chains (tile-tile with
  broadcasting, tile-scalar with the scalar on either side, pow), compare + where,
  reductions (any dim, keepdim or not), casts with random rounding modes and
  saturation, reshape / transpose / concat / unsqueeze / expand_clone, full, matmul,
  gathermask, topk, index_select / gather (indices from a topk, so always in range),
  spills through a workspace (write then read back; a workspace's first dim is
  sometimes a `?` with its size an index operand), static tail views (`valid`).
- `rows`: a `pto.loop` over row tiles of a tensor whose row count is static or a `?`
  dim (`memref.dim`), with a `valid` tail when the tile size does not divide it, a
  random normalised `unroll` list, and either a tile-index or a row-offset loop index;
  sometimes nested in a loop over blocks of rows (each block with its own tail).
- `accumulate`: a loop-carried read-modify-write of a workspace (`pto.tensor`),
  initialised under `scf.if pto.is_loop_begin` or before the loop, and written out
  under `scf.if pto.is_loop_end` or after the loop.
- `softmax`: the online-softmax recurrence (running max and rescaled running sum in
  two workspaces), two outputs.
- `cube`: a matmul (a_trans / b_trans / out dtype at random) followed by vector ops,
  straight-line or over row tiles.

`set_semantic_label`, `set_vec_tile_shapes` and `set_cube_tile_shapes` appear before
some ops. Use `features(module)` to see what a module contains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
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
    ModuleOp,
    TensorType,
    f32,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tileir.dialect import pto
from tileir.dialect.dtypes import BY_SHORT
from tileir.testing.inputs import FILLS, dynamic_symbols, find_kernel, random_inputs
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
class _KernelGen:
    """Builds one kernel with xDSL's `Builder`, drawing every choice from hypothesis."""

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

    def _unary(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        op_cls = self.draw(st.sampled_from(UNARY_FLOAT if a.is_float else UNARY_INT))
        x = a.value
        if op_cls in NEEDS_NONNEGATIVE:
            x = self.value(pto.AbsOp(x))
        return replace(a, value=self.value(op_cls(x)))

    def _partner(self, pool: list[_Tile], a: _Tile) -> _Tile | None:
        """A tile of a's dtype and rank that broadcasts with a to a's shape or larger."""

        def fits(t: _Tile) -> bool:
            # not a itself: `a - a` hides which operand is which
            if t.value == a.value or t.dtype != a.dtype or len(t.shape) != len(a.shape):
                return False
            out = pto.broadcast_shapes(a.shape, t.shape)
            return out is not None and _count(out) <= MAX_ELEMENTS

        return self.pick(pool, fits)

    def _combine_meta(self, a: _Tile, b: _Tile | None, value: SSAValue, dtype: str) -> _Tile:
        if b is None:
            return _Tile(value, a.shape, dtype, a.partial, a.rows)
        shape = pto.broadcast_shapes(a.shape, b.shape)
        assert shape is not None
        rows = any(t.rows and t.shape[0] == shape[0] for t in (a, b))
        partial = frozenset(
            d for t in (a, b) for d in t.partial if t.shape[d] == shape[d] or t.shape[d] != 1
        )
        return _Tile(value, tuple(shape), dtype, partial, rows)

    def _binary(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        b = self._partner(pool, a)
        if b is None:
            return self._scalar(pool)
        op_cls = self.draw(st.sampled_from(BINARY_FLOAT if a.is_float else BINARY_INT))
        lhs, rhs = (a, b) if self.draw(st.booleans()) is False else (b, a)
        shape = pto.broadcast_shapes(lhs.shape, rhs.shape)
        assert shape is not None
        value = self.value(op_cls(lhs.value, rhs.value, _tensor(shape, a.dtype)))
        return self._combine_meta(a, b, value, a.dtype)

    def _scalar(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        op_cls = self.draw(st.sampled_from(BINARY_FLOAT if a.is_float else BINARY_INT))
        c = self.scalar(a.dtype)
        operands = (a.value, c) if not self.chance(3) else (c, a.value)
        value = self.value(op_cls(*operands, _tensor(a.shape, a.dtype)))
        return replace(a, value=value)

    def _where(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        b = self._partner(pool, a)
        cmp_cls = self.draw(st.sampled_from(COMPARES))
        other = b.value if b is not None else self.scalar(a.dtype)
        shape = pto.broadcast_shapes(a.shape, b.shape) if b is not None else a.shape
        assert shape is not None
        if self.int_arith and self.chance(4):  # a condition computed by i1 arithmetic
            cond = self.value(pto.FullOp(self.int_expr(i1), _tensor(shape, "i1")))
        else:
            cond = self.value(cmp_cls(a.value, other, _tensor(shape, "i1")))
        first, second = (a.value, other) if self.draw(st.booleans()) is False else (other, a.value)
        value = self.value(pto.WhereOp(cond, first, second, _tensor(shape, a.dtype)))
        return self._combine_meta(a, b, value, a.dtype)

    def _reduce(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        op_cls = self.draw(st.sampled_from(REDUCES))
        rank = len(a.shape)
        dim = self.draw(st.integers(0, rank - 1))
        if self.chance(3):
            dim -= rank  # the negative spelling of the same dim
        keepdim = self.draw(st.booleans())
        d = dim % rank
        shape = pto.ReduceOp.reduced_shape(a.shape, dim, keepdim) or [1]
        value = self.value(op_cls(a.value, dim, keepdim, _tensor(shape, a.dtype)))
        if keepdim:
            partial = a.partial - {d}
        elif rank == 1:
            partial = frozenset()
        else:
            partial = frozenset(p if p < d else p - 1 for p in a.partial if p != d)
        rows = a.rows and d != 0
        return _Tile(value, tuple(shape), a.dtype, partial, rows)

    def cast_to(self, a: _Tile, dtype: str) -> _Tile:
        """Cast `a` to `dtype` with a random rounding mode (a mode is a no-op where the
        conversion is exact, which is also worth generating) and, to int, saturation."""
        saturate = False
        if a.dtype in FLOAT_DTYPES and dtype == "i32":
            mode = self.draw(st.sampled_from(TO_INT_MODES))
            saturate = self.draw(st.booleans())
        else:
            mode = self.draw(st.sampled_from(pto.CAST_MODES))
        value = self.value(pto.CastOp(a.value, _tensor(a.shape, dtype), mode, saturate))
        return replace(a, value=value, dtype=dtype)

    def _cast(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        targets = [d for d in self.dtypes if d != a.dtype] or [d for d in DTYPES if d != a.dtype]
        return self.cast_to(a, self.draw(st.sampled_from(targets)))

    def _transpose(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: len(t.shape) >= 2)
        if a is None:
            return None
        rank = len(a.shape)
        d0 = self.draw(st.integers(0, rank - 2))
        d1 = self.draw(st.integers(d0 + 1, rank - 1))
        shape = list(a.shape)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        value = self.value(pto.TransposeOp(a.value, d0, d1, _tensor(shape, a.dtype)))
        swap = {d0: d1, d1: d0}
        partial = frozenset(swap.get(p, p) for p in a.partial)
        return _Tile(value, tuple(shape), a.dtype, partial)

    def _reshape(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial)
        if a is None:
            return None
        n = _count(a.shape)
        shapes = {(n,), (1, n), (n, 1), tuple(reversed(a.shape))}
        shapes |= {(k, n // k) for k in (2, 3, 4) if n % k == 0}
        shape = self.draw(st.sampled_from(sorted(shapes)))
        # `inplace` is left to the inplace-reshape pass: its legality depends on the uses.
        value = self.value(pto.ReshapeOp(a.value, _tensor(shape, a.dtype)))
        return _Tile(value, shape, a.dtype)

    def _concat(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial)
        if a is None:
            return None
        dim = self.draw(st.integers(0, len(a.shape) - 1))

        def fits(t: _Tile) -> bool:
            return (
                not t.partial
                and t.dtype == a.dtype
                and len(t.shape) == len(a.shape)
                and all(x == y for k, (x, y) in enumerate(zip(t.shape, a.shape)) if k != dim)
            )

        b = self.pick(pool, fits)
        assert b is not None  # a itself fits
        shape = list(a.shape)
        shape[dim] += b.shape[dim]
        if _count(shape) > MAX_ELEMENTS:
            return None
        parts = [a.value, b.value] if self.draw(st.booleans()) is False else [b.value, a.value]
        value = self.value(pto.ConcatOp(parts, dim, _tensor(shape, a.dtype)))
        return _Tile(value, tuple(shape), a.dtype)

    def _unsqueeze(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial and len(t.shape) < pto.MAX_TILE_RANK)
        if a is None:
            return None
        dim = self.draw(st.integers(0, len(a.shape)))
        shape = list(a.shape)
        shape.insert(dim, 1)
        value = self.value(pto.UnsqueezeOp(a.value, dim, _tensor(shape, a.dtype)))
        return _Tile(value, tuple(shape), a.dtype)

    def _expand(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial and 1 in t.shape)
        if a is None:
            return None
        ones = [d for d, s in enumerate(a.shape) if s == 1]
        d = self.draw(st.sampled_from(ones))
        shape = list(a.shape)
        shape[d] = self.size()
        if _count(shape) > MAX_ELEMENTS:
            return None
        value = self.value(pto.ExpandCloneOp(a.value, _tensor(shape, a.dtype)))
        return _Tile(value, tuple(shape), a.dtype)

    def _full(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool)
        if a is None:
            return None
        # A broadcast partner of a: its shape with some dims set to 1.
        shape = tuple(1 if self.draw(st.booleans()) else s for s in a.shape)
        value = self.value(pto.FullOp(self.scalar(a.dtype), _tensor(shape, a.dtype)))
        return _Tile(value, shape, a.dtype)

    def _matmul(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: t.is_float and len(t.shape) == 2)
        if a is None:
            return None
        a_trans = not a.partial and self.chance(4)
        m, k = (a.shape[1], a.shape[0]) if a_trans else a.shape
        n = self.size()
        b_trans = self.draw(st.booleans())
        if self.chance(3):
            m0, k0, n0 = (self.draw(st.sampled_from((16, 32))) for _ in range(3))
            self.insert(pto.SetCubeTileShapesOp([m0, m0], [k0, k0], [n0, n0]))
        b_shape = (n, k) if b_trans else (k, n)
        b = self.input_tile(b_shape, a.dtype)
        out_dtype = self.draw(st.sampled_from(("f32", a.dtype)))
        value = self.value(
            pto.MatmulOp(
                a.value, b.value, _tensor((m, n), out_dtype), a_trans=a_trans, b_trans=b_trans
            )
        )
        partial = frozenset() if a_trans else a.partial & {0}
        return _Tile(value, (m, n), out_dtype, partial, a.rows and not a_trans)

    def _spill(self, pool: list[_Tile]) -> _Tile | None:
        """Write a tile into a workspace and read it back: a write then a read of the
        same buffer in one block, which a pass must not reorder."""
        a = self.pick(pool)
        if a is None:
            return None
        ws = self.workspace(a.shape, a.dtype)
        zeros = [0] * len(a.shape)
        self.insert(pto.AssembleOp(a.value, ws, zeros))
        # Outside a tail's valid rows the workspace holds older data, so the reloaded
        # tile is whole but no longer tied to the loop's tail rows.
        return _Tile(self.view(ws, a.shape, a.dtype), a.shape, a.dtype)

    def _pow(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: t.is_float)
        if a is None:
            return None
        b = self._partner(pool, a)
        if b is None or self.draw(st.booleans()):
            # a small integral exponent is defined for negative bases too
            c = self.value(arith.ConstantOp(FloatAttr(self.draw(st.sampled_from((2.0, 3.0))), f32)))
            return replace(a, value=self.value(pto.PowOp(a.value, c, _tensor(a.shape, a.dtype))))
        shape = pto.broadcast_shapes(a.shape, b.shape)
        assert shape is not None
        base = self.value(pto.AbsOp(a.value))  # a negative base with a real exponent is NaN
        value = self.value(pto.PowOp(base, b.value, _tensor(shape, a.dtype)))
        return self._combine_meta(a, b, value, a.dtype)

    def _gathermask(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial and t.shape[-1] % 2 == 0)
        if a is None:
            return None
        modes = [m for m in pto.GATHERMASK_MODES if a.shape[-1] % pto.GathermaskOp.stride(m) == 0]
        mode = self.draw(st.sampled_from(modes))
        shape = (*a.shape[:-1], a.shape[-1] // pto.GathermaskOp.stride(mode))
        value = self.value(pto.GathermaskOp(a.value, mode, _tensor(shape, a.dtype)))
        return _Tile(value, shape, a.dtype)

    def topk(self, a: _Tile, dim: int) -> tuple[_Tile, _Tile]:
        """The values and (i32) indices of a random top-k of `a` along `dim`."""
        k = self.draw(st.integers(1, a.shape[dim]))
        largest = self.draw(st.booleans())
        shape = list(a.shape)
        shape[dim] = k
        op = pto.TopkOp(a.value, k, dim, largest, _tensor(shape, a.dtype), _tensor(shape, "i32"))
        self.insert(op)
        return (
            _Tile(op.values, tuple(shape), a.dtype),
            _Tile(op.indices, tuple(shape), "i32"),
        )

    def _topk(self, pool: list[_Tile]) -> _Tile | None:
        a = self.pick(pool, lambda t: not t.partial)
        if a is None:
            return None
        # PyPTO sorts along the last dim only; the back end takes any dim.
        dim = (
            len(a.shape) - 1 if not self.chance(4) else self.draw(st.integers(0, len(a.shape) - 1))
        )
        values, indices = self.topk(a, dim)
        pool.append(indices)
        return values

    def _index(self, pool: list[_Tile]) -> _Tile | None:
        """index_select or gather, with indices from a topk (always in range)."""
        a = self.pick(pool, lambda t: not t.partial)
        if a is None:
            return None
        dim = self.draw(st.integers(0, len(a.shape) - 1))
        n = a.shape[dim]
        if not self.draw(st.booleans()):
            keys = self.input_tile((n,), self.draw(st.sampled_from(FLOAT_DTYPES)))
            _, idx = self.topk(keys, 0)
            shape = (*a.shape[:dim], idx.shape[0], *a.shape[dim + 1 :])
            value = self.value(pto.IndexSelectOp(a.value, dim, idx.value, _tensor(shape, a.dtype)))
            return _Tile(value, shape, a.dtype)
        source = self.pick(
            pool, lambda t: not t.partial and t.shape == a.shape and t.dtype == a.dtype
        )
        assert source is not None  # a itself
        _, idx = self.topk(a, dim)
        value = self.value(pto.GatherOp(source.value, dim, idx.value, _tensor(idx.shape, a.dtype)))
        return _Tile(value, idx.shape, a.dtype)

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

    def template_block(self, first: str | None = None) -> None:
        dtype = self.draw(st.sampled_from(self.dtypes))
        rank = self.draw(st.sampled_from((2, 1, 3)))
        shape = tuple(self.size(16 if rank < 3 else 5) for _ in range(rank))
        pool = [self.input_tile(shape, dtype, tail=self.chance(3))]
        if self.draw(st.booleans()):
            other = tuple(1 if self.chance(3) else s for s in shape)
            pool.append(self.input_tile(other, dtype))
        if first is not None:
            self.step(pool, [first])
        self.chain(pool)
        self.outputs(pool)

    def template_rows(self, first: str | None = None) -> None:
        dtype = self.draw(st.sampled_from(self.dtypes))
        cols = self.size()
        x, rows, tile_rows, dynamic, batches = self.loop_input(dtype, cols, nested=True)
        outer: list[_Tile] = []
        if self.draw(st.booleans()):
            outer.append(self.input_tile((1, cols), dtype))
        if self.chance(2):
            self.insert(pto.SetVecTileShapesOp([tile_rows, cols]))
        loop, _, valid = self.row_loop(rows, tile_rows, dynamic, x, batches)
        with self.at(loop.body.block):
            pool = [*outer, self.row_tile(x, cols, dtype, valid)]
            if first is not None:
                self.step(pool, [first])
            self.chain(pool)
            self.outputs(pool, lambda t: t.rows)
        self.close_loops()

    def template_cube(self) -> None:
        """A matmul first (when allowed), then vector ops, on float tiles."""
        first = "matmul" if "matmul" in self.steps else None
        saved = self.dtypes
        self.dtypes = tuple(d for d in saved if d in FLOAT_DTYPES) or FLOAT_DTYPES
        if self.draw(st.booleans()):
            self.template_rows(first)
        else:
            self.template_block_2d(first)
        self.dtypes = saved

    def template_block_2d(self, first: str | None) -> None:
        dtype = self.draw(st.sampled_from(self.dtypes))
        shape = (self.size(), self.size())
        pool = [self.input_tile(shape, dtype, tail=self.chance(4))]
        if first is not None:
            self.step(pool, [first])
        self.chain(pool)
        self.outputs(pool)

    def template_accumulate(self) -> None:
        dtype = self.draw(st.sampled_from(self.dtypes))
        cols = self.size()
        x, rows, tile_rows, dynamic, _ = self.loop_input(dtype, cols)
        combine = self.draw(st.sampled_from((pto.AddOp, pto.MaximumOp, pto.MinimumOp)))
        over_rows = self.draw(st.booleans())
        pre_init = self.draw(st.booleans())
        end_in_loop = self.draw(st.booleans())
        acc_shape = (1 if over_rows else tile_rows, cols)
        ws = self.workspace(acc_shape, dtype)
        if pre_init:
            init = self.value(pto.FullOp(self.scalar(dtype), _tensor(acc_shape, dtype)))
            self.insert(pto.AssembleOp(init, ws, [0, 0]))
        loop, _, valid = self.row_loop(rows, tile_rows, dynamic, x)
        body = loop.body.block
        with self.at(body):
            pool = [self.row_tile(x, cols, dtype, valid)]
            n = self.draw(st.integers(0, self.max_ops))
            for _ in range(n):
                self.step(pool, ["unary", "scalar", "where", "cast", "spill"])
            r = self.pick(pool, lambda t: t.rows and t.shape == (tile_rows, cols))
            assert r is not None
            if r.dtype != dtype:
                r = self.cast_to(r, dtype)
            if over_rows:
                red = self.draw(st.sampled_from(REDUCES))
                r_val = self.value(red(r.value, 0, True, _tensor(acc_shape, dtype)))
            else:
                r_val = r.value
            acc_t = _tensor(acc_shape, dtype)

            def update() -> None:
                old = self.view(ws, acc_shape, dtype)
                new = self.value(combine(old, r_val, acc_t))
                self.insert(pto.AssembleOp(new, ws, [0, 0]))

            if pre_init:
                update()
            else:
                begin = self.value(pto.IsLoopBeginOp(loop.induction_var))
                then_b, else_b = self.if_op(begin, with_else=True)
                with self.at(then_b):
                    self.insert(pto.AssembleOp(r_val, ws, [0, 0]))
                assert else_b is not None
                with self.at(else_b):
                    update()
                self.close(then_b, else_b)
            self.loop = None
            if end_in_loop:
                end = self.value(pto.IsLoopEndOp(loop.induction_var))
                then_b, _ = self.if_op(end, with_else=False)
                with self.at(then_b):
                    self.finish_accumulator(ws, acc_shape, dtype)
                self.close(then_b)
            body.add_op(pto.YieldOp())
        if not end_in_loop:
            self.finish_accumulator(ws, acc_shape, dtype)

    def finish_accumulator(self, ws: SSAValue, shape: tuple[int, ...], dtype: str) -> None:
        pool = [_Tile(self.view(ws, shape, dtype), shape, dtype)]
        for _ in range(self.draw(st.integers(0, 2))):
            self.step(pool, ["unary", "scalar", "cast"])
        self.outputs(pool)

    def template_softmax(self) -> None:
        dtypes = [d for d in self.dtypes if d in FLOAT_DTYPES] or list(FLOAT_DTYPES)
        dtype = self.draw(st.sampled_from(dtypes))
        cols = self.size()
        x, rows, tile_rows, dynamic, _ = self.loop_input(dtype, cols)
        stat = (1, cols)
        m_ws, l_ws = self.workspace(stat, "f32"), self.workspace(stat, "f32")
        loop, _, valid = self.row_loop(rows, tile_rows, dynamic, x)
        body = loop.body.block
        t32 = _tensor((tile_rows, cols), "f32")
        s32 = _tensor(stat, "f32")
        with self.at(body):
            t = self.row_tile(x, cols, dtype, valid)
            if dtype != "f32":
                t = replace(t, value=self.value(pto.CastOp(t.value, t32)), dtype="f32")
            m_blk = self.value(pto.AmaxOp(t.value, 0, True, s32))
            begin = self.value(pto.IsLoopBeginOp(loop.induction_var))
            then_b, else_b = self.if_op(begin, with_else=True)
            assert else_b is not None

            def block_sum(m: SSAValue) -> SSAValue:
                e = self.value(pto.ExpOp(self.value(pto.SubOp(t.value, m, t32))))
                return self.value(pto.SumOp(e, 0, True, s32))

            with self.at(then_b):
                self.insert(pto.AssembleOp(m_blk, m_ws, [0, 0]))
                self.insert(pto.AssembleOp(block_sum(m_blk), l_ws, [0, 0]))
            with self.at(else_b):
                m_old = self.view(m_ws, stat, "f32")
                l_old = self.view(l_ws, stat, "f32")
                m_new = self.value(pto.MaximumOp(m_old, m_blk, s32))
                corr = self.value(pto.ExpOp(self.value(pto.SubOp(m_old, m_new, s32))))
                l_new = self.value(
                    pto.AddOp(self.value(pto.MulOp(l_old, corr, s32)), block_sum(m_new), s32)
                )
                self.insert(pto.AssembleOp(m_new, m_ws, [0, 0]))
                self.insert(pto.AssembleOp(l_new, l_ws, [0, 0]))
            self.close(then_b, else_b)
            self.loop = None
            end = self.value(pto.IsLoopEndOp(loop.induction_var))
            then_b, _ = self.if_op(end, with_else=False)
            with self.at(then_b):
                m = _Tile(self.view(m_ws, stat, "f32"), stat, "f32")
                lsum = _Tile(self.view(l_ws, stat, "f32"), stat, "f32")
                self.output(m)
                self.output(lsum)
            self.close(then_b)
            body.add_op(pto.YieldOp())

    def finish(self, name: str) -> pto.KernelOp:
        self.block.add_op(pto.YieldOp())
        region = Region(self.block)
        return pto.KernelOp(name, self.args, region, dynamic_dims=self.dynamic or None)


def _template(g: _KernelGen, kind: str) -> None:
    if kind == "block":
        g.template_block()
    elif kind == "rows":
        g.template_rows()
    elif kind == "accumulate":
        g.template_accumulate()
    elif kind == "softmax":
        g.template_softmax()
    else:
        g.template_cube()


def kernels(
    *,
    name: str = "k",
    templates: Sequence[str] = TEMPLATES,
    dtypes: Sequence[str] = DTYPES,
    steps: Sequence[str] = STEP_KINDS,
    max_ops: int = 6,
    int_arith: bool = True,
) -> st.SearchStrategy[pto.KernelOp]:
    """One random `pto.kernel` (see the module docstring for what it may contain).

    `templates`, `dtypes` and `steps` restrict the choices; `max_ops` bounds the length
    of each op chain (the programs also hold the index math, views and assembles);
    `int_arith=False` keeps scalar operands constant (no `tileir.testing.scalars`
    arithmetic, which PyPTO's index-only scalars cannot spell).
    """
    for what, given, known in (
        ("templates", templates, TEMPLATES),
        ("dtypes", dtypes, DTYPES),
        ("steps", steps, STEP_KINDS),
    ):
        unknown = sorted(set(given) - set(known))
        if unknown or not given:
            raise ValueError(f"unknown {what} {unknown} (choose from {list(known)})")
    if max_ops < 1:
        raise ValueError(f"max_ops must be at least 1, got {max_ops}")
    return _kernels(name, tuple(templates), tuple(dtypes), tuple(steps), max_ops, int_arith)


@st.composite
def _kernels(
    draw: st.DrawFn,
    name: str,
    templates: tuple[str, ...],
    dtypes: tuple[str, ...],
    steps: tuple[str, ...],
    max_ops: int,
    int_arith: bool,
) -> pto.KernelOp:
    g = _KernelGen(draw, max_ops, steps, dtypes, int_arith)
    weighted = [t for t in templates for _ in range(TEMPLATE_WEIGHTS.get(t, 1))]
    _template(g, draw(st.sampled_from(weighted)))
    return g.finish(name)


def modules(
    *,
    templates: Sequence[str] = TEMPLATES,
    dtypes: Sequence[str] = DTYPES,
    steps: Sequence[str] = STEP_KINDS,
    max_ops: int = 6,
    max_kernels: int = 1,
    int_arith: bool = True,
) -> st.SearchStrategy[ModuleOp]:
    """A `builtin.module` of one (up to `max_kernels`) random kernels `@k0`, `@k1`, ...
    that verifies. Keyword arguments as for `kernels`."""
    parts = [
        kernels(
            name=f"k{i}",
            templates=templates,
            dtypes=dtypes,
            steps=steps,
            max_ops=max_ops,
            int_arith=int_arith,
        )
        for i in range(max_kernels)
    ]
    return st.integers(1, max_kernels).flatmap(lambda n: st.tuples(*parts[:n]).map(_module))


def _module(ks: Sequence[pto.KernelOp]) -> ModuleOp:
    module = ModuleOp(list(ks))
    module.verify()
    return module


@st.composite
def inputs_for(
    draw: st.DrawFn,
    module: ModuleOp,
    kernel: str | None = None,
    *,
    max_dynamic_size: int = 24,
) -> dict[str, np.ndarray]:
    """Arrays for every argument of a kernel of `module` (by argument name).

    Draws the `?` sizes (shrinking toward 1), how values are filled (small integers
    first: they are exact in every dtype, so a shrunk failure reads easily) and a seed;
    the arrays come from `random_inputs`, so a failure is reproduced by its seed.
    """
    k = find_kernel(module, kernel)
    sizes = {s: draw(st.integers(1, max_dynamic_size)) for s in dynamic_symbols(k)}
    fill_kind = draw(st.sampled_from(FILLS))
    seed = draw(st.integers(0, 2**32 - 1))
    return random_inputs(module, k.sym_name.data, seed, sizes=sizes, fill_kind=fill_kind)


def _pretty_ir(obj: Operation, p: Any, cycle: bool) -> None:
    from tileir.ir import print_module

    text = print_module(obj) if isinstance(obj, ModuleOp) else str(obj)
    p.text(f"<IR\n{text.rstrip()}\n>")


def _register_pretty_printers() -> None:
    """Show generated modules as MLIR text in hypothesis' reports. Its default, the
    dataclass fields of xDSL ops with their parent links, is unreadable and can take
    minutes to build for one falsifying example."""
    try:
        from hypothesis.vendor.pretty import for_type_by_name
    except ImportError:  # pragma: no cover - a hypothesis without the vendored printer
        return
    for module, name in (
        ("xdsl.dialects.builtin", "ModuleOp"),
        (pto.KernelOp.__module__, "KernelOp"),
    ):
        for_type_by_name(module, name, _pretty_ir)


_register_pretty_printers()


def features(module: ModuleOp) -> set[str]:
    """What a module contains, read from its IR (not from the generator's choices):
    `op:<name>` for every op, and `loop`, `loop:unroll`, `loop:dynamic`, `loop:step`,
    `loop:nested`, `tail`, `tail:dynamic`, `dynamic-dims`, `workspace`,
    `workspace:sized` (a `?` dim with `sizes`), `workspace:rmw`, `if:begin`, `if:end`,
    `outputs:2+`, `broadcast`, `scalar-operand`, `scalar-lhs`, `reduce:keepdim`, `reduce:dropdim`, `reduce:dim0`,
    `reduce:negative-dim`, `cast:<mode>`, `cast:sat`, `dtype:<type>`, `matmul+vector`,
    `matmul:a_trans`, `matmul:b_trans`, `reshape:inplace`, `arith:<result type>` (scalar
    arithmetic by width).

    The coverage test asserts that a fixed number of draws reaches every one.
    """
    out: set[str] = set()
    vector = cube = False
    for op in module.walk():
        out.add(f"op:{op.name}")
        if op.name.startswith("arith.") and not isinstance(op, arith.ConstantOp):
            out.update(f"arith:{r.type}" for r in op.results)
        if isinstance(op, pto.KernelOp):
            written = {
                a.dst
                for a in op.walk()
                if isinstance(a, pto.AssembleOp) and a.dst in op.body.block.args
            }
            if len(written) >= 2:
                out.add("outputs:2+")
            if op.dynamic_dims is not None:
                out.add("dynamic-dims")
            for arg in op.body.block.args:
                assert isinstance(arg.type, MemRefType)
                out.add(f"dtype:{arg.type.get_element_type()}")
        elif isinstance(op, pto.LoopOp):
            out.add("loop")
            if op.unroll_list is not None:
                out.add("loop:unroll")
            if pto.constant_index(op.upper_bound) is None:
                out.add("loop:dynamic")
            if pto.constant_index(op.step) not in (None, 1):
                out.add("loop:step")
            parent = op.parent_op()
            while parent is not None and not isinstance(parent, pto.LoopOp):
                parent = parent.parent_op()
            if parent is not None:
                out.add("loop:nested")
        elif isinstance(op, pto.ViewOp):
            valid = op.mixed_valid_shape
            if valid is not None:
                out.add("tail")
                if any(isinstance(v, SSAValue) for v in valid):
                    out.add("tail:dynamic")
            if isinstance(op.source.owner, pto.TensorOp):
                out.add("workspace")
                if op.source.owner.sizes:
                    out.add("workspace:sized")
                loop = op.parent_op()
                while loop is not None and not isinstance(loop, pto.LoopOp):
                    loop = loop.parent_op()
                if loop is not None and any(
                    isinstance(w, pto.AssembleOp) and w.dst == op.source for w in loop.walk()
                ):
                    out.add("workspace:rmw")
        elif isinstance(op, pto.IsLoopBeginOp):
            out.add("if:begin")
        elif isinstance(op, pto.IsLoopEndOp):
            out.add("if:end")
        elif isinstance(op, pto.BinaryOp):
            vector = True
            types = [v.type for v in (op.lhs, op.rhs)]
            if not all(isinstance(t, TensorType) for t in types):
                out.add("scalar-operand")
                if not isinstance(types[0], TensorType):
                    out.add("scalar-lhs")
            elif types[0] != types[1] and op.result.type.get_element_type() != i1:
                out.add("broadcast")
        elif isinstance(op, pto.ReduceOp):
            out.add("reduce:keepdim" if op.keepdim is not None else "reduce:dropdim")
            if op.dim.value.data % len(op.input.type.get_shape()) == 0:
                out.add("reduce:dim0")
            if op.dim.value.data < 0:
                out.add("reduce:negative-dim")
        elif isinstance(op, pto.CastOp):
            out.add(f"cast:{op.mode.data}")
            if op.satmode is not None:
                out.add("cast:sat")
        elif isinstance(op, pto.MatmulOp):
            cube = True
            if op.a_trans is not None:
                out.add("matmul:a_trans")
            if op.b_trans is not None:
                out.add("matmul:b_trans")
        elif isinstance(op, pto.ReshapeOp) and op.inplace is not None:
            out.add("reshape:inplace")
        elif isinstance(op, pto.UnaryOp | pto.WhereOp):
            vector = True
    if vector and cube:
        out.add("matmul+vector")
    return out


def _has_coarsenable_loop(module: ModuleOp) -> bool:
    from tileir.passes.coarsen import coarsen_report

    return None in coarsen_report(module).values()


def row_loop_modules(
    *, dtypes: Sequence[str] = DTYPES, steps: Sequence[str] = STEP_KINDS, max_ops: int = 6
) -> st.SearchStrategy[ModuleOp]:
    """Modules of one `rows` or `cube` kernel with at least one loop that `coarsen`
    accepts (row blocks, row-independent ops): the programs the pass rewrites, which
    `modules()` makes only now and then."""
    return modules(templates=("rows", "cube"), dtypes=dtypes, steps=steps, max_ops=max_ops).filter(
        _has_coarsenable_loop
    )
