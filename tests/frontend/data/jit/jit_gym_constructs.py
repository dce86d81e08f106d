"""PyPTO-Gym-style constructs: ceildiv and Python `min` on index values, pypto.cond on a
symbolic scalar, tensor methods, compiler options (formats, cache policy, matrix size),
`pypto.platform.npuarch`, `range(x.dim)`, and a [1, 1] tile into a rank-1 tensor."""

import pypto

TILE = 8


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def row_softmax(
    x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32, format=pypto.TileOpFormat.TILEOP_ND),
    w: pypto.Tensor([4, 16], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
    total: pypto.Tensor([1], pypto.DT_FP32),
):
    x.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
    rows = x.shape[0]
    tiles = pypto.ceildiv(rows, TILE)
    if pypto.platform.npuarch == "DAV_3510":
        pypto.set_vec_tile_shapes(TILE * 2, 32)  # not the architecture tileir traces for
    else:
        pypto.set_vec_tile_shapes(TILE, 32)
    pypto.set_matrix_size([TILE, 32, 16])
    base = pypto.symbolic_scalar(0)
    for i in pypto.loop(tiles, name="ROWS", idx_name="i"):
        start = base + i * TILE
        valid = min(rows - start, TILE)
        t = pypto.view(x, [TILE, 32], [start, 0], valid_shape=[valid, 32])
        e = (t - t.amax(-1, keepdim=True)).exp()
        p = e / e.sum(-1, keepdim=True)
        if pypto.cond(pypto.is_loop_begin(i)):
            y[start:, :] = p * 2.0
        else:
            y[start:, :] = p
    s = pypto.view(w, [4, 16], [0, 0])
    for d in range(w.dim):
        s = s.sum(d, keepdim=True)
    total[:] = s


@pypto.frontend.jit
def scale_rows(
    x: pypto.Tensor([pypto.STATIC, 16], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, 16], pypto.DT_FP32),
    scale: float,
):
    tmp = pypto.Tensor((x.shape[0], 16), pypto.DT_FP32, "tmp")
    tmp[:] = x * scale
    out[:] = tmp


@pypto.frontend.jit
def traced_forever(
    x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32)
):
    acc = 0
    for _ in range(10**9):
        acc += 1
    out[:] = x
