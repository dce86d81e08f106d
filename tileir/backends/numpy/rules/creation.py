"""numpy rules of the creation ops: `pto.arange`, `pto.fillpad`."""

from __future__ import annotations

from xdsl.ir import Operation

from tileir.backends.numpy import semantics
from tileir.backends.numpy.compiler import _Compiler, numpy_dtype
from tileir.backends.numpy.runtime import Env, Step
from tileir.dialect import pto


def arange_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.ArangeOp)
    out = semantics.arange(*op.bounds, numpy_dtype(op.result.type))
    r = c.slot(op.result)

    def run(env: Env) -> None:
        env[r] = (out.copy(), None)

    return run


def fillpad_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.FillpadOp)
    value = op.fill
    a, r = c.slot(op.input), c.slot(op.result)

    def run(env: Env) -> None:
        arr, valid = env[a]
        env[r] = (semantics.fillpad(arr, valid, value), None)

    return run
