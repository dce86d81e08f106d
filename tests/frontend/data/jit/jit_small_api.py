"""Smaller PyPTO API constructs of the Gym's kernels, written here in their style:
`pypto.loop(..., parallel=True)`, `unroll_list` given as a set,
`pypto.experimental.auto_mix_partition`, `precision_type` on unary ops and pow,
`pypto.matmul` with `extend_params` `scale` / `relu_type` / `trans_mode`, a 4-D matmul,
`pypto.where` with two scalar branches, attributes assigned in a kernel, `pypto.softmax`."""

import pypto

ROWS = 6
TILE = 2
ROW_LOOPS = ROWS // TILE
UNROLL_SET = {2, 4}  # PyPTO reads `set(unroll_list)` and adds 1


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def scaled_rows(
    x: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
    y: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
    z: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(TILE, 32)
    # rows are independent: PyPTO may schedule the iterations in parallel
    for r_idx in pypto.loop(
        ROW_LOOPS, name="LOOP_ROWS", idx_name="r_idx", parallel=True, unroll_list={8, 4, 2, 1}
    ):
        rows = x[r_idx * TILE : (r_idx + 1) * TILE, :]
        y[r_idx * TILE : (r_idx + 1) * TILE, :] = pypto.exp(rows) * 0.5
    for b_idx, n in pypto.loop_unroll(
        0, ROWS, 1, name="LOOP_SHIFT", idx_name="b_idx", unroll_list=UNROLL_SET, parallel=True
    ):
        blk = pypto.view(x, [4, 32], [b_idx, 0], valid_shape=[n, 32])
        z[b_idx:, :] = blk + 1.0


pypto.experimental.auto_mix_partition(0)  # host code: a setting, nothing to read


@pypto.frontend.jit(
    runtime_options={"run_mode": pypto.RunMode.NPU},
    pass_options={"cube_l1_reuse_setting": {-1: 2}},
)
def mixed_matmul(
    a: pypto.Tensor([16, 32], pypto.DT_FP32),
    b: pypto.Tensor([32, 16], pypto.DT_FP32),
    out: pypto.Tensor([16, 16], pypto.DT_FP32),
):
    pypto.experimental.auto_mix_partition(1)
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
    c = pypto.matmul(a, b, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(16, 16)
    out[:] = pypto.exp(c * 0.125)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def precise_softplus(
    x: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(ROWS, 32)
    e = pypto.exp(x, pypto.PrecisionType.HIGH_PRECISION)
    sp = pypto.log(e + 1.0, pypto.LogBaseType.LOG_E, precision_type=pypto.PrecisionType.INTRINSIC)
    r = pypto.rsqrt(sp * sp + 1.0, precision_type=pypto.PrecisionType.INTRINSIC)
    s = pypto.sqrt(pypto.reciprocal(r, pypto.PrecisionType.HIGH_PRECISION))
    out[:] = pypto.pow(s, 2.0, pypto.PrecisionType.INTRINSIC)


M, K, N = 32, 64, 32
M_TILE = 16
SCALE = 0.05


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def dequant_matmul(
    a: pypto.Tensor([M, K], pypto.DT_INT8),
    b: pypto.Tensor([K, N], pypto.DT_INT8),
    out: pypto.Tensor([M, N], pypto.DT_FP16),
    relu_out: pypto.Tensor([M, N], pypto.DT_FP16),
):
    pypto.set_cube_tile_shapes([M_TILE, M_TILE], [K, K], [N, N])
    scale = float(SCALE)
    for m_idx in pypto.loop(0, M // M_TILE, 1, name="LOOP_M", idx_name="m_idx"):
        a_view = a[m_idx * M_TILE : (m_idx + 1) * M_TILE, :]
        out[m_idx * M_TILE : (m_idx + 1) * M_TILE, :] = pypto.matmul(
            a_view,
            b,
            pypto.DT_FP16,
            extend_params={"scale": scale, "relu_type": pypto.ReLuType.NO_RELU},
        )
        relu_out[m_idx * M_TILE : (m_idx + 1) * M_TILE, :] = pypto.matmul(
            a_view,
            b,
            pypto.DT_FP16,
            extend_params={"scale": scale, "relu_type": pypto.ReLuType.RELU},
        )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def quant_matmul(
    x1: pypto.Tensor([M, K], pypto.DT_FP16),
    x2: pypto.Tensor([N, K], pypto.DT_FP16),
    out: pypto.Tensor([M, N], pypto.DT_INT8),
):
    pypto.set_cube_tile_shapes([M, M], [K, K], [N, N])
    out[:] = pypto.matmul(
        x1, x2, pypto.DT_INT8, a_trans=False, b_trans=True, extend_params={"scale": 3.0}
    )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def tf32_relu_matmul(
    a: pypto.Tensor([M, K], pypto.DT_FP32),
    b: pypto.Tensor([K, N], pypto.DT_FP32),
    out: pypto.Tensor([M, N], pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([M, M], [K, K], [N, N])
    params = {"trans_mode": pypto.TransMode.CAST_RINT, "relu_type": pypto.ReLuType.RELU}
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params=params)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def batched_4d_matmul(
    q: pypto.Tensor([2, 2, 16, 32], pypto.DT_FP32),
    k: pypto.Tensor([2, 2, 16, 32], pypto.DT_FP32),
    out: pypto.Tensor([2, 2, 16, 16], pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
    pypto.set_vec_tile_shapes(1, 1, 16, 16)
    out[:] = pypto.matmul(q, k, pypto.DT_FP32, b_trans=True)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def masked_rows(
    labels: pypto.Tensor([4, 16], pypto.DT_FP32),
    x: pypto.Tensor([4, 16], pypto.DT_FP16),
    mask: pypto.Tensor([4, 16], pypto.DT_FP32),
    halves: pypto.Tensor([4, 16], pypto.DT_FP16),
):
    pypto.set_vec_tile_shapes(4, 16)
    ignore = pypto.Element(pypto.DT_FP32, -100.0)
    is_ignore = pypto.eq(labels[:, :], ignore)
    mask[:] = pypto.where(is_ignore, 0.0, 1.0)
    is_big = pypto.gt(x[:, :], pypto.Element(pypto.DT_FP16, 0.5))
    halves[:] = pypto.where(
        is_big, pypto.Element(pypto.DT_FP16, 0.5), pypto.Element(pypto.DT_FP16, -0.25)
    )


class RowScaler:
    """Trace-time state a kernel's helper updates (`self.x = ...`), Gym style."""

    def __init__(self, rows):
        self.rows = rows
        self.scale = 1.0
        self.steps = 0

    def step(self, x):
        self.steps += 1
        self.scale = self.scale * 2.0
        self.last = pypto.exp(x) * self.scale


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def stateful_scale(
    x: pypto.Tensor([4, 16], pypto.DT_FP32),
    out: pypto.Tensor([4, 16], pypto.DT_FP32),
):
    scaler = RowScaler(4)
    scaler.rows = scaler.rows * 1
    pypto.set_vec_tile_shapes(scaler.rows, 16)
    scaler.step(x)
    scaler.step(x)
    out[:] = scaler.last + float(scaler.steps)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def row_softmax(
    x: pypto.Tensor([4, 32], pypto.DT_BF16),
    y: pypto.Tensor([4, 32], pypto.DT_FP32),
    out_x: pypto.Tensor([4, 32], pypto.DT_BF16),
    out_y: pypto.Tensor([4, 32], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(4, 32)
    out_x[:] = pypto.softmax(x, -1)
    out_y[:] = pypto.softmax(y, 0)
