"""Kernels written in the PyPTO-Gym style that read single elements of integer tables
(`x[i, j]`, PyPTO's `SymbolicScalar`) and use them as offsets, valid shapes, loop bounds
and in index arithmetic; tileir's tests check them against numpy goldens and against
the real pypto 0.2.0."""

import pypto

RUN = {"run_mode": pypto.RunMode.SIM}
BLOCK = 2


@pypto.frontend.jit(runtime_options=RUN)
def paged_gather(
    cache: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    block_table: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT32),
    seq_lens: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    """Row b of the output holds the first seq_lens[b] cache rows of sequence b, read
    block by block through its block table (blocks of BLOCK rows)."""
    batch, blocks = block_table.shape
    dim = cache.shape[1]
    pypto.set_vec_tile_shapes(BLOCK, dim)
    for b in pypto.loop(batch, name="BATCH", idx_name="b"):
        actual_len = seq_lens[b]
        used = (actual_len + BLOCK - 1) // BLOCK
        for j in pypto.loop(0, used, 1, name="BLOCKS", idx_name="j"):
            blk = block_table[b, j]
            rows = (actual_len - j * BLOCK).min(BLOCK)
            tile = pypto.view(cache, [BLOCK, dim], [blk * BLOCK, 0], valid_shape=[rows, dim])
            pypto.assemble(tile * 2.0, [(b * blocks + j) * BLOCK, 0], out)


@pypto.frontend.jit(runtime_options=RUN)
def routed_sum(
    expert_out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    row_index: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
    expert_ids: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT32),
    bias: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    top_k: int = 2,
):
    """out[i] = sum over k of expert_out[max(row_index[i * top_k + k], 0)] +
    bias[expert_ids[i, k]]: a MoE finalize with a clamped row index."""
    tokens, hidden = out.shape
    pypto.set_vec_tile_shapes(1, hidden)
    for i in pypto.loop(tokens, name="TOKENS", idx_name="i"):
        acc = pypto.tensor([1, hidden], pypto.DT_FP32, "acc")
        for k in range(top_k):
            row = row_index[i * top_k + k].max(0)
            expert = expert_ids[i, k]
            picked = pypto.view(expert_out, [1, hidden], [row, 0])
            shift = pypto.view(bias, [1, hidden], [expert, 0])
            if k == 0:
                acc[:] = picked + shift
            else:
                acc[:] = acc + (picked + shift)
        pypto.assemble(acc, [i, 0], out)


@pypto.frontend.jit(runtime_options=RUN)
def segment_chunks(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    starts: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    chunk: int = 4,
):
    """Segment b is rows starts[b] .. starts[b + 1] of x (cumulative lengths); each
    chunk of `chunk` rows is written negated to the same rows of out."""
    dim = x.shape[1]
    segments = starts.shape[0] - 1
    pypto.set_vec_tile_shapes(chunk, dim)
    for b in pypto.loop(segments, name="SEGMENTS", idx_name="b"):
        length = starts[b + 1] - starts[b]
        begin = starts[b]
        for s in pypto.loop(0, length, chunk, name="CHUNKS", idx_name="s"):
            rows = (length - s).min(chunk)
            t = pypto.view(x, [chunk, dim], [begin + s, 0], valid_shape=[rows, dim])
            pypto.assemble(-t, [begin + s, 0], out)


@pypto.frontend.jit(runtime_options=RUN)
def slot_write(
    rows: pypto.Tensor([pypto.STATIC, 1, pypto.STATIC], pypto.DT_FP32),
    slots: pypto.Tensor([pypto.STATIC], pypto.DT_INT64),
    cache: pypto.Tensor([pypto.STATIC, BLOCK, pypto.STATIC], pypto.DT_FP32),
):
    """Token t is written into the paged cache at its slot (a DT_INT64 slot mapping):
    block slots[t] // BLOCK, row slots[t] % BLOCK."""
    tokens, _, dim = rows.shape
    pypto.set_vec_tile_shapes(1, 1, dim)
    for t in pypto.loop(tokens, name="TOKENS", idx_name="t"):
        slot = slots[t]
        row = pypto.view(rows, [1, 1, dim], [t, 0, 0])
        pypto.assemble(row, [slot // BLOCK, slot % BLOCK, 0], cache)
