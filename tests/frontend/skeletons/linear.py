"""Seed 001: the Linear-with-bias skeleton (PyPTO-Gym examples/linear.md, extend_params bias), verbatim.

Placeholders: ``sl = [B, K]`` input rows, weight ``[N, K]`` (nn.Linear layout, hence
``b_trans=True``), ``ol = [B, N]``, ``batch, inner = B, [K]``, ``pypto_dtype = pypto.DT_FP32``
(seed 003's minimal set-up, extended with ``N``, ``K`` and ``ol``).  PyPTO 0.2.0 rejects the
1-D ``bias_tensor`` (``FC3000 Bias tensor shape dimension mismatch: Expected 2 dimensions, got
1``): a compiling kernel reshapes it to ``[1, N]`` first (``frontends/kernels/linear.py``).
"""

import pypto

B, K, N = 8, 128, 64
sl, ol = [B, K], [B, N]
pypto_dtype = pypto.DT_FP32
batch, inner = B, [K]


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def linear_kernel(a: pypto.Tensor(sl, pypto_dtype), b: pypto.Tensor([N, K], pypto_dtype), bias: pypto.Tensor([N], pypto_dtype), out: pypto.Tensor(ol, pypto_dtype)):
    for i in pypto.loop(batch, name="batch", unroll_list=[1]):
        a_s = pypto.view(a, [1] + inner, [i] + [0] * len(inner))
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
        r = pypto.matmul(a_s, b, pypto_dtype, b_trans=True, extend_params={"bias_tensor": bias})
        pypto.assemble(r, [i] + [0] * (len(ol) - 1), out)
