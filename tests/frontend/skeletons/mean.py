"""Seed 001: the mean skeleton (PyPTO-Gym examples/mean.md, ``sum(dim) / N``), verbatim.

Placeholders: ``sl = [B, D]``, ``ol = [B, 1]``, ``batch, inner = B, [D]``, ``inner_out = [1]``
(``inner`` with the reduced axis kept), ``pypto_dtype = pypto.DT_FP32`` (``pypto.sum`` wants
FP32 input).
"""

import pypto

B, D = 8, 128
sl, ol = [B, D], [B, 1]
pypto_dtype = pypto.DT_FP32
batch, inner = B, [D]
inner_out = [1]


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mean_kernel(a: pypto.Tensor(sl, pypto_dtype), out: pypto.Tensor(ol, pypto_dtype)):
    for i in pypto.loop(batch, name="batch", unroll_list=[1]):
        a_s = pypto.view(a, [1] + inner, [i] + [0] * len(inner))
        pypto.set_vec_tile_shapes(1, *inner)
        s = pypto.sum(a_s, dim=-1, keepdim=True)
        n = pypto.full([1] + inner_out, float(inner[-1]), pypto_dtype)
        r = pypto.div(s, n)
        pypto.assemble(r, [i] + [0] * (len(ol) - 1), out)
