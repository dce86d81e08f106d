"""Fused per-head RMSNorm + RoPE (seed 001 RoPE scheme B; seed 000's Qwen3 Q/K kernel shape).

``out = rope(gamma * x / sqrt(mean(x^2, -1) + EPS))`` for ``x: [SEQ, HEADS, HEAD_DIM]``, with
the RMSNorm over ``HEAD_DIM`` (per head) and RoPE variant A in the explicit form
``o1 = x1 * cos - x2 * sin``, ``o2 = x2 * cos + x1 * sin``, ``concat([o1, o2])``.  ``cos`` /
``sin`` are ``[SEQ, HEAD_DIM]`` in the ``cat(freqs, freqs)`` layout; only their first half is
read.  FP32 math, BF16 exit cast with CAST_RINT, ``BS_TILE`` rows per iteration with a tail.
"""

import pypto

SEQ = 20
HEADS = 2
HEAD_DIM = 64
HALF_DIM = HEAD_DIM // 2
EPS = 1e-6
BS_TILE = 8
BS_LOOP = (SEQ + BS_TILE - 1) // BS_TILE
UNROLL_LIST = [8, 4, 2, 1]


def _rms_norm(x_fp32, gamma_fp32):
    """RMSNorm over the last dim of a ``[BS_TILE, HEADS, HEAD_DIM]`` FP32 tile."""
    mean_sq = pypto.mul(pypto.sum(pypto.mul(x_fp32, x_fp32), -1, keepdim=True), 1.0 / HEAD_DIM)
    inv_rms = pypto.rsqrt(pypto.add(mean_sq, EPS))
    return pypto.mul(pypto.mul(x_fp32, inv_rms), gamma_fp32)


def _load_half(table, bs_idx, cur_bs):
    """FP32 ``[BS_TILE, 1, HALF_DIM]``: the first half of one row tile of a cos / sin table."""
    pypto.set_vec_tile_shapes(BS_TILE, HALF_DIM)
    half = pypto.view(
        table, [BS_TILE, HALF_DIM], [bs_idx * BS_TILE, 0], valid_shape=[cur_bs, HALF_DIM]
    )
    half_fp32 = pypto.cast(half, pypto.DT_FP32)
    return pypto.reshape(half_fp32, [BS_TILE, 1, HALF_DIM], valid_shape=[cur_bs, 1, HALF_DIM])


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def rms_norm_rope_kernel(
    x: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
    gamma: pypto.Tensor([HEAD_DIM], pypto.DT_BF16),
    cos: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_BF16),
    sin: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_BF16),
    out: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(1, 1, HEAD_DIM)
    gamma_3d = pypto.reshape(gamma, [1, 1, HEAD_DIM], inplace=True)
    gamma_fp32 = pypto.cast(gamma_3d, pypto.DT_FP32)
    # Broadcasting expands one axis at most: make gamma [1, HEADS, HEAD_DIM] first.
    pypto.set_vec_tile_shapes(1, HEADS, HEAD_DIM)
    gamma_fp32 = pypto.expand_clone(gamma_fp32, [1, HEADS, HEAD_DIM])

    for bs_idx in pypto.loop(
        BS_LOOP, name="LOOP_BS_NORM_ROPE", idx_name="bs_idx", unroll_list=UNROLL_LIST
    ):
        cur_bs = pypto.min(SEQ - bs_idx * BS_TILE, BS_TILE)
        pypto.set_vec_tile_shapes(BS_TILE, HEADS, HEAD_DIM)
        x_tile = pypto.view(
            x,
            [BS_TILE, HEADS, HEAD_DIM],
            [bs_idx * BS_TILE, 0, 0],
            valid_shape=[cur_bs, HEADS, HEAD_DIM],
        )
        normed = _rms_norm(pypto.cast(x_tile, pypto.DT_FP32), gamma_fp32)

        cos_b = _load_half(cos, bs_idx, cur_bs)
        sin_b = _load_half(sin, bs_idx, cur_bs)

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, HALF_DIM)
        x1 = pypto.view(
            normed, [BS_TILE, HEADS, HALF_DIM], [0, 0, 0], valid_shape=[cur_bs, HEADS, HALF_DIM]
        )
        x2 = pypto.view(
            normed,
            [BS_TILE, HEADS, HALF_DIM],
            [0, 0, HALF_DIM],
            valid_shape=[cur_bs, HEADS, HALF_DIM],
        )
        o1 = pypto.sub(pypto.mul(x1, cos_b), pypto.mul(x2, sin_b))
        o2 = pypto.add(pypto.mul(x2, cos_b), pypto.mul(x1, sin_b))

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, HEAD_DIM)
        roped = pypto.concat([o1, o2], 2)
        # concat drops the tail's valid_shape in PyPTO 0.2.0: restore it.
        roped = pypto.view(
            roped, [BS_TILE, HEADS, HEAD_DIM], [0, 0, 0], valid_shape=[cur_bs, HEADS, HEAD_DIM]
        )
        roped_bf16 = pypto.cast(roped, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
        pypto.assemble(roped_bf16, [bs_idx * BS_TILE, 0, 0], out)
