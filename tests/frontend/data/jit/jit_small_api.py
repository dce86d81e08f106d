"""Smaller PyPTO API constructs of the Gym's kernels, written here in their style:
`pypto.loop(..., parallel=True)`, `unroll_list` given as a set,
`pypto.experimental.auto_mix_partition`, `precision_type` on unary ops and pow."""

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
    for r_idx in pypto.loop(ROW_LOOPS, name="LOOP_ROWS", idx_name="r_idx", parallel=True,
                            unroll_list={8, 4, 2, 1}):
        rows = x[r_idx * TILE:(r_idx + 1) * TILE, :]
        y[r_idx * TILE:(r_idx + 1) * TILE, :] = pypto.exp(rows) * 0.5
    for b_idx, n in pypto.loop_unroll(0, ROWS, 1, name="LOOP_SHIFT", idx_name="b_idx",
                                      unroll_list=UNROLL_SET, parallel=True):
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
