"""The generator's kernel templates (`block`, `rows`, `accumulate`, `softmax`, `cube`)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from xdsl.ir import SSAValue

from tileir.dialect import pto
from tileir.testing.strategies.core import FLOAT_DTYPES, REDUCES, _tensor, _Tile
from tileir.testing.strategies.steps import _Steps


class _Templates(_Steps):
    """One method per template: the whole body of a kernel."""

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
