"""numpy rules of the scatter family: `pto.scatter_update`, `pto.scatter`, `pto.index_put`."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from tileir.backends.numpy import semantics
from tileir.backends.numpy.compiler import _Compiler
from tileir.backends.numpy.runtime import Env, Step
from tileir.dialect import pto


def scatter_update_rule(c: _Compiler, op: Operation) -> Step:
    """Only the index entries inside the index tile's valid shape are written; the
    result keeps the input's valid shape."""
    assert isinstance(op, pto.ScatterUpdateOp)
    a, i, s, r = (c.slot(v) for v in (op.input, op.index, op.src, op.result))

    def run(env: Env) -> None:
        arr, valid = env[a]
        idx, ivalid = env[i]
        env[r] = (semantics.scatter_update(arr, idx, env[s][0], ivalid), valid)

    return run


def scatter_rule(c: _Compiler, op: Operation) -> Step:
    """As `scatter_update_rule`: the index's valid shape bounds what is written."""
    assert isinstance(op, pto.ScatterOp)
    dim, reduce = op.dim.value.data, op.reduce.data
    src_tile = isinstance(op.src.type, TensorType)
    a, i, s, r = (c.slot(v) for v in (op.input, op.index, op.src, op.result))

    def run(env: Env) -> None:
        arr, valid = env[a]
        idx, ivalid = env[i]
        src = env[s][0] if src_tile else env[s]
        env[r] = (semantics.scatter(arr, dim, idx, src, reduce, ivalid), valid)

    return run


def index_put_rule(c: _Compiler, op: Operation) -> Step:
    """Only the index entries inside the index tiles' valid length are written."""
    assert isinstance(op, pto.IndexPutOp)
    accumulate = op.accumulate is not None
    a, v, r = c.slot(op.input), c.slot(op.values), c.slot(op.result)
    idx = [c.slot(x) for x in op.indices]

    def run(env: Env) -> None:
        arr, valid = env[a]
        parts = [env[k] for k in idx]
        counts = [p[1][0] for p in parts if p[1] is not None]
        count = min(counts) if counts else None
        out = semantics.index_put(arr, [p[0] for p in parts], env[v][0], accumulate, count)
        env[r] = (out, valid)

    return run


def index_add_rule(c: _Compiler, op: Operation) -> Step:
    """Only the index entries inside the index tile's valid length are added."""
    assert isinstance(op, pto.IndexAddOp)
    dim = op.dim.value.data
    alpha = op.alpha.value.data if op.alpha is not None else 1.0
    a, i, s, r = c.slot(op.input), c.slot(op.index), c.slot(op.source), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        index, index_valid = env[i]
        count = index_valid[0] if index_valid is not None else None
        env[r] = (semantics.index_add(arr, dim, index, env[s][0], alpha, count), valid)

    return run
