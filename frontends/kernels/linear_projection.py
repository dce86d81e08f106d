"""SK-03 linear projection, RMSNorm -> MatMul (seed 002), and its quant variant (AT-11).

``linear_projection_kernel``: V(RMSNorm) -> C(MatMul) -> V(cast), flow pattern ``V1, C1, V1``:
``out = bf16(rms_norm(x, gamma) in bf16 @ w^T)``.

``linear_projection_quant_kernel``: V(RMSNorm) -> V(Quant) -> C(int8 MatMul) -> V(Dequant):
the normalised row is quantised symmetrically per token (``scale = 127 / max|y|``,
``q = int8(rint(y * scale))`` through the int32 -> fp16 -> int8 cast chain), multiplied by a
per-channel int8 weight into int32, and dequantised with ``1 / scale`` (per token) and
``w_scale`` (per output channel).

Both follow the skeleton's coding rules: a single token loop written with
``pypto.loop_unroll`` (each unrolled body handles ``unroll_len`` rows, so no tail tile is
needed; the factors divide each other, which 0.2.0's remainder arithmetic requires),
``set_vec_tile_shapes`` before each V stage and ``set_cube_tile_shapes`` before each C stage,
a ``set_semantic_label`` per stage, ``reshape(..., inplace=True)`` for the static parameters,
and the SK-03 pass options (``cube_l1_reuse_setting``, ``vec_nbuffer_setting``).
"""

import pypto

TOKENS = 21
HIDDEN = 64
OUT_DIM = 32
EPS = 1e-6
UNROLL_LIST = [8, 4, 2, 1]
QUANT_MAX = 127.0


def _rms_norm(x_fp32, gamma_fp32):
    """RMSNorm over the last dim of a ``[rows, HIDDEN]`` FP32 tile."""
    mean_sq = pypto.mul(pypto.sum(pypto.mul(x_fp32, x_fp32), -1, keepdim=True), 1.0 / HIDDEN)
    inv_rms = pypto.rsqrt(pypto.add(mean_sq, EPS))
    return pypto.mul(pypto.mul(x_fp32, inv_rms), gamma_fp32)


def _quant_symmetric(y, rows):
    """Per-token symmetric int8 quantisation of ``[rows, HIDDEN]`` FP32: ``(q, dequant_scale)``."""
    amax = pypto.amax(pypto.abs(y), -1, keepdim=True)
    scale = pypto.div(pypto.full([rows, 1], QUANT_MAX, pypto.DT_FP32), amax)
    q_int32 = pypto.cast(pypto.mul(y, scale), pypto.DT_INT32, pypto.CastMode.CAST_RINT)
    q_fp16 = pypto.cast(q_int32, pypto.DT_FP16, pypto.CastMode.CAST_ROUND)
    q_int8 = pypto.cast(q_fp16, pypto.DT_INT8, pypto.CastMode.CAST_TRUNC, pypto.SaturationMode.ON)
    dequant_scale = pypto.div(pypto.full([rows, 1], 1.0, pypto.DT_FP32), scale)
    return q_int8, dequant_scale


@pypto.frontend.jit(
    runtime_options={"run_mode": pypto.RunMode.NPU},
    pass_options={"cube_l1_reuse_setting": {-1: 2, 1: 1}, "vec_nbuffer_setting": {0: 2}},
)
def linear_projection_kernel(
    x: pypto.Tensor([TOKENS, HIDDEN], pypto.DT_BF16),
    gamma: pypto.Tensor([HIDDEN], pypto.DT_BF16),
    w: pypto.Tensor([OUT_DIM, HIDDEN], pypto.DT_BF16),
    out: pypto.Tensor([TOKENS, OUT_DIM], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, HIDDEN)
    gamma_2d = pypto.reshape(gamma, [1, HIDDEN], inplace=True)
    gamma_fp32 = pypto.cast(gamma_2d, pypto.DT_FP32)

    for t_idx, unroll_len in pypto.loop_unroll(
        0, TOKENS, 1, name="LOOP_TOKEN", idx_name="t_idx", unroll_list=UNROLL_LIST
    ):
        pypto.set_semantic_label("rmsnorm")
        pypto.set_vec_tile_shapes(unroll_len, HIDDEN)
        x_tile = pypto.view(x, [unroll_len, HIDDEN], [t_idx, 0])
        normed = _rms_norm(pypto.cast(x_tile, pypto.DT_FP32), gamma_fp32)
        normed_bf16 = pypto.cast(normed, pypto.DT_BF16, pypto.CastMode.CAST_RINT)

        pypto.set_semantic_label("linear")
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        projected = pypto.matmul(normed_bf16, w, pypto.DT_FP32, b_trans=True)

        pypto.set_semantic_label("post")
        pypto.set_vec_tile_shapes(unroll_len, OUT_DIM)
        pypto.assemble(
            pypto.cast(projected, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [t_idx, 0], out
        )


@pypto.frontend.jit(
    runtime_options={"run_mode": pypto.RunMode.NPU},
    pass_options={"cube_l1_reuse_setting": {-1: 2, 1: 1}, "vec_nbuffer_setting": {0: 2}},
)
def linear_projection_quant_kernel(
    x: pypto.Tensor([TOKENS, HIDDEN], pypto.DT_BF16),
    gamma: pypto.Tensor([HIDDEN], pypto.DT_BF16),
    w: pypto.Tensor([OUT_DIM, HIDDEN], pypto.DT_INT8),
    w_scale: pypto.Tensor([OUT_DIM], pypto.DT_FP32),
    out: pypto.Tensor([TOKENS, OUT_DIM], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, HIDDEN)
    gamma_2d = pypto.reshape(gamma, [1, HIDDEN], inplace=True)
    gamma_fp32 = pypto.cast(gamma_2d, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(1, OUT_DIM)
    w_scale_2d = pypto.reshape(w_scale, [1, OUT_DIM], inplace=True)

    for t_idx, unroll_len in pypto.loop_unroll(
        0, TOKENS, 1, name="LOOP_TOKEN", idx_name="t_idx", unroll_list=UNROLL_LIST
    ):
        pypto.set_semantic_label("rmsnorm")
        pypto.set_vec_tile_shapes(unroll_len, HIDDEN)
        x_tile = pypto.view(x, [unroll_len, HIDDEN], [t_idx, 0])
        normed = _rms_norm(pypto.cast(x_tile, pypto.DT_FP32), gamma_fp32)

        pypto.set_semantic_label("quant")
        q_int8, dequant_scale = _quant_symmetric(normed, unroll_len)

        pypto.set_semantic_label("linear")
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        acc = pypto.matmul(q_int8, w, pypto.DT_INT32, b_trans=True)

        pypto.set_semantic_label("dequant")
        pypto.set_vec_tile_shapes(unroll_len, OUT_DIM)
        y = pypto.mul(pypto.mul(pypto.cast(acc, pypto.DT_FP32), dequant_scale), w_scale_2d)
        pypto.assemble(pypto.cast(y, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [t_idx, 0], out)
