"""Kernels written in the PyPTO-Gym style that read `t.valid_shape` (PyPTO's valid shape
of a tensor, used as an offset) and make `pypto.tensor` workspaces whose shape has
run-time sizes (a DYNAMIC dim's `x.shape[0]`, an element read); tileir's tests check
them against numpy goldens and against the real pypto 0.2.0."""

import pypto

RUN = {"run_mode": pypto.RunMode.SIM}
L = 4


@pypto.frontend.jit(runtime_options=RUN)
def chunk_decay(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    gate: pypto.Tensor([pypto.DYNAMIC, 1], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    last: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    """Chunks of L rows (the last one a tail): row r of a chunk is scaled by
    exp(gate of the chunk's last row - gate[r]); `last[ci]` is the chunk's last row of
    the result. Both "last rows" come from valid shapes, so the tail chunk uses its own."""
    t = x.shape[0]
    dim = x.shape[1]
    for ci in pypto.loop(last.shape[0], name="LOOP_C", idx_name="ci"):
        c = ci * L
        actual = (t - c).min(L)
        pypto.set_vec_tile_shapes(L, dim)
        g = pypto.view(gate, [L, 1], [c, 0], valid_shape=[actual, 1])
        xv = pypto.view(x, [L, dim], [c, 0], valid_shape=[actual, dim])
        rows = g.valid_shape[0]
        decay = (g[rows - 1 : rows, :] - g).exp()
        y = xv * decay
        out[c:, 0:] = y
        n = y.valid_shape[0]
        last[ci : ci + 1, :] = y[n - 1 : n, :]


@pypto.frontend.jit(runtime_options=RUN)
def chunk_mix(
    gate: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    mix: pypto.Tensor([8, 8], pypto.DT_FP32),
    rest: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    total: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    """Chunks of 8 rows, zero-padded, mixed by an 8 x 8 matmul whose valid rows are
    mix's (all 8, as in PyPTO), so the row read at `valid_shape[0] - 1` is the mixed
    chunk's last row even in the tail chunk: `total[ci]` is that row and `rest[r]` =
    total - mixed[r] (re-windowed to the chunk's valid rows before it is written, as
    PyPTO 0.2.0 needs)."""
    t = gate.shape[0]
    size = mix.shape[0]
    pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])
    for ci in pypto.loop(total.shape[0], name="LOOP_C", idx_name="ci"):
        c = ci * size
        actual = (t - c).min(size)
        pypto.set_vec_tile_shapes(size, 16)
        g = pypto.view(gate, [size, 16], [c, 0], valid_shape=[actual, 16])
        padded = pypto.fillpad(g, "constant", 0.0)
        mixed = pypto.matmul(mix, padded, pypto.DT_FP32)
        m = mixed.valid_shape[0]
        last_row = mixed[m - 1 : m, :]
        diff = last_row - mixed
        rest[c:, 0:] = pypto.view(diff, [size, 16], [0, 0], valid_shape=[actual, 16])
        total[ci : ci + 1, :] = last_row


@pypto.frontend.jit(runtime_options=RUN)
def staged_rows(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    """exp(x) staged in a workspace of x's run-time row count, read back in a second
    loop: out = 2 * exp(x) + x."""
    t = x.shape[0]
    dim = x.shape[1]
    stage = pypto.tensor([t, dim], pypto.DT_FP32, "stage")
    for c in pypto.loop(0, t, L, name="EXP", idx_name="c"):
        rows = (t - c).min(L)
        pypto.set_vec_tile_shapes(L, dim)
        xv = pypto.view(x, [L, dim], [c, 0], valid_shape=[rows, dim])
        stage[c:, 0:] = xv.exp()
    for c2 in pypto.loop(0, stage.shape[0], L, name="MIX", idx_name="c2"):
        rows = (t - c2).min(L)
        pypto.set_vec_tile_shapes(L, dim)
        e = pypto.view(stage, [L, dim], [c2, 0], valid_shape=[rows, dim])
        xv = pypto.view(x, [L, dim], [c2, 0], valid_shape=[rows, dim])
        out[c2:, 0:] = e * 2.0 + xv


@pypto.frontend.jit(runtime_options=RUN)
def segment_reverse(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    starts: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    """Segment b is rows starts[b] .. starts[b + 1] of x; its rows, doubled, go through
    a workspace of starts[-1] rows (an element read) and come out in reverse order."""
    dim = x.shape[1]
    segments = starts.shape[0] - 1
    buf = pypto.tensor([starts[segments], dim], pypto.DT_FP32, "buf")
    pypto.set_vec_tile_shapes(1, dim)
    for b in pypto.loop(segments, name="SEG", idx_name="b"):
        begin = starts[b]
        length = starts[b + 1] - begin
        for r in pypto.loop(0, length, 1, name="IN", idx_name="r"):
            buf[begin + r : begin + r + 1, :] = pypto.view(x, [1, dim], [begin + r, 0]) * 2.0
        for r2 in pypto.loop(0, length, 1, name="OUT", idx_name="r2"):
            row = pypto.view(buf, [1, dim], [begin + length - 1 - r2, 0])
            out[begin + r2 : begin + r2 + 1, :] = row
