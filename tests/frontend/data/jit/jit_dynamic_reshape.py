"""PyPTO-Gym-style inplace reshapes of tensors in memory with a dynamic shape: a
`[tokens, heads, dim]` input is read as `[tokens * heads, dim]` rows (the attention
kernels' flattening), a static parameter is reshaped as it always was (read whole into a
tile), the output is written in its own shape and then read back as rows through an
inplace reshape of it. (Writes should go to a tensor's own name: PyPTO 0.2.0 loses writes through an
inplace reshape of a tensor in memory.)
"""

import pypto

TOKENS = 2
EPS = 1e-6


@pypto.frontend.jit
def head_rms(
    q: pypto.Tensor([pypto.DYNAMIC, 4, 32], pypto.DT_BF16),
    gamma: pypto.Tensor([32], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32),
    head_max: pypto.Tensor([pypto.DYNAMIC, 1], pypto.DT_FP32),
):
    t = q.shape[0]
    n = q.shape[1]
    d = q.shape[2]
    rows = t * n
    q_rows = pypto.reshape(q, [rows, d], inplace=True)
    g = pypto.reshape(gamma, [1, d], inplace=True)
    for j in pypto.loop(pypto.ceildiv(t, TOKENS), name="tokens", idx_name="j"):
        valid = pypto.min(t - j * TOKENS, TOKENS)
        pypto.set_vec_tile_shapes(TOKENS * 4, 32)
        x = pypto.view(q_rows, [TOKENS * 4, 32], [j * TOKENS * 4, 0], valid_shape=[valid * 4, 32])
        x = pypto.cast(x, pypto.DT_FP32)
        mean_sq = pypto.sum(x * x, -1, keepdim=True) / d
        y = x / pypto.sqrt(mean_sq + EPS) * g
        pypto.set_vec_tile_shapes(TOKENS, 128)
        y = pypto.reshape(y, [TOKENS, 128], valid_shape=[valid, 128])
        pypto.assemble(y, [j * TOKENS, 0], out)
    out_rows = pypto.reshape(out, [t * n, d], inplace=True)
    for i in pypto.loop(pypto.ceildiv(rows, 8), name="rows", idx_name="i"):
        pypto.set_vec_tile_shapes(8, 32)
        r = pypto.view(out_rows, [8, 32], [i * 8, 0], valid_shape=[pypto.min(rows - i * 8, 8), 32])
        pypto.assemble(pypto.amax(r, -1, keepdim=True), [i * 8, 0], head_max)


@pypto.frontend.jit
def flat_read(
    x: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    """`x` read through a rank-1 inplace reshape of it, 16 elements a step."""
    t = x.shape[0]
    flat = pypto.reshape(x, [t * 16], inplace=True)
    for i in pypto.loop(t, name="rows", idx_name="i"):
        pypto.set_vec_tile_shapes(16)
        row = pypto.view(flat, [16], [i * 16])
        pypto.set_vec_tile_shapes(1, 16)
        pypto.assemble(pypto.reshape(row, [1, 16]) + 1.0, [i, 0], y)


@pypto.frontend.jit
def write_through_alias(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
):
    """PyPTO 0.2.0 loses these writes: the numpy back end runs it, -t pypto refuses."""
    t = x.shape[0]
    flat = pypto.reshape(y, [t, 16], inplace=True)
    for i in pypto.loop(t, name="rows", idx_name="i"):
        pypto.set_vec_tile_shapes(1, 16)
        pypto.assemble(pypto.view(x, [1, 16], [i, 0]) + 1.0, [i, 0], flat)


CHUNK = 16


@pypto.frontend.jit
def chunk_col_softmax(
    x: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 4, 4], pypto.DT_FP32),
):
    """Each 4x4 matrix: a softmax down every column, then each entry times the sum of its
    row. Matrices are taken CHUNK at a time (`loop_unroll` by 1 or 4 chunks) from `x`
    read as rows of 16, turned so that the matrix index is last (transpose, then an
    inplace reshape of the tile), and written back whole with an open-ended slice. The
    last reshapes give no valid_shape, so their tiles are fully valid (PyPTO's rule):
    a row count that is not a multiple of CHUNK makes the last assemble go past `out`."""
    t = x.shape[0]
    flat = pypto.reshape(x, [t, 16], inplace=True)
    for c, n in pypto.loop_unroll(
        0, (t + CHUNK - 1) // CHUNK, 1, name="chunks", idx_name="c", unroll_list=[1, 4]
    ):
        rows = n * CHUNK
        start = c * CHUNK
        valid = (t - start).min(rows)
        pypto.set_vec_tile_shapes(64, 16)
        m = pypto.view(flat, [rows, 16], [start, 0], valid_shape=[valid, 16])
        m = pypto.transpose(m, 1, 0)
        m = pypto.reshape(m, [4, 4, rows], inplace=True)
        pypto.set_vec_tile_shapes(4, 4, 64)
        e = pypto.exp(m - pypto.amax(m, 0, True))
        e = e / pypto.sum(e, 0, True)
        e = e * pypto.sum(e, 1, True)
        e = pypto.reshape(e, [16, rows])
        pypto.set_vec_tile_shapes(16, 64)
        e = pypto.transpose(e, 1, 0)
        pypto.set_vec_tile_shapes(64, 16)
        out[start:, :, :] = pypto.reshape(e, [rows, 4, 4])
