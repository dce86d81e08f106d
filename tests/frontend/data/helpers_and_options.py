"""Helpers inlined at each call (with their own tile-shape settings), trace-time `range`
loops and `if` on constants, matmul with a fused bias, topk and cast modes."""

import math

import pypto

M = 4
K = 32
N = 16
HALF = K // 2
USE_BIAS = True
SCALES = [1.0, 2.0, 3.0]


def _double(t):
    return t + t


def _scaled_sum(t, factors):
    pypto.set_vec_tile_shapes(M, K)
    acc = t * factors[0]
    for f in factors[1:]:
        acc = acc + _double(t) * (f / 2)
    return acc


def _normalise(t, eps):
    pypto.set_semantic_label("norm")
    ms = pypto.sum(t * t, dim=-1, keepdim=True) * (1.0 / K)
    return t * pypto.rsqrt(ms + eps)


@pypto.frontend.function
def _store_top2(y, values_out, index_out):
    values, idx = pypto.topk(y, 2, -1)
    values_out.move(values)
    index_out[:] = idx


@pypto.frontend.jit(
    runtime_options={"run_mode": pypto.RunMode.NPU, "stitch_function_max_num": 128},
    pass_options={"vec_nbuffer_setting": {0: 2}},
)
def project(
    x: pypto.Tensor([M, K], pypto.DT_FP32),
    w: pypto.Tensor([N, K], pypto.DT_BF16),
    bias: pypto.Tensor([1, N], pypto.DT_FP32),
    out: pypto.Tensor([M, N], pypto.DT_FP32),
    top: pypto.Tensor([M, 2], pypto.DT_FP32),
    top_idx: pypto.Tensor([M, 2], pypto.DT_INT32),
):
    pypto.set_vec_tile_shapes(M, K)
    t = _normalise(pypto.view(x, [M, K], [0, 0]), 1e-6)
    t = _scaled_sum(t, SCALES)
    if USE_BIAS and math.ceil(K / N) == 2:
        t16 = pypto.cast(t, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
        y = pypto.matmul(t16, w, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias})
    else:
        y = pypto.full([M, N], 0.0, pypto.DT_FP32)
    pypto.assemble(y, [0, 0], out)
    _store_top2(y, top, top_idx)
