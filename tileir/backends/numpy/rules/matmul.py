"""Numpy rule of `pto.matmul`: the contraction reads only the valid part of K."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from tileir.backends.numpy import fastpaths, semantics
from tileir.backends.numpy.compiler import _Compiler, _rank, numpy_dtype
from tileir.backends.numpy.loops import _defined_inside
from tileir.backends.numpy.runtime import Env, Step, normalize_valid
from tileir.dialect import pto


def matmul_rule(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.MatmulOp)
    out_dtype = numpy_dtype(op.result.type)
    a_trans, b_trans = op.a_trans is not None, op.b_trans is not None
    a, b, r = c.slot(op.a), c.slot(op.b), c.slot(op.result)
    bias = c.slot(op.bias) if op.bias is not None else -1
    result_rank = _rank(op.result)
    fixpipe = {
        "scale": op.scale.value.data if op.scale is not None else None,
        "relu": op.relu is not None,
        "trans_mode": op.trans_mode.data if op.trans_mode is not None else None,
    }
    # An operand computed inside the innermost loop around the matmul is a new tile on
    # every iteration: its float64 copy is not worth remembering.
    loop = op.parent_op()
    while loop is not None and not isinstance(loop, pto.LoopOp | pto.LoopUnrollOp):
        loop = loop.parent_op()
    keep = tuple(loop is not None and not _defined_inside(v, loop) for v in (op.a, op.b))
    multiply = fastpaths.matmuler(out_dtype, a_trans, b_trans, keep, bias >= 0, **fixpipe)

    def run(env: Env) -> None:
        xa, va = env[a]
        xb, vb = env[b]
        out_valid = None
        if va is not None or vb is not None:
            # Contract only over the K both operands hold; M from a, N from b.
            ka_axis, kb_axis = (-2 if a_trans else -1), (-1 if b_trans else -2)
            ka = va[ka_axis] if va is not None else xa.shape[ka_axis]
            kb = vb[kb_axis] if vb is not None else xb.shape[kb_axis]
            k = min(ka, kb)
            if k < xa.shape[ka_axis]:
                xa = np.take(xa, np.arange(k), axis=ka_axis) if k else xa[..., :0, :0]
                xb = np.take(xb, np.arange(k), axis=kb_axis)
            elif k < xb.shape[kb_axis]:
                xb = np.take(xb, np.arange(k), axis=kb_axis)
            m = (va[-1] if a_trans else va[-2]) if va is not None else None
            n = (vb[-2] if b_trans else vb[-1]) if vb is not None else None
            out_valid = (m, n)
        out = multiply(xa, xb, env[bias][0] if bias >= 0 else None)
        if out_valid is None:
            env[r] = (out, None)
        else:
            full = out.shape[-result_rank:]
            m, n = out_valid
            valid = (*full[:-2], full[-2] if m is None else m, full[-1] if n is None else n)
            env[r] = (out, normalize_valid(valid, full))

    return run


def scaled_mm_rule(c: _Compiler, op: Operation) -> Step:
    """`pto.scaled_mm`: as `matmul`, the contraction covers only the K both operands hold
    (the scales cut to its ceil(K / 64) pairs); M from a's valid shape, N from b's."""
    assert isinstance(op, pto.ScaledMmOp)
    out_dtype = numpy_dtype(op.result.type)
    flags = {
        name: getattr(op, name) is not None
        for name in ("a_trans", "b_trans", "scale_a_trans", "scale_b_trans")
    }
    a_trans, b_trans = flags["a_trans"], flags["b_trans"]
    ka_axis, kb_axis = (0 if a_trans else 1), (1 if b_trans else 0)
    sa_axis, sb_axis = (0 if flags["scale_a_trans"] else 1), (1 if flags["scale_b_trans"] else 0)
    a, b, r = c.slot(op.a), c.slot(op.b), c.slot(op.result)
    sa, sb = c.slot(op.scale_a), c.slot(op.scale_b)
    bias = c.slot(op.bias) if op.bias is not None else -1

    def run(env: Env) -> None:
        xa, va = env[a]
        xb, vb = env[b]
        xsa, xsb = env[sa][0], env[sb][0]
        out_valid = None
        if va is not None or vb is not None:
            ka = va[ka_axis] if va is not None else xa.shape[ka_axis]
            kb = vb[kb_axis] if vb is not None else xb.shape[kb_axis]
            k = min(ka, kb)
            if k < xa.shape[ka_axis] or k < xb.shape[kb_axis]:
                k0 = -(-k // 64)
                xa = np.take(xa, np.arange(k), axis=ka_axis)
                xb = np.take(xb, np.arange(k), axis=kb_axis)
                xsa = np.take(xsa, np.arange(k0), axis=sa_axis)
                xsb = np.take(xsb, np.arange(k0), axis=sb_axis)
            m = (va[1] if a_trans else va[0]) if va is not None else None
            n = (vb[0] if b_trans else vb[1]) if vb is not None else None
            out_valid = (m, n)
        out = semantics.scaled_mm(
            xa,
            xb,
            xsa,
            xsb,
            out_dtype,
            bias=env[bias][0] if bias >= 0 else None,
            **flags,
        )
        if out_valid is None:
            env[r] = (out, None)
        else:
            m, n = out_valid
            full = out.shape
            valid = (full[0] if m is None else m, full[1] if n is None else n)
            env[r] = (out, normalize_valid(valid, full))

    return run


def quant_mx_rule(c: _Compiler, op: Operation) -> Step:
    """`pto.quant_mx`: the whole tile quantised (blocks are along the last dim, so a
    row's padding never mixes into a valid block's scale unless the valid length cuts a
    block, which PyPTO's performance mode forbids); the valid shape carries over, the
    scale's last two dims cut to the pairs that hold valid blocks."""
    assert isinstance(op, pto.QuantMxOp)
    x, rq, rs = c.slot(op.input), c.slot(op.quantized), c.slot(op.scale)

    def run(env: Env) -> None:
        arr, valid = env[x]
        quantized, scale = semantics.quant_mx(arr)
        scale_valid = None
        if valid is not None:
            scale_valid = (*valid[:-1], -(-valid[-1] // 64), 2)
        env[rq] = (quantized, normalize_valid(valid, quantized.shape))
        env[rs] = (scale, normalize_valid(scale_valid, scale.shape))

    return run
