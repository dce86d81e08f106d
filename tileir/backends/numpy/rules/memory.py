"""Numpy rules of the memory and layout ops: `tensor`, `view`, `assemble` (only the
valid region is written), `get_tensor_data`, `reshape`, `transpose`, `concat`, `unsqueeze`,
`expand_clone`, `view_type`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Operation

from tileir.backends.numpy import fastpaths, semantics
from tileir.backends.numpy.compiler import (
    _Compiler,
    _rank,
    _result_shape,
    _shape,
    index_list,
    numpy_dtype,
)
from tileir.backends.numpy.loops import _batched_assemble, _batched_memory_view
from tileir.backends.numpy.runtime import (
    Env,
    Fallback,
    IndexList,
    Step,
    normalize_valid,
    scalar_index,
    tile_shape,
)
from tileir.diagnostics import location_of
from tileir.dialect import pto
from tileir.errors import located


def tensor_rule(c: _Compiler, op: Operation) -> Step:
    """A new zeroed buffer each time the op runs; `?` dims sized by the `sizes` values of
    this run."""
    assert isinstance(op, pto.TensorOp)
    dtype, r = numpy_dtype(op.result.type), c.slot(op.result)
    shape_of = _result_shape(c, op.result.type, op.sizes)
    where, buffer = location_of(op), op.buffer_name.data

    def run(env: Env) -> None:
        shape = tuple(scalar_index(s) for s in shape_of(env))
        if min(shape, default=0) < 0:
            raise located(where, f"workspace {buffer!r} of shape {list(shape)}: a size is negative")
        env[r] = np.zeros(shape, dtype)

    return run


def view_rule(c: _Compiler, op: Operation) -> Step:
    if isinstance(op, pto.ViewTypeOp):
        return _view_type_rule(c, op)
    assert isinstance(op, pto.ViewOp)
    offsets = index_list(c, op.mixed_offsets)
    valid_of = index_list(c, op.mixed_valid_shape)
    shape_of = _result_shape(c, op.result.type, op.sizes)
    src, r = c.slot(op.source), c.slot(op.result)
    if isinstance(op.source.type, MemRefType):
        if c.batch:
            return _batched_memory_view(src, r, offsets, valid_of, shape_of)

        # Tiles are never written in place while anything else can see them (a view owns
        # no memory, see `fastpaths.spare`), so a window of memory that nothing writes
        # (a read-only kernel input) can be used without a copy.
        share = pto.memory_root(op.source) in c.read_only
        src_shape = _shape(op.source.type)
        region = None
        if offsets.static and shape_of.static and not valid_of.present:
            region = fastpaths.window(offsets.constant, shape_of.constant, src_shape)
        if region is not None:
            # A fixed window inside a memref of static shape: `read_window`'s fast path,
            # its region computed once.
            fixed_shape = shape_of.constant

            def read_fixed(env: Env) -> None:
                arr = env[src]
                if arr.shape == src_shape:
                    window = arr[region]
                    env[r] = (window if share else window.copy(), None)
                else:
                    window = fastpaths.read_window(arr, offsets.constant, fixed_shape, None, share)
                    env[r] = (window, None)

            return read_fixed
        if shape_of.static and not valid_of.present:
            fixed_shape = shape_of.constant
            region_at = fastpaths.windower(fixed_shape, src_shape)

            def read_at(env: Env) -> None:  # a fully valid window at computed offsets
                arr, at = env[src], offsets(env)
                region = region_at(at) if arr.shape == src_shape else None
                if region is None:
                    window = fastpaths.read_window(arr, at, fixed_shape, None, share)
                else:
                    window = arr[region] if share else arr[region].copy()
                env[r] = (window, None)

            return read_at

        def read(env: Env) -> None:
            shape = shape_of(env)
            valid = semantics.view_valid_shape(valid_of(env), shape) if valid_of.present else None
            env[r] = (
                fastpaths.read_window(env[src], offsets(env), shape, valid, share),
                normalize_valid(valid, shape),
            )

        return read

    rank = _rank(op.source)

    def slice_tile(env: Env) -> None:
        arr, src_valid = env[src]
        offs = tuple(scalar_index(o) for o in offsets(env))
        shape = tuple(scalar_index(s) for s in shape_of(env))
        full = tile_shape(arr, rank)
        if valid_of.present:
            valid = semantics.view_valid_shape([scalar_index(v) for v in valid_of(env)], shape)
            extents = valid
        else:
            extents = shape
            sv = src_valid or full
            valid = tuple(max(0, min(s, v - o)) for s, v, o in zip(shape, sv, offs))
        for d in range(rank):
            if offs[d] < 0 or offs[d] + extents[d] > full[d] or not 0 <= valid[d] <= shape[d]:
                raise semantics.SemanticsError(
                    f"view: window offsets {list(offs)} shape {list(extents)} goes outside "
                    f"the tile {list(full)} in dim {d}"
                )
        batch = arr.shape[: arr.ndim - rank]
        region = (Ellipsis, *(slice(o, o + v) for o, v in zip(offs, valid)))
        if tuple(valid) == shape:
            # Tiles are never written in place while anything else can see them (the
            # slice keeps its source referenced: `fastpaths.spare`), so a slice can
            # share the source's memory.
            env[r] = (arr[region], None)
        else:
            out = np.zeros(batch + shape, arr.dtype)
            out[(Ellipsis, *(slice(0, v) for v in valid))] = arr[region]
            env[r] = (out, tuple(valid))

    return slice_tile


def assemble_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.AssembleOp)
    offsets = index_list(c, op.mixed_offsets)
    src, dst = c.slot(op.src), c.slot(op.dst)
    rank = _rank(op.src)
    if c.batch:
        return _batched_assemble(src, dst, offsets, rank)

    tile_shape, dst_shape = _shape(op.src.type), _shape(op.dst.type)
    region = fastpaths.window(offsets.constant, tile_shape, dst_shape) if offsets.static else None
    if region is not None and DYNAMIC_INDEX not in tile_shape:
        dtype = numpy_dtype(op.dst.type)

        def write_fixed(env: Env) -> None:
            # `write_window`'s fast path with its region computed once: a fully valid
            # tile of its type's shape and the memref's dtype, at fixed offsets inside a
            # memref of static shape.
            arr, valid = env[src]
            out = env[dst]
            if valid is None and arr.shape == tile_shape and out.shape == dst_shape:
                if arr.dtype == dtype == out.dtype:
                    out[region] = arr
                    return
            fastpaths.write_window(out, arr, offsets.constant, valid)

        return write_fixed

    def write(env: Env) -> None:
        arr, valid = env[src]
        fastpaths.write_window(env[dst], arr, offsets(env), valid)

    return write


def get_tensor_data_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.GetTensorDataOp)
    indices = index_list(c, op.mixed_indices)
    src, r = c.slot(op.source), c.slot(op.result)
    if isinstance(op.source.type, MemRefType):
        if c.batch:
            return _batched_get_tensor_data(src, r, indices)

        def read(env: Env) -> None:
            env[r] = semantics.get_tensor_data(env[src], indices(env))

        return read

    def read_tile(env: Env) -> None:
        arr, valid = env[src]
        env[r] = semantics.get_tensor_data(arr, indices(env), valid)

    return read_tile


def _batched_get_tensor_data(src: int, r: int, indices: IndexList) -> Step:
    """The elements of every iteration at once (indices are ints or arrays with one
    entry per iteration), as int64 like the batched index arithmetic."""

    def read(env: Env) -> None:
        arr = env[src]
        idx = indices(env)
        if not any(isinstance(i, np.ndarray) for i in idx):
            env[r] = semantics.get_tensor_data(arr, idx)
            return
        for i, n in zip(idx, arr.shape):
            if np.any(np.asarray(i) < 0) or np.any(np.asarray(i) >= n):
                raise Fallback  # the iteration-by-iteration run reports it
        env[r] = arr[tuple(np.asarray(i, dtype=np.int64) for i in idx)].astype(np.int64)

    return read


def reshape_rule(c: _Compiler, op: Operation) -> Step:
    if isinstance(op, pto.ReshapeMemOp):
        return _reshape_memory_rule(c, op)
    assert isinstance(op, pto.ReshapeOp)
    in_rank = _rank(op.input)
    target = _shape(op.result.type)
    valid_of = index_list(c, op.mixed_valid_shape)
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, _ = env[a]
        batch = arr.shape[: arr.ndim - in_rank]
        shape = target
        if DYNAMIC_INDEX in shape:
            known = math.prod(s for s in shape if s != DYNAMIC_INDEX)
            count = math.prod(tile_shape(arr, in_rank))
            if list(shape).count(DYNAMIC_INDEX) != 1 or known == 0 or count % known:
                raise semantics.SemanticsError(
                    f"reshape: cannot infer the dynamic dims of {list(shape)} from "
                    f"{list(tile_shape(arr, in_rank))}"
                )
            shape = tuple(count // known if s == DYNAMIC_INDEX else s for s in shape)
        valid = tuple(scalar_index(v) for v in valid_of(env)) if valid_of.present else None
        env[r] = (semantics.reshape(arr, batch + shape), normalize_valid(valid, shape))

    return run


def _reshape_memory_rule(c: _Compiler, op: pto.ReshapeMemOp) -> Step:
    """A memref is a bare array: the result is a view of the source's array, so what an
    assemble writes through it lands in the kernel argument."""
    shape_of = _result_shape(c, op.result.type, op.sizes)
    src, r = c.slot(op.source), c.slot(op.result)

    def run(env: Env) -> None:
        env[r] = semantics.reshape_memory(env[src], [scalar_index(s) for s in shape_of(env)])

    return run


def transpose_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.TransposeOp)
    rank = _rank(op.input)
    d0, d1 = op.dim0.value.data % rank, op.dim1.value.data % rank
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        out = semantics.transpose(arr, d0 - rank, d1 - rank)
        if valid is not None:
            v = list(valid)
            v[d0], v[d1] = v[d1], v[d0]
            valid = tuple(v)
        env[r] = (out, valid)

    return run


def concat_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.ConcatOp)
    rank = _rank(op.result)
    d = op.dim.value.data % rank
    slots = [c.slot(v) for v in op.tensors]
    r = c.slot(op.result)

    def run(env: Env) -> None:
        parts = [env[s] for s in slots]
        arrs = [p[0] for p in parts]
        batch = max((x.shape[: x.ndim - rank] for x in arrs), key=len)
        if batch:
            arrs = [x if x.ndim > rank else np.broadcast_to(x, batch + x.shape) for x in arrs]
        out = semantics.concat(arrs, d - rank)
        if all(p[1] is None for p in parts):
            env[r] = (out, None)
            return
        full = tile_shape(out, rank)
        valid = list(full)
        along = 0
        for x, v in parts:
            shp = tile_shape(x, rank)
            vv = v or shp
            for j in range(rank):
                if j != d:
                    valid[j] = min(valid[j], vv[j])
            if along is not None:
                along += vv[d]
                if vv[d] < shp[d]:
                    valid[d] = along
                    along = None
        if along is not None:
            valid[d] = along
        env[r] = (out, normalize_valid(tuple(valid), full))

    return run


def unsqueeze_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.UnsqueezeOp)
    rank = _rank(op.input)
    d = op.dim.value.data % (rank + 1)
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        out = semantics.unsqueeze(arr, d - (rank + 1))
        env[r] = (out, None if valid is None else (*valid[:d], 1, *valid[d:]))

    return run


def expand_clone_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.ExpandCloneOp)
    rank = _rank(op.input)
    target = _shape(op.result.type)
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        shp = tile_shape(arr, rank)
        shape = tuple(s if t == DYNAMIC_INDEX else t for s, t in zip(shp, target))
        out = semantics.expand_clone(arr, arr.shape[: arr.ndim - rank] + shape)
        if valid is not None:
            valid = normalize_valid(
                tuple(t if s == 1 and t != 1 else v for s, t, v in zip(shp, shape, valid)), shape
            )
        env[r] = (out, valid)

    return run


def _view_type_rule(c: _Compiler, op: pto.ViewTypeOp) -> Step:
    """`pto.view_type`: the bytes read as the result's dtype; the valid size of the last
    dim scales with them."""
    dtype = numpy_dtype(op.result.type)
    size = numpy_dtype(op.input.type).itemsize
    rank = _rank(op.result)
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        out = semantics.view_type(arr, dtype)
        if valid is not None:
            last = semantics.view_type_valid(valid[-1], size, dtype.itemsize)
            valid = normalize_valid((*valid[:-1], last), tile_shape(out, rank))
        env[r] = (out, valid)

    return run
