"""Embedding lookup, ``out[..., :] = weight[ids[...], :]`` (seed 001, Embedding schemes A and B).

- ``embedding_gather_kernel`` (scheme A): multi-dimensional ``ids: [BATCH, SEQ]`` without
  flattening, one batch row per iteration.  ``pypto.gather`` has ``torch.gather`` semantics
  (``out[s][h] = weight[index[s][h]][h]`` for ``dim=0``), so the row's ids are turned into a
  ``[SEQ, HIDDEN]`` index by ``reshape`` + ``expand_clone`` first.
- ``embedding_index_select_kernel`` (scheme B): 1-D ``ids: [TOKENS]`` with
  ``pypto.index_select``, ``TOKEN_TILE`` ids per iteration with a tail tile.

FP32 table as in the seed skeleton; both kernels only move data, so they are bit-exact.
"""

import pypto

VOCAB = 64
HIDDEN = 32
BATCH = 3
SEQ = 8
TOKENS = 20
TOKEN_TILE = 8
TOKEN_LOOP = (TOKENS + TOKEN_TILE - 1) // TOKEN_TILE


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def embedding_gather_kernel(
    weight: pypto.Tensor([VOCAB, HIDDEN], pypto.DT_FP32),
    ids: pypto.Tensor([BATCH, SEQ], pypto.DT_INT32),
    out: pypto.Tensor([BATCH, SEQ, HIDDEN], pypto.DT_FP32),
):
    for b_idx in pypto.loop(BATCH, name="row", idx_name="b_idx", unroll_list=[1]):
        pypto.set_vec_tile_shapes(1, SEQ)
        row_ids = pypto.view(ids, [1, SEQ], [b_idx, 0])
        col_ids = pypto.reshape(row_ids, [SEQ, 1])
        pypto.set_vec_tile_shapes(SEQ, HIDDEN)
        index = pypto.expand_clone(col_ids, [SEQ, HIDDEN])
        rows = pypto.gather(weight, 0, index)
        pypto.set_vec_tile_shapes(1, SEQ, HIDDEN)
        pypto.assemble(pypto.reshape(rows, [1, SEQ, HIDDEN]), [b_idx, 0, 0], out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def embedding_index_select_kernel(
    weight: pypto.Tensor([VOCAB, HIDDEN], pypto.DT_FP32),
    ids: pypto.Tensor([TOKENS], pypto.DT_INT32),
    out: pypto.Tensor([TOKENS, HIDDEN], pypto.DT_FP32),
):
    for t_idx in pypto.loop(TOKEN_LOOP, name="LOOP_TOKEN", idx_name="t_idx", unroll_list=[2, 1]):
        cur = pypto.min(TOKENS - t_idx * TOKEN_TILE, TOKEN_TILE)
        pypto.set_vec_tile_shapes(TOKEN_TILE)
        tile_ids = pypto.view(ids, [TOKEN_TILE], [t_idx * TOKEN_TILE], valid_shape=[cur])
        pypto.set_vec_tile_shapes(TOKEN_TILE, HIDDEN)
        rows = pypto.index_select(weight, 0, tile_ids)
        pypto.assemble(rows, [t_idx * TOKEN_TILE, 0], out)
