"""Seed 003: the ``type_as`` kernel skeleton (PyPTO-Gym examples/type_as.md), verbatim.

The seed's scrape dropped ``@``, ``=``, ``+`` and the string quotes from this skeleton; they are
restored here (nothing else changed).  The placeholders are the seed's minimal set-up (``B, D =
8, 128``, ``sl, ol = [B, D], [B, D]``, ``pypto_dtype = pypto.DT_FP32``, ``batch, inner = B,
[D]``) plus the two dtypes the skeleton names (FP32 -> BF16, the seed's example).
"""

import pypto

B, D = 8, 128
sl, ol = [B, D], [B, D]  # type_as does not change the shape
pypto_dtype = pypto.DT_FP32
batch, inner = B, [D]
src_dtype = pypto.DT_FP32
dst_dtype = pypto.DT_BF16


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def type_as_kernel(a: pypto.Tensor(sl, src_dtype), out: pypto.Tensor(sl, dst_dtype)):
    for i in pypto.loop(batch, name="batch", unroll_list=[1]):
        a_s = pypto.view(a, [1] + inner, [i] + [0] * len(inner))
        pypto.set_vec_tile_shapes(1, *inner)
        r = pypto.cast(a_s, dst_dtype)
        pypto.assemble(r, [i] + [0] * len(inner), out)
