"""Linear with bias, ``out = x @ w^T + bias`` (seed 001, Linear schemes A and B).

- ``linear_add_kernel`` (scheme A): ``add(matmul(x, w, b_trans=True), bias)``.
- ``linear_bias_kernel`` (scheme B): the bias fused into the Cube matmul with
  ``extend_params={"bias_tensor": bias}``.

``x: [M, K]``, ``w: [N, K]`` (nn.Linear layout, hence ``b_trans=True``), ``bias: [N]``, all
BF16; FP32 accumulation, BF16 exit cast with CAST_RINT.  ``M`` rows are processed ``M_TILE`` at
a time with a tail tile.
"""

import pypto

M = 20
K = 64
N = 32
M_TILE = 8
M_LOOP = (M + M_TILE - 1) // M_TILE


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def linear_add_kernel(
    x: pypto.Tensor([M, K], pypto.DT_BF16),
    w: pypto.Tensor([N, K], pypto.DT_BF16),
    bias: pypto.Tensor([N], pypto.DT_BF16),
    out: pypto.Tensor([M, N], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, N)
    bias_2d = pypto.reshape(bias, [1, N], inplace=True)
    bias_fp32 = pypto.cast(bias_2d, pypto.DT_FP32)

    for m_idx in pypto.loop(M_LOOP, name="LOOP_M", idx_name="m_idx", unroll_list=[2, 1]):
        cur = pypto.min(M - m_idx * M_TILE, M_TILE)
        x_tile = pypto.view(x, [M_TILE, K], [m_idx * M_TILE, 0], valid_shape=[cur, K])
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        acc = pypto.matmul(x_tile, w, pypto.DT_FP32, b_trans=True)
        pypto.set_vec_tile_shapes(M_TILE, N)
        y = pypto.add(acc, bias_fp32)
        pypto.assemble(
            pypto.cast(y, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [m_idx * M_TILE, 0], out
        )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def linear_bias_kernel(
    x: pypto.Tensor([M, K], pypto.DT_BF16),
    w: pypto.Tensor([N, K], pypto.DT_BF16),
    bias: pypto.Tensor([N], pypto.DT_BF16),
    out: pypto.Tensor([M, N], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, N)
    bias_2d = pypto.reshape(bias, [1, N], inplace=True)
    bias_fp32 = pypto.cast(bias_2d, pypto.DT_FP32)

    for m_idx in pypto.loop(M_LOOP, name="LOOP_M", idx_name="m_idx", unroll_list=[2, 1]):
        cur = pypto.min(M - m_idx * M_TILE, M_TILE)
        x_tile = pypto.view(x, [M_TILE, K], [m_idx * M_TILE, 0], valid_shape=[cur, K])
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        acc = pypto.matmul(
            x_tile, w, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias_fp32}
        )
        pypto.set_vec_tile_shapes(M_TILE, N)
        pypto.assemble(
            pypto.cast(acc, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [m_idx * M_TILE, 0], out
        )
