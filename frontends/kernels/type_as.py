"""type_as, ``out = a.to(out.dtype)`` (seed 003, the ``type_as`` kernel skeleton).

The target dtype is the output tensor's dtype (``type_as(other)`` takes ``other.dtype``); the
cast is element-wise, so the batch axis is looped and the inner axes are one whole tile.  FP32
-> BF16 as in the seed's example set-up; the default cast mode (CAST_NONE) rounds to nearest
even.
"""

import pypto

BATCH = 5
SEQ = 8
HIDDEN = 64
SRC_DTYPE = pypto.DT_FP32
DST_DTYPE = pypto.DT_BF16
INNER = [SEQ, HIDDEN]
SHAPE = [BATCH] + INNER


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def type_as_kernel(
    a: pypto.Tensor(SHAPE, SRC_DTYPE),
    out: pypto.Tensor(SHAPE, DST_DTYPE),
):
    for i in pypto.loop(BATCH, name="batch", idx_name="i", unroll_list=[2, 1]):
        a_s = pypto.view(a, [1] + INNER, [i] + [0] * len(INNER))
        pypto.set_vec_tile_shapes(1, *INNER)
        r = pypto.cast(a_s, DST_DTYPE)
        pypto.assemble(r, [i] + [0] * len(INNER), out)
