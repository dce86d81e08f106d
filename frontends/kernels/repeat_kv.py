"""repeat_kv for GQA, ``[B, NKV, S, D] -> [B, NKV * GROUPS, S, D]`` (seed 001, repeat_kv scheme A).

``unsqueeze`` -> ``expand_clone`` -> ``reshape``: KV head ``h`` is copied to query heads
``h * GROUPS ... h * GROUPS + GROUPS - 1``.  One batch per iteration keeps every tile at 4-D
(the seed's 5-D ``[B, NKV, GROUPS, S, D]`` form needs the batch axis inside the tile).
Pure data movement: bit-exact.
"""

import pypto

BATCH = 2
NKV = 2
GROUPS = 3
NQ = NKV * GROUPS
SEQ = 8
HEAD_DIM = 32


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def repeat_kv_kernel(
    kv: pypto.Tensor([BATCH, NKV, SEQ, HEAD_DIM], pypto.DT_BF16),
    out: pypto.Tensor([BATCH, NQ, SEQ, HEAD_DIM], pypto.DT_BF16),
):
    for b_idx in pypto.loop(BATCH, name="batch", idx_name="b_idx", unroll_list=[1]):
        pypto.set_vec_tile_shapes(1, NKV, SEQ, HEAD_DIM)
        kv_b = pypto.view(kv, [1, NKV, SEQ, HEAD_DIM], [b_idx, 0, 0, 0])
        # A reshape runs under a tile shape of its input's rank.
        kv_3d = pypto.reshape(kv_b, [NKV, SEQ, HEAD_DIM])
        pypto.set_vec_tile_shapes(NKV, 1, SEQ, HEAD_DIM)
        kv_4d = pypto.unsqueeze(kv_3d, 1)
        pypto.set_vec_tile_shapes(NKV, GROUPS, SEQ, HEAD_DIM)
        kv_rep = pypto.expand_clone(kv_4d, [NKV, GROUPS, SEQ, HEAD_DIM])
        pypto.set_vec_tile_shapes(1, NQ, SEQ, HEAD_DIM)
        kv_out = pypto.reshape(kv_rep, [1, NQ, SEQ, HEAD_DIM])
        pypto.assemble(kv_out, [b_idx, 0, 0, 0], out)
