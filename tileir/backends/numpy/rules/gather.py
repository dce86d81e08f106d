"""Numpy rules of the index ops: `gathermask`, `gather` / `index_select`, `topk`."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Operation

from tileir.backends.numpy import semantics
from tileir.backends.numpy.compiler import _Compiler, _rank, _shape, numpy_dtype
from tileir.backends.numpy.rules.elementwise import _semantics_name
from tileir.backends.numpy.runtime import Env, Step, normalize_valid
from tileir.dialect import pto
from tileir.dialect.gathermask import GATHERMASK_PATTERNS


def gathermask_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.GathermaskOp)
    mode = op.pattern_mode.value.data
    start, step = GATHERMASK_PATTERNS.get(mode, (0, 1))
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        out = semantics.gathermask(arr, mode)
        if valid is not None:
            kept = max(0, -(-(valid[-1] - start) // step))
            valid = normalize_valid((*valid[:-1], kept), out.shape[out.ndim - len(valid) :])
        env[r] = (out, valid)

    return run


def _check_result_shape(out: np.ndarray, expected: tuple[int, ...]) -> None:
    got = out.shape[out.ndim - len(expected) :]
    if out.ndim < len(expected) or any(
        e != DYNAMIC_INDEX and e != g for e, g in zip(expected, got)
    ):
        raise semantics.SemanticsError(
            f"the numpy semantics gave shape {list(out.shape)} but the IR declares {list(expected)}"
        )


def index_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.GatherOp | pto.IndexSelectOp)
    fn = getattr(semantics, _semantics_name(op))
    rank = _rank(op.input)
    d = op.dim.value.data % rank
    a, i, r = c.slot(op.input), c.slot(op.index), c.slot(op.result)
    expected = _shape(op.result.type)
    select = isinstance(op, pto.IndexSelectOp)

    def run(env: Env) -> None:
        arr, valid = env[a]
        idx, ivalid = env[i]
        out = fn(arr, d, idx)
        _check_result_shape(out, expected)
        if valid is None and ivalid is None:
            env[r] = (out, None)
            return
        v = valid or arr.shape
        iv = ivalid or idx.shape
        if select:
            rv = (*v[:d], *iv, *v[d + 1 :])
        else:
            rv = tuple(min(x, y) if j != d else y for j, (x, y) in enumerate(zip(v, iv)))
        env[r] = (out, normalize_valid(rv, out.shape))

    return run


def topk_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.TopkOp)
    rank = _rank(op.input)
    d = op.dim.value.data % rank
    k = op.k.value.data
    largest = op.largest.value.data
    index_dtype = numpy_dtype(op.indices.type)
    a, rv, ri = c.slot(op.input), c.slot(op.values), c.slot(op.indices)

    def run(env: Env) -> None:
        arr, valid = env[a]
        n = valid[d] if valid is not None else arr.shape[d]
        kk = min(k, n)
        if n < arr.shape[d]:
            arr = np.take(arr, np.arange(n), axis=d)
        values, indices = semantics.topk(arr, kk, d, largest)
        indices = indices.astype(index_dtype)
        out_valid = None
        if valid is not None:
            out_valid = list(valid)
            out_valid[d] = kk
        if kk < k:
            pad = [(0, 0)] * rank
            pad[d] = (0, k - kk)
            values, indices = np.pad(values, pad), np.pad(indices, pad)
        shape = values.shape
        env[rv] = (values, normalize_valid(None if out_valid is None else tuple(out_valid), shape))
        env[ri] = (indices, env[rv][1])

    return run


def deinterleave_rule(c: _Compiler, op: Operation) -> Step:
    """One input: an even / odd result holds the even / odd elements of the valid part of
    the last dim. Two inputs: each result's valid region is the per-dim minimum of the
    operands' (the docs define only whole tiles)."""
    assert isinstance(op, pto.DeinterleaveOp)
    a, b = c.slot(op.input), (c.slot(op.other) if op.other is not None else -1)
    re, ro = c.slot(op.even), c.slot(op.odd)

    def run(env: Env) -> None:
        arr, valid = env[a]
        other = env[b] if b >= 0 else None
        even, odd = semantics.deinterleave(arr, None if other is None else other[0])
        shape = even.shape
        if other is None:
            ve = None if valid is None else (*valid[:-1], (valid[-1] + 1) // 2)
            vo = None if valid is None else (*valid[:-1], valid[-1] // 2)
        else:
            parts = [v for v in (valid, other[1]) if v is not None]
            ve = vo = tuple(map(min, zip(*parts))) if parts else None
        env[re] = (even, normalize_valid(ve, shape))
        env[ro] = (odd, normalize_valid(vo, shape))

    return run
