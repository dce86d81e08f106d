"""Numpy rules of the elementwise ops: one driver (`_elementwise`) for unary, binary,
compare and `where` ops (broadcasting, the valid-shape minimum, in-place reuse of a
dying operand), and `cast`, `full`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy import fastpaths, semantics
from tileir.backends.numpy.compiler import (
    _Compiler,
    _is_tile,
    _rank,
    _result_shape,
    _shape,
    index_list,
    numpy_dtype,
)
from tileir.backends.numpy.runtime import (
    Env,
    Fallback,
    Step,
    normalize_valid,
    scalar_index,
    tile_shape,
)
from tileir.diagnostics import error_at
from tileir.dialect import pto


def _align(arr: np.ndarray, rank: int, result_rank: int) -> np.ndarray:
    """A batched operand of lower rank gets size-1 dims after its batch dim, so that
    numpy's right-aligned broadcasting lines up tile dims with tile dims."""
    extra = arr.ndim - rank
    if extra and rank < result_rank:
        return arr.reshape(arr.shape[:extra] + (1,) * (result_rank - rank) + arr.shape[extra:])
    return arr


def _elementwise_valid(
    parts: Sequence[tuple[np.ndarray, tuple[int, ...] | None, int]], result_rank: int
) -> tuple[int, ...] | None:
    """Per dim, the minimum valid size over the operands; a broadcast dim (size 1 where
    the result is larger) does not constrain."""
    full = [1] * result_rank
    shapes = []
    for arr, _, rank in parts:
        shp = tile_shape(arr, rank)
        shapes.append(shp)
        off = result_rank - rank
        for j, s in enumerate(shp):
            if s > full[off + j]:
                full[off + j] = s
    out = list(full)
    for (_, valid, rank), shp in zip(parts, shapes):
        if valid is None:
            continue
        off = result_rank - rank
        for j, v in enumerate(valid):
            if shp[j] == 1 and full[off + j] != 1:
                continue
            if v < out[off + j]:
                out[off + j] = v
    return None if out == full else tuple(out)


def _operand_reader(
    c: _Compiler, v: SSAValue, result_rank: int
) -> tuple[Callable[[Env], Any], bool, int]:
    """(read the operand as a semantics argument, is it a tile, its rank)."""
    s = c.slot(v)
    if not _is_tile(v):
        if c.batch:

            def read_scalar(env: Env) -> Any:
                value = env[s]
                if isinstance(value, np.ndarray):
                    raise Fallback
                return value

            return read_scalar, False, 0
        return (lambda env: env[s]), False, 0
    rank = _rank(v)
    if rank < result_rank:
        return (lambda env: _align(env[s][0], rank, result_rank)), True, rank
    return (lambda env: env[s][0]), True, rank


DONOR_MIN_BYTES = 1 << 20
"""The smallest tile (its declared size, outside batched loops) whose result goes into
a dying operand's buffer. Reuse pays on large arrays, whose fresh pages cost page
faults; a small result gets memory malloc already holds, and there the run-time checks
of `fastpaths.spare` cost more than they save (decode attention's 16-64 KiB tiles: the
plan ran ~6 % faster without them, `benchmarks/numpy_backend.py`). In a batched loop the
tiles carry a batch dim of unknown size: always a donor there."""


def _donor(c: _Compiler, op: Operation, operands: Sequence[SSAValue]) -> int | None:
    """The operand (its index) whose buffer may receive the result: a tile of the
    result's type and rank that dies at this op (whether its array is really free is
    `fastpaths.spare`'s question, at run time), for results of `DONOR_MIN_BYTES` or more."""
    dies = c.dies_at.get(op, ())
    result = op.results[0].type
    if not c.batch and isinstance(result, TensorType):
        shape = _shape(result)
        if DYNAMIC_INDEX not in shape:
            if math.prod(shape) * numpy_dtype(result).itemsize < DONOR_MIN_BYTES:
                return None
    for i, v in enumerate(operands):
        if v in dies and isinstance(v.type, TensorType) and isinstance(result, TensorType):
            if v.type.element_type == result.element_type and _rank(v) == _rank(op.results[0]):
                return i
    return None


def _elementwise_into(
    c: _Compiler, op: Operation, fn: Callable[..., np.ndarray], operands: Sequence[SSAValue], d: int
) -> Step:
    """`_elementwise` for a `fastpaths` unary / binary function, whose result may go
    into the buffer of operand `d` (see `_donor`): the environment's reference to it is
    dropped first, and only the locals here hold it when `fastpaths.spare` counts."""
    r = c.slot(op.results[0])
    result_rank = _rank(op.results[0])
    ds = c.slot(operands[d])
    if len(operands) == 1:

        def unary(env: Env) -> None:
            x, valid = env[ds]
            env[ds] = None
            s = fastpaths.spare(x)
            env[r] = (fn(x, s), valid)

        return unary
    if not c.batch:
        # The common cases without the generic readers (numpy's broadcasting lines up
        # the tile dims: there is no batch dim).
        a, b = (c.slot(v) for v in operands)
        if _is_tile(operands[0]) and _is_tile(operands[1]):
            ka, kb = _rank(operands[0]), _rank(operands[1])
            held = 2 if operands[0] is operands[1] else 1

            def tile_tile(env: Env) -> None:
                x, vx = env[a]
                y, vy = env[b]
                if vx is None and vy is None:
                    valid = None
                else:
                    valid = _elementwise_valid([(x, vx, ka), (y, vy, kb)], result_rank)
                env[ds] = None
                s = fastpaths.spare(y if d else x, held)
                env[r] = (fn(x, y, s), valid)

            return tile_tile
        scalar = b if d == 0 else a

        def tile_scalar(env: Env) -> None:
            x, valid = env[ds]
            env[ds] = None
            s = fastpaths.spare(x)
            env[r] = (fn(x, env[scalar], s) if d == 0 else fn(env[scalar], x, s), valid)

        return tile_scalar
    (read_x, _, _), (read_y, _, _) = (_operand_reader(c, v, result_rank) for v in operands)
    tiles = [(c.slot(v), _rank(v)) for v in operands if _is_tile(v)]

    def binary(env: Env) -> None:
        x, y = read_x(env), read_y(env)
        parts = [(*env[s], k) for s, k in tiles]
        valid = None if all(p[1] is None for p in parts) else _elementwise_valid(parts, result_rank)
        parts = None  # noqa: F841 (its tuples hold the arrays)
        env[ds] = None
        s = fastpaths.spare(y if d else x, 2 if x is y else 1)
        env[r] = (fn(x, y, s), valid)

    return binary


