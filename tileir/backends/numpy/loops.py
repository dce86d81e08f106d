"""The numpy rules of the IR's control structure (transfers, stages, `scf.if`, loops)
and the loop batcher, which runs an independent loop as whole-array numpy operations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue

from tileir.backends.numpy import semantics
from tileir.backends.numpy.compiler import (
    Env,
    Step,
    _Compiler,
    _Fallback,
    _IndexList,
    _normalize_valid,
    _rule_for,
    _scalar,
    _sequence,
    _shape,
    _tile_shape,
    rule,
)
from tileir.backends.numpy.scalar_rules import _INT_BINARY, _INT_CASTS, _is_index_like, _width
from tileir.diagnostics import TileirError, error_at
from tileir.dialect import pto


@rule(pto.TransferOp)
def _transfer(c: _Compiler, op: Operation) -> Step:
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = env[a]

    return run


def _yield_copy(c: _Compiler, block: Block, results: Sequence[SSAValue]) -> Step | None:
    term = block.last_op
    if not results:
        return None
    assert term is not None
    pairs = [(c.slot(v), c.slot(res)) for v, res in zip(term.operands, results)]

    def copy(env: Env) -> None:
        for s, t in pairs:
            env[t] = env[s]

    return copy


@rule(pto.StageOp, pto.StitchOp)
def _stage(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.StageOp | pto.StitchOp)
    body = c.block(op.body.block)
    out = _yield_copy(c, op.body.block, op.outputs)
    if out is None:
        return body

    def run(env: Env) -> None:
        body(env)
        out(env)

    return run


@rule(scf.IfOp)
def _if(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, scf.IfOp)
    cond = c.slot(op.cond)

    def branch(region: Any) -> Step:
        if not region.blocks:
            return lambda env: None
        block = region.block
        body = c.block(block)
        out = _yield_copy(c, block, op.output)
        if out is None:
            return body

        def run(env: Env) -> None:
            body(env)
            out(env)

        return run

    then, other = branch(op.true_region), branch(op.false_region)

    def run(env: Env) -> None:
        if env[cond]:
            then(env)
        else:
            other(env)

    return run


def _loop_bounds(c: _Compiler, op: pto._LoopBase) -> Callable[[Env], tuple[int, int, int]]:
    lb, ub, st = c.slot(op.lower_bound), c.slot(op.upper_bound), c.slot(op.step)

    def bounds(env: Env) -> tuple[int, int, int]:
        step = env[st]
        if step <= 0:
            raise error_at(op, f"'{op.name}' step {step} must be positive")
        return env[lb], env[ub], step

    return bounds


@rule(pto.LoopOp)
def _loop(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.LoopOp)
    info = c.new_slot()
    c.loop_slots[op] = (info, -1)
    bounds = _loop_bounds(c, op)
    iv = c.slot(op.induction_var)
    body = c.block(op.body.block)
    batcher = _LoopBatcher.create(c, op, body) if c.vectorize and not c.batch else None

    def run(env: Env) -> None:
        lb, ub, step = bounds(env)
        env[info] = (lb, ub, step)
        if batcher is not None and batcher.try_run(env, lb, ub, step):
            return
        for i in range(lb, ub, step):
            env[iv] = i
            body(env)

    return run


@rule(pto.LoopUnrollOp)
def _loop_unroll(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.LoopUnrollOp)
    info = c.new_slot()
    chunk = c.slot(op.chunk_length)
    c.loop_slots[op] = (info, chunk)
    bounds = _loop_bounds(c, op)
    iv = c.slot(op.induction_var)
    factors = sorted(op.factors, reverse=True)
    body = c.block(op.body.block)

    def run(env: Env) -> None:
        lb, ub, step = bounds(env)
        env[info] = (lb, ub, step)
        i = lb
        while i < ub:
            left = -(-(ub - i) // step)
            n = next((f for f in factors if f <= left), 0)
            if n == 0:
                raise error_at(op, f"no unroll factor of {factors} fits the {left} iterations left")
            env[iv] = i
            env[chunk] = n
            body(env)
            i += n * step

    return run


# --------------------------------------------------------------------------- batching


_BATCHABLE: tuple[type[Operation], ...] = (
    arith.ConstantOp,
    *_INT_BINARY,
    *_INT_CASTS,
    arith.CmpiOp,
    arith.SelectOp,
    memref.DimOp,
    pto.ViewOp,
    pto.AssembleOp,
    pto.CastOp,
    pto.WhereOp,
    pto.FullOp,
    pto.ReshapeOp,
    pto.TransposeOp,
    pto.ConcatOp,
    pto.UnsqueezeOp,
    pto.ExpandCloneOp,
    pto.ViewTypeOp,
    pto.GathermaskOp,
    pto.TransferOp,
    pto.StageOp,
    pto.StitchOp,
    pto.YieldOp,
    pto.SetVecTileShapesOp,
    pto.SetCubeTileShapesOp,
    pto.SetSemanticLabelOp,
    pto.SetOptionsOp,
)

_INDEX_OPS: tuple[type[Operation], ...] = (
    *_INT_BINARY,
    *_INT_CASTS,
    arith.CmpiOp,
    arith.SelectOp,
    memref.DimOp,
    pto.GetTensorDataOp,
)


def _batchable_op(op: Operation) -> bool:
    if isinstance(op, pto.GetTensorDataOp):
        # one element per iteration, gathered at once; of a tile it would be per batch row
        return isinstance(op.source.type, MemRefType)
    if isinstance(op, _INDEX_OPS):
        # batched values are int64 / bool arrays
        return all(_is_index_like(r.type) and _width(r.type) <= 64 for r in op.results)
    if isinstance(op, _BATCHABLE):
        return True
    # Imported here: the bindings and their rules import this module.
    from tileir.backends.numpy.rules import elementwise, reduce
    from tileir.bindings import BY_OP

    binding = BY_OP.get(type(op))
    return binding is not None and binding.numpy in (
        elementwise.unary_rule,
        elementwise.binary_rule,
        reduce.reduce_rule,
    )


def _read_batched(
    src: np.ndarray, offs: Sequence[Any], shape: tuple[int, ...], valid: tuple[int, ...]
) -> np.ndarray:
    """The tiles at `offs` (ints, or arrays with one entry per iteration) stacked on a
    new leading dim: the same values `read_window` gives for each iteration."""
    varying = [d for d, o in enumerate(offs) if isinstance(o, np.ndarray)]
    n = len(offs[varying[0]])
    for d, o in enumerate(offs):
        lo, hi = (int(o.min()), int(o.max())) if isinstance(o, np.ndarray) else (o, o)
        if lo < 0 or hi + valid[d] > src.shape[d]:
            raise _Fallback  # the iteration-by-iteration run reports it
    if len(varying) == 1:
        d = varying[0]
        o = offs[d]
        region = [
            slice(x, x + v) if k != d else slice(None) for k, (x, v) in enumerate(zip(offs, valid))
        ]
        base = int(o[0])
        if valid[d] and np.array_equal(o, base + valid[d] * np.arange(n)):
            region[d] = slice(base, base + n * valid[d])
            slab = src[tuple(region)]
            slab = slab.reshape(slab.shape[:d] + (n, valid[d]) + slab.shape[d + 1 :])
        else:
            idx = o[:, None] + np.arange(valid[d])
            slab = np.take(src[tuple(region)], idx, axis=d)
        data = np.moveaxis(slab, d, 0)
    else:
        data = np.stack(
            [
                src[tuple(slice(int(_at(x, k)), int(_at(x, k)) + v) for x, v in zip(offs, valid))]
                for k in range(n)
            ]
        )
    if valid == shape:
        return np.ascontiguousarray(data)
    out = np.zeros((n, *shape), src.dtype)
    out[(slice(None), *(slice(0, v) for v in valid))] = data
    return out


def _at(x: Any, k: int) -> Any:
    return x[k] if isinstance(x, np.ndarray) else x


def _batched_memory_view(
    src: int, r: int, offsets: _IndexList, valid_of: _IndexList, shape_of: _IndexList
) -> Step:
    def read(env: Env) -> None:
        shape = tuple(_scalar(s) for s in shape_of(env))
        valid = shape
        if valid_of.present:
            valid = semantics.view_valid_shape([_scalar(v) for v in valid_of(env)], shape)
        offs = offsets(env)
        if not any(isinstance(o, np.ndarray) for o in offs):
            offs = tuple(int(o) for o in offs)
            try:
                tile = semantics.read_window(env[src], offs, shape, valid)
            except semantics.SemanticsError:
                raise _Fallback from None
        else:
            tile = _read_batched(env[src], offs, shape, valid)
        env[r] = (tile, _normalize_valid(valid, shape))

    return read


def _batched_assemble(src: int, dst: int, offsets: _IndexList, rank: int) -> Step:
    def write(env: Env) -> None:
        arr, valid = env[src]
        target = env[dst]
        offs = offsets(env)
        batched = arr.ndim > rank
        shape = _tile_shape(arr, rank)
        v = valid or shape
        varying = [d for d, o in enumerate(offs) if isinstance(o, np.ndarray)]
        if not varying:
            # Every iteration writes the same window (the disjointness check allows
            # this only for one iteration): the last one wins, as in the sequential run.
            semantics.write_window(
                target, arr[-1] if batched else arr, [int(o) for o in offs], valid
            )
            return
        n = len(offs[varying[0]])
        if not batched:
            arr = np.broadcast_to(arr, (n, *arr.shape))
        data = arr[(slice(None), *(slice(0, x) for x in v))]
        if len(varying) == 1 and v[varying[0]]:
            d = varying[0]
            o = offs[d]
            base = int(o[0])
            if np.array_equal(o, base + v[d] * np.arange(n)):
                region = tuple(
                    slice(base, base + n * v[d]) if k == d else slice(int(x), int(x) + e)
                    for k, (x, e) in enumerate(zip(offs, v))
                )
                moved = np.moveaxis(data, 0, d)
                target[region] = moved.reshape(moved.shape[:d] + (n * v[d],) + moved.shape[d + 2 :])
                return
        for k in range(n):
            region = tuple(slice(int(_at(x, k)), int(_at(x, k)) + e) for x, e in zip(offs, v))
            target[region] = data[k]

    return write


def _windows_disjoint(windows: Sequence[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]) -> bool:
    """Whether the windows written by different iterations never overlap.

    `windows` holds, per assemble into one destination, its offsets and extents per dim
    (arrays of one entry per iteration). Two boxes are disjoint when they are disjoint
    in one dim; for each pair of assembles (an assemble with itself included) some dim
    must separate every pair of different iterations. Same-iteration overlaps are fine:
    the batched run keeps the program order within an iteration.
    """
    return all(
        any(_separated(oa[d], ea[d], ob[d], eb[d]) for d in range(len(oa)))
        for a, (oa, ea) in enumerate(windows)
        for ob, eb in windows[a:]
    )


def _separated(oa: np.ndarray, ea: np.ndarray, ob: np.ndarray, eb: np.ndarray) -> bool:
    """In one dim: no window [ob_j, ob_j + eb_j) overlaps [oa_k, oa_k + ea_k) for j != k."""
    order = np.argsort(ob, kind="stable")
    sb, se, si = ob[order], eb[order], order
    emax = int(se.max())
    # Candidates start in (oa - emax, oa + ea): found by binary search, then checked.
    lo = np.searchsorted(sb, oa - emax, side="right")
    hi = np.searchsorted(sb, oa + ea, side="left")
    count = hi - lo
    k = np.nonzero(count == 1)[0]
    j = lo[k]
    clash = (si[j] != k) & (sb[j] + se[j] > oa[k]) & (ea[k] > 0) & (se[j] > 0)
    if np.any(clash):
        return False
    for k in np.nonzero(count > 1)[0]:
        for j in range(lo[k], hi[k]):
            if si[j] != k and sb[j] + se[j] > oa[k] and ea[k] > 0 and se[j] > 0:
                return False
    return True


class _LoopBatcher:
    """Runs a `pto.loop` whose iterations are independent as whole-array numpy ops.

    Static conditions (checked when the kernel is lowered): the body holds only index
    arithmetic (element reads of memory included), views, assembles and row-local tile
    ops (elementwise, casts, reductions,
    layout ops; no matmul, gather or topk, whose numpy kernels may round differently on
    a different shape), no nested loops, branches or loop-state queries, and it never
    reads (views, element reads) a memref it writes (assembles).

    At run time the index arithmetic is evaluated for all iterations at once; iterations
    are grouped by their valid shapes (a tail is its own group), the windows written by
    different iterations must be disjoint, and every group of two or more iterations runs
    once with a leading batch dim on its tiles (the others run one by one). Each tile op
    is the same semantics call on an array with one more leading dim, and every op used
    here computes each element (or each reduced row) independently of that dim, so the
    bits equal the iteration-by-iteration run. Whenever something does not fit, the loop
    runs iteration by iteration instead; that is always safe, because the iterations
    only write memory the loop never reads.
    """

    def __init__(self, c: _Compiler, op: pto.LoopOp, general: Step):
        self.iv = c.slot(op.induction_var)
        self.general = general
        previous = c.batch
        c.batch = True
        try:
            self.body = c.block(op.body.block)
            index_ops = [o for o in op.body.walk() if isinstance(o, _INDEX_OPS)]
            self.index_steps = _sequence([(_rule_for(o)(c, o), o, ()) for o in index_ops])  # type: ignore[misc]
        finally:
            c.batch = previous
        shape_values: list[SSAValue] = []
        self.assembles: list[tuple[int, _IndexList, _IndexList, int]] = []
        for o in op.body.walk():
            if isinstance(o, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
                shape_values += list(o.valid_shape)
                shape_values += list(getattr(o, "sizes", ()))
            if isinstance(o, pto.AssembleOp):
                self.assembles.append(
                    (
                        c.slot(o.dst),
                        _IndexList(c, o.mixed_offsets),
                        _tile_extents(c, o.src),
                        c.slot(o.src),
                    )
                )
        self.shape_slots = sorted({c.slot(v) for v in shape_values})
        self.runs = 0
        """How many times the loop ran batched (for tests and benchmarks)."""

    @staticmethod
    def create(c: _Compiler, op: pto.LoopOp, general: Step) -> _LoopBatcher | None:
        written: set[SSAValue] = set()
        read: set[SSAValue] = set()
        for o in op.body.walk():
            if o is op:
                continue
            if not _batchable_op(o):
                return None
            if isinstance(o, pto.AssembleOp):
                written.add(o.dst)
            if isinstance(o, pto.ViewOp | pto.GetTensorDataOp) and isinstance(
                o.source.type, MemRefType
            ):
                read.add(o.source)
            for v in o.operands:
                if not isinstance(v.type, TensorType | MemRefType | IndexType | IntegerType):
                    # A float scalar computed in the loop would differ per iteration.
                    if _defined_inside(v, op) and not isinstance(v.owner, arith.ConstantOp):
                        return None
        if not written:
            return None
        # Memory is compared by root: writes through two names of one memory (or a read
        # of memory written under another name) are not checked disjoint window by window.
        roots = {pto.memory_root(v) for v in written}
        if len(roots) < len(written) or roots & {pto.memory_root(v) for v in read}:
            return None
        if not all(_index_computable(v, op) for v in _window_indices(op)):
            # A window index that only a stage (or another region) yields is not computed
            # by the batcher's index steps: run such loops one iteration at a time.
            return None
        batcher = _LoopBatcher(c, op, general)
        c.batchers.append(batcher)
        return batcher

    def try_run(self, env: Env, lb: int, ub: int, step: int) -> bool:
        ivals = np.arange(lb, ub, step, dtype=np.int64)
        n = len(ivals)
        if n < 2:
            return False
        env[self.iv] = ivals
        try:
            with np.errstate(divide="raise", invalid="raise"):
                self.index_steps(env)
        except (TileirError, ArithmeticError, _Fallback):
            return False
        keys = [np.broadcast_to(np.asarray(env[s], dtype=np.int64), (n,)) for s in self.shape_slots]
        if not self._disjoint(env, n):
            return False
        if keys:
            _, inverse = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            groups = [np.nonzero(inverse == g)[0] for g in range(int(inverse.max()) + 1)]
        else:
            groups = [np.arange(n)]
        try:
            for g in groups:
                if len(g) == 1:
                    env[self.iv] = int(ivals[g[0]])
                    self.general(env)
                else:
                    env[self.iv] = ivals[g]
                    self.body(env)
        except (_Fallback, TileirError):
            # Run it again one iteration at a time; a real error is reported there.
            return False
        self.runs += 1
        return True

    def _disjoint(self, env: Env, n: int) -> bool:
        by_dst: dict[int, list[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]] = {}
        for dst, offsets, extents, _ in self.assembles:
            offs = [np.broadcast_to(np.asarray(o, dtype=np.int64), (n,)) for o in offsets(env)]
            ext = tuple(np.broadcast_to(np.asarray(e, dtype=np.int64), (n,)) for e in extents(env))
            by_dst.setdefault(id(env[dst]), []).append((offs, ext))
        return all(_windows_disjoint(w) for w in by_dst.values())


def _window_indices(loop: Operation) -> list[SSAValue]:
    """The index values that place or size the loop's views and assembles."""
    values: list[SSAValue] = []
    for o in loop.walk():
        if isinstance(o, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
            values += [*o.valid_shape, *getattr(o, "sizes", ())]
        if isinstance(o, pto.ViewOp | pto.AssembleOp):
            values += list(o.offsets)
    return values


def _index_computable(v: SSAValue, loop: Operation) -> bool:
    """True when the batcher's index steps compute `v`: it comes from outside the loop,
    is the loop's index, or is index arithmetic over such values."""
    if not _defined_inside(v, loop):
        return True
    owner = v.owner
    if isinstance(owner, Block):
        return owner.parent_op() is loop
    if isinstance(owner, arith.ConstantOp):
        return True
    return isinstance(owner, _INDEX_OPS) and all(
        _index_computable(operand, loop) for operand in owner.operands
    )


def _defined_inside(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _tile_extents(c: _Compiler, v: SSAValue) -> _IndexList:
    """An upper bound of the extents a tile writes: its valid shape operands where the
    tile comes straight from a view / full / reshape with `valid`, else its type's shape."""
    owner = v.owner
    if isinstance(owner, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
        valid = owner.mixed_valid_shape
        if valid is not None:
            return _IndexList(c, valid)
    shape = _shape(v.type)
    if DYNAMIC_INDEX in shape:
        if isinstance(owner, pto.ViewOp | pto.FullOp):
            it = iter(owner.sizes)
            return _IndexList(c, [next(it) if s == DYNAMIC_INDEX else s for s in shape])
        return _IndexList(c, [2**62 if s == DYNAMIC_INDEX else s for s in shape])
    return _IndexList(c, list(shape))
