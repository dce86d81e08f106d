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
from tileir.backends.numpy.compiler import _Compiler, _rule_for, _sequence, _shape, index_list, rule
from tileir.backends.numpy.runtime import (
    Env,
    Fallback,
    IndexList,
    LoopBatch,
    Step,
    normalize_valid,
    scalar_index,
    tile_shape,
)
from tileir.backends.numpy.scalar_rules import _INT_BINARY, _INT_CASTS, _is_index_like, _width
from tileir.diagnostics import location_of
from tileir.dialect import pto
from tileir.errors import located


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
    where, name = location_of(op), op.name

    def bounds(env: Env) -> tuple[int, int, int]:
        step = env[st]
        if step <= 0:
            raise located(where, f"'{name}' step {step} must be positive")
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
    batcher = batch_loop(c, op, body) if c.vectorize and not c.batch else None

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
    where = location_of(op)

    def run(env: Env) -> None:
        lb, ub, step = bounds(env)
        env[info] = (lb, ub, step)
        i = lb
        while i < ub:
            left = -(-(ub - i) // step)
            n = next((f for f in factors if f <= left), 0)
            if n == 0:
                raise located(
                    where, f"no unroll factor of {factors} fits the {left} iterations left"
                )
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
            raise Fallback  # the iteration-by-iteration run reports it
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
    src: int, r: int, offsets: IndexList, valid_of: IndexList, shape_of: IndexList
) -> Step:
    def read(env: Env) -> None:
        shape = tuple(scalar_index(s) for s in shape_of(env))
        valid = shape
        if valid_of.present:
            valid = semantics.view_valid_shape([scalar_index(v) for v in valid_of(env)], shape)
        offs = offsets(env)
        if not any(isinstance(o, np.ndarray) for o in offs):
            offs = tuple(int(o) for o in offs)
            try:
                tile = semantics.read_window(env[src], offs, shape, valid)
            except semantics.SemanticsError:
                raise Fallback from None
        else:
            tile = _read_batched(env[src], offs, shape, valid)
        env[r] = (tile, normalize_valid(valid, shape))

    return read


def _batched_assemble(src: int, dst: int, offsets: IndexList, rank: int) -> Step:
    def write(env: Env) -> None:
        arr, valid = env[src]
        target = env[dst]
        offs = offsets(env)
        batched = arr.ndim > rank
        shape = tile_shape(arr, rank)
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


def batch_loop(c: _Compiler, op: pto.LoopOp, general: Step) -> LoopBatch | None:
    """The batched form of a loop (`runtime.LoopBatch`, whose docstring says when it
    runs), or None when the loop breaks one of its static conditions: only batchable
    ops, no float scalar computed per iteration, writes to distinct memory that the
    loop never reads, and window indices the index steps compute."""
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
    previous = c.batch
    c.batch = True
    try:
        body = c.block(op.body.block)
        index_ops = [o for o in op.body.walk() if isinstance(o, _INDEX_OPS)]
        index_steps = _sequence([(_rule_for(o)(c, o), o, ()) for o in index_ops])  # type: ignore[misc]
    finally:
        c.batch = previous
    shape_values: list[SSAValue] = []
    assembles: list[tuple[int, IndexList, IndexList, int]] = []
    for o in op.body.walk():
        if isinstance(o, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
            shape_values += list(o.valid_shape)
            shape_values += list(getattr(o, "sizes", ()))
        if isinstance(o, pto.AssembleOp):
            assembles.append(
                (
                    c.slot(o.dst),
                    index_list(c, o.mixed_offsets),
                    _tile_extents(c, o.src),
                    c.slot(o.src),
                )
            )
    batch = LoopBatch(
        c.slot(op.induction_var),
        general,
        body,
        index_steps,
        assembles,
        sorted({c.slot(v) for v in shape_values}),
    )
    c.batchers.append(batch)
    return batch


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


def _tile_extents(c: _Compiler, v: SSAValue) -> IndexList:
    """An upper bound of the extents a tile writes: its valid shape operands where the
    tile comes straight from a view / full / reshape with `valid`, else its type's shape."""
    owner = v.owner
    if isinstance(owner, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
        valid = owner.mixed_valid_shape
        if valid is not None:
            return index_list(c, valid)
    shape = _shape(v.type)
    if DYNAMIC_INDEX in shape:
        if isinstance(owner, pto.ViewOp | pto.FullOp):
            it = iter(owner.sizes)
            return index_list(c, [next(it) if s == DYNAMIC_INDEX else s for s in shape])
        return index_list(c, [2**62 if s == DYNAMIC_INDEX else s for s in shape])
    return index_list(c, list(shape))