def _elementwise(
    c: _Compiler,
    op: Operation,
    fn: Callable[..., np.ndarray],
    operands: Sequence[SSAValue],
    **kwargs: Any,
) -> Step:
    r = c.slot(op.results[0])
    result_rank = _rank(op.results[0])
    tiles = [(c.slot(v), _rank(v)) for v in operands if _is_tile(v)]
    readers = [_operand_reader(c, v, result_rank) for v in operands]
    simple = all(not c.batch or not is_tile or rank == result_rank for _, is_tile, rank in readers)
    if len(operands) == 1:
        (a,) = [c.slot(v) for v in operands]

        def unary(env: Env) -> None:
            arr, valid = env[a]
            env[r] = (fn(arr, **kwargs), valid)

        return unary
    if len(operands) == 2 and simple and not kwargs and not c.batch:
        # The common cases, without the generic readers: tile op tile, tile op scalar.
        a, b = (c.slot(v) for v in operands)
        a_tile, b_tile = (_is_tile(v) for v in operands)
        if a_tile and b_tile:
            ka, kb = _rank(operands[0]), _rank(operands[1])

            def tile_tile(env: Env) -> None:
                x, y = env[a], env[b]
                out = fn(x[0], y[0])
                if x[1] is None and y[1] is None:
                    env[r] = (out, None)
                else:
                    env[r] = (out, _elementwise_valid([(*x, ka), (*y, kb)], result_rank))

            return tile_tile
        if a_tile or b_tile:
            t, scalar = (a, b) if a_tile else (b, a)

            def tile_scalar(env: Env) -> None:
                x = env[t]
                out = fn(x[0], env[scalar]) if a_tile else fn(env[scalar], x[0])
                env[r] = (out, x[1])

            return tile_scalar

    def general(env: Env) -> None:
        out = fn(*(rd(env) for rd, _, _ in readers), **kwargs)
        parts = [(*env[s], k) for s, k in tiles]
        if all(p[1] is None for p in parts):
            env[r] = (out, None)
        else:
            env[r] = (out, _elementwise_valid(parts, result_rank))

    return general


def _semantics_name(op: Operation) -> str:
    """The name of `op`'s pure function in `semantics` (on its binding)."""
    from tileir.bindings import BY_OP

    name = BY_OP[type(op)].semantics
    if name is None or getattr(semantics, name, None) is None:
        raise error_at(op, f"the numpy semantics of '{op.name}' ({name}) are missing")
    return name


def unary_rule(c: _Compiler, op: Operation) -> Step:
    fn = fastpaths.unary(_semantics_name(op))
    d = _donor(c, op, op.operands[:1])
    if d is not None:
        return _elementwise_into(c, op, fn, op.operands[:1], d)
    return _elementwise(c, op, fn, [op.operands[0]])


def binary_rule(c: _Compiler, op: Operation) -> Step:
    fn = fastpaths.binary(_semantics_name(op))
    d = _donor(c, op, op.operands)
    if d is not None and len(op.operands) == 2:
        return _elementwise_into(c, op, fn, op.operands, d)
    return _elementwise(c, op, fn, list(op.operands))


def where_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.WhereOp)
    dtype = numpy_dtype(op.result.type)
    return _elementwise(c, op, semantics.where, [op.condition, op.input, op.other], dtype=dtype)


def cast_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.CastOp)
    fn = fastpaths.caster(
        numpy_dtype(op.input.type),
        numpy_dtype(op.result.type),
        op.mode.data.value,  # the plain string: the plan must not hold the dialect's enum
        op.satmode is not None,
    )
    return _elementwise(c, op, fn, [op.input])


def full_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.FullOp)
    dtype = numpy_dtype(op.result.type)
    shape_of = _result_shape(c, op.result.type, op.sizes)
    valid_of = index_list(c, op.mixed_valid_shape)
    value, r = c.slot(op.value), c.slot(op.result)

    def run(env: Env) -> None:
        shape = tuple(scalar_index(s) for s in shape_of(env))
        v = env[value]
        if isinstance(v, np.ndarray):
            raise Fallback
        valid = tuple(scalar_index(x) for x in valid_of(env)) if valid_of.present else None
        env[r] = (semantics.full(shape, v, dtype), normalize_valid(valid, shape))

    return run


def round_rule(c: _Compiler, op: Operation) -> Step:
    """`pto.round`: `semantics.round` with the op's `decimals`."""
    assert isinstance(op, pto.RoundOp)
    decimals = op.decimals.value.data if op.decimals is not None else 0

    def fn(x: np.ndarray) -> np.ndarray:
        return semantics.round(x, decimals)

    return _elementwise(c, op, fn, [op.input])
