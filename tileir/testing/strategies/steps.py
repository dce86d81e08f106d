"""The generator's op steps: each adds one op on tiles of the pool (`_GenCore.step`)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    f32,
    i1,
)
from xdsl.ir import SSAValue

from tileir.dialect import pto
from tileir.testing.strategies.core import (
    BINARY_FLOAT,
    BINARY_INT,
    COMPARES,
    DTYPES,
    FLOAT_DTYPES,
    MAX_ELEMENTS,
    NEEDS_NONNEGATIVE,
    REDUCES,
    TO_INT_MODES,
    UNARY_FLOAT,
    UNARY_INT,
    _count,
    _GenCore,
    _tensor,
    _Tile,
)


class _Steps(_GenCore):
    """One method per step kind (`STEP_KINDS`): `_<kind>(pool)`."""

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
