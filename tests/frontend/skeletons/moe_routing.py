"""Seed 001: the MoE routing (sigmoid gating) skeleton (PyPTO-Gym examples/moe_routing.md), verbatim.

Placeholders: the minimal set-up of seed 003 (``sl = [B, D]`` router scores of B tokens over
D experts, ``batch, inner = B, [D]``, ``pypto_dtype = pypto.DT_FP32``).  The three-argument
``pypto.div(..., pypto.PrecisionType.INTRINSIC)`` does not exist in PyPTO 0.2.0 (``div`` takes
two arguments and there is no ``PrecisionType``), so this file parses but does not compile there.
"""

import pypto

B, D = 8, 128
sl = [B, D]
pypto_dtype = pypto.DT_FP32
batch, inner = B, [D]


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def moe_routing_kernel(a: pypto.Tensor(sl, pypto_dtype), out: pypto.Tensor(sl, pypto_dtype)):
    for i in pypto.loop(batch, name="token", unroll_list=[1]):
        a_s = pypto.view(a, [1] + inner, [i] + [0] * len(inner))
        pypto.set_vec_tile_shapes(1, *inner)
        x = pypto.cast(a_s, pypto.DT_FP32)
        e = pypto.add(pypto.exp(pypto.mul(x, -1.0)), 1.0) # sigmoid 展开: 1/(1+exp(-x))
        ones = pypto.full([1] + inner, 1.0, pypto.DT_FP32)
        w = pypto.div(ones, e, pypto.PrecisionType.INTRINSIC)
        s = pypto.sum(w, dim=-1, keepdim=True)
        r = pypto.div(w, s) # 归一化门控权重
        pypto.assemble(r, [i] + [0] * len(inner), out)
