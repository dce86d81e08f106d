"""PyPTO-Gym-style inplace reshapes of tensors in memory with a dynamic shape: a
`[tokens, heads, dim]` input and a `[tokens, heads * dim]` output are both read and
written as `[tokens * heads, dim]` rows (the attention kernels' flattening), a static
parameter is reshaped as it always was (read whole into a tile), and a second loop
reads the output back through its own name after the first wrote it through the alias.
"""

import pypto

ROWS = 8
EPS = 1e-6


@pypto.frontend.jit
def head_rms(
    q: pypto.Tensor([pypto.DYNAMIC, 4, 32], pypto.DT_BF16),
    gamma: pypto.Tensor([32], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32),
    token_sum: pypto.Tensor([pypto.DYNAMIC, 1], pypto.DT_FP32),
):
    t = q.shape[0]
    n = q.shape[1]
    d = q.shape[2]
    rows = t * n
    q_rows = pypto.reshape(q, [rows, d], inplace=True)
    out_rows = pypto.reshape(out, [t * n, d], inplace=True)
    g = pypto.reshape(gamma, [1, d], inplace=True)
    for i in pypto.loop(pypto.ceildiv(rows, ROWS), name="rows", idx_name="i"):
        start = i * ROWS
        valid = pypto.min(rows - start, ROWS)
        pypto.set_vec_tile_shapes(ROWS, 32)
        x = pypto.view(q_rows, [ROWS, 32], [start, 0], valid_shape=[valid, 32])
        x = pypto.cast(x, pypto.DT_FP32)
        mean_sq = pypto.sum(x * x, -1, keepdim=True) / d
        y = x / pypto.sqrt(mean_sq + EPS) * g
        pypto.assemble(y, [start, 0], out_rows)
    for j in pypto.loop(pypto.ceildiv(t, 2), name="tokens", idx_name="j"):
        pypto.set_vec_tile_shapes(2, 128)
        tok = pypto.view(out, [2, 128], [j * 2, 0], valid_shape=[pypto.min(t - j * 2, 2), 128])
        pypto.assemble(pypto.sum(tok, -1, keepdim=True), [j * 2, 0], token_sum)


@pypto.frontend.jit
def flat_copy(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
):
    """`y` written through a rank-1 alias of it, 16 elements a step."""
    t = x.shape[0]
    flat = pypto.reshape(y, [t * 16], inplace=True)
    for i in pypto.loop(t, name="rows", idx_name="i"):
        pypto.set_vec_tile_shapes(1, 16)
        row = pypto.view(x, [1, 16], [i, 0])
        pypto.assemble(pypto.reshape(row, [16]) + 1.0, [i * 16], flat)
