"""Numpy rule of the reductions: only the valid part of the reduced dim is read."""

from __future__ import annotations

from xdsl.ir import Operation

from tileir.backends.numpy import fastpaths
from tileir.backends.numpy.compiler import _Compiler, _rank, _shape
from tileir.backends.numpy.rules.elementwise import _semantics_name
from tileir.backends.numpy.runtime import Env, Step, normalize_valid
from tileir.dialect import pto


def reduce_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.ReduceOp)
    fn = fastpaths.reduction(_semantics_name(op))
    rank = _rank(op.input)
    d = op.dim.value.data % rank
    nd = d - rank
    keepdim = op.keepdim is not None
    result_shape = _shape(op.result.type)
    a, r = c.slot(op.input), c.slot(op.result)
    if not c.batch:

        def unbatched(env: Env) -> None:
            arr, valid = env[a]
            if valid is None:
                out = fn(arr, nd, keepdim)
                if out.ndim != len(result_shape):
                    out = out.reshape(result_shape)
                env[r] = (out, None)
            else:
                run(env)

    def run(env: Env) -> None:
        arr, valid = env[a]
        if valid is not None and valid[d] < arr.shape[nd]:
            arr = arr[(Ellipsis, slice(0, valid[d])) + (slice(None),) * (rank - d - 1)]
        out = fn(arr, nd, keepdim)
        batch = arr.shape[: arr.ndim - rank]
        if out.ndim != len(batch) + len(result_shape):
            out = out.reshape(batch + result_shape)
        if valid is None:
            env[r] = (out, None)
        else:
            rv = list(valid)
            if keepdim:
                rv[d] = 1
            else:
                del rv[d]
            env[r] = (out, normalize_valid(tuple(rv) or (1,), result_shape))

    return run if c.batch else unbatched
