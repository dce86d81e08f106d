"""Numpy rules of the control ops: settings change no value (`noop_rule`); the
loop-state tests read the enclosing loop's bounds.
"""

from __future__ import annotations

from xdsl.ir import Operation

from tileir.backends.numpy.compiler import _Compiler
from tileir.backends.numpy.runtime import Env, Step
from tileir.dialect import pto


def noop_rule(c: _Compiler, op: Operation) -> None:
    return None


def loop_state_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.IsLoopBeginOp | pto.IsLoopEndOp)
    loop = op.loop()
    info, chunk = c.loop_slots[loop]
    i, r = c.slot(op.index), c.slot(op.result)
    if isinstance(op, pto.IsLoopBeginOp):

        def begin(env: Env) -> None:
            env[r] = env[i] == env[info][0]

        return begin

    def end(env: Env) -> None:
        _, ub, step = env[info]
        n = env[chunk] if chunk >= 0 else 1
        env[r] = env[i] + n * step >= ub

    return end
