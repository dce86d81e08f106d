"""RoPE variant B (interleave, GatherMask), pattern card AT-04 (seed 000), InterleaveRope style.

The rotation pairs are adjacent elements ``(x[2k], x[2k+1])``.  ``gathermask`` mode 1 / 2 picks
the even / odd elements, the rotation runs in FP32, and the result is written split-half:
``out[..., :R/2]`` = rotated evens, ``out[..., R/2:R]`` = rotated odds, with two ``assemble``s
(InterleaveRope's output contract, which avoids a 5-D re-interleave).  ``cos`` / ``sin`` are
``[SEQ, R]`` in the ``cat(freqs, freqs)`` layout: the evens use the low half, the odds the high
half.  This file is the FP16 instance, so the exit cast is CAST_NONE (BF16 would use CAST_RINT).

``rope_interleave_partial_kernel`` rotates the first ``PARTIAL_ROTARY_DIM`` dims and copies the
rest through with a third ``assemble``.
"""

import pypto

SEQ = 20
HEADS = 2
HEAD_DIM = 64
PARTIAL_ROTARY_DIM = 32
BS_TILE = 8
BS_LOOP = (SEQ + BS_TILE - 1) // BS_TILE
UNROLL_LIST = [8, 4, 2, 1]


def _load_cos_sin_halves(table, bs_idx, cur_bs, rot_dim):
    """FP32 ``[BS_TILE, 1, rot_dim / 2]`` low and high halves of one row tile of a table."""
    half = rot_dim // 2
    pypto.set_vec_tile_shapes(BS_TILE, rot_dim)
    tile = pypto.view(
        table, [BS_TILE, rot_dim], [bs_idx * BS_TILE, 0], valid_shape=[cur_bs, rot_dim]
    )
    tile_fp32 = pypto.cast(tile, pypto.DT_FP32)
    tile_3d = pypto.reshape(tile_fp32, [BS_TILE, 1, rot_dim], valid_shape=[cur_bs, 1, rot_dim])
    pypto.set_vec_tile_shapes(BS_TILE, 1, half)
    lo = pypto.view(tile_3d, [BS_TILE, 1, half], [0, 0, 0], valid_shape=[cur_bs, 1, half])
    hi = pypto.view(tile_3d, [BS_TILE, 1, half], [0, 0, half], valid_shape=[cur_bs, 1, half])
    return lo, hi


def _rope_interleave(x_rot, cos, sin, bs_idx, cur_bs, rot_dim, out):
    """Rotate the interleaved ``[BS_TILE, HEADS, rot_dim]`` tile and write it split-half."""
    half = rot_dim // 2
    c_lo, c_hi = _load_cos_sin_halves(cos, bs_idx, cur_bs, rot_dim)
    s_lo, s_hi = _load_cos_sin_halves(sin, bs_idx, cur_bs, rot_dim)

    pypto.set_vec_tile_shapes(BS_TILE, HEADS, rot_dim)
    x_even = pypto.gathermask(x_rot, 1)
    x_odd = pypto.gathermask(x_rot, 2)
    pypto.set_vec_tile_shapes(BS_TILE, HEADS, half)
    xe = pypto.cast(x_even, pypto.DT_FP32)
    xo = pypto.cast(x_odd, pypto.DT_FP32)
    y_even = pypto.sub(pypto.mul(xe, c_lo), pypto.mul(xo, s_lo))
    y_odd = pypto.add(pypto.mul(xe, s_hi), pypto.mul(xo, c_hi))
    pypto.assemble(
        pypto.cast(y_even, pypto.DT_FP16, pypto.CastMode.CAST_NONE), [bs_idx * BS_TILE, 0, 0], out
    )
    pypto.assemble(
        pypto.cast(y_odd, pypto.DT_FP16, pypto.CastMode.CAST_NONE), [bs_idx * BS_TILE, 0, half], out
    )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def rope_interleave_kernel(
    x: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_FP16),
    cos: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_FP16),
    sin: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_FP16),
    out: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_FP16),
):
    for bs_idx in pypto.loop(
        BS_LOOP, name="LOOP_BS_ROPE", idx_name="bs_idx", unroll_list=UNROLL_LIST
    ):
        cur_bs = pypto.min(SEQ - bs_idx * BS_TILE, BS_TILE)
        pypto.set_vec_tile_shapes(BS_TILE, HEADS, HEAD_DIM)
        x_tile = pypto.view(
            x,
            [BS_TILE, HEADS, HEAD_DIM],
            [bs_idx * BS_TILE, 0, 0],
            valid_shape=[cur_bs, HEADS, HEAD_DIM],
        )
        _rope_interleave(x_tile, cos, sin, bs_idx, cur_bs, HEAD_DIM, out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def rope_interleave_partial_kernel(
    x: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_FP16),
    cos: pypto.Tensor([SEQ, PARTIAL_ROTARY_DIM], pypto.DT_FP16),
    sin: pypto.Tensor([SEQ, PARTIAL_ROTARY_DIM], pypto.DT_FP16),
    out: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_FP16),
):
    pass_dim = HEAD_DIM - PARTIAL_ROTARY_DIM
    for bs_idx in pypto.loop(
        BS_LOOP, name="LOOP_BS_ROPE", idx_name="bs_idx", unroll_list=UNROLL_LIST
    ):
        cur_bs = pypto.min(SEQ - bs_idx * BS_TILE, BS_TILE)
        pypto.set_vec_tile_shapes(BS_TILE, HEADS, PARTIAL_ROTARY_DIM)
        x_rot = pypto.view(
            x,
            [BS_TILE, HEADS, PARTIAL_ROTARY_DIM],
            [bs_idx * BS_TILE, 0, 0],
            valid_shape=[cur_bs, HEADS, PARTIAL_ROTARY_DIM],
        )
        _rope_interleave(x_rot, cos, sin, bs_idx, cur_bs, PARTIAL_ROTARY_DIM, out)

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, pass_dim)
        x_pass = pypto.view(
            x,
            [BS_TILE, HEADS, pass_dim],
            [bs_idx * BS_TILE, 0, PARTIAL_ROTARY_DIM],
            valid_shape=[cur_bs, HEADS, pass_dim],
        )
        pypto.assemble(x_pass, [bs_idx * BS_TILE, 0, PARTIAL_ROTARY_DIM], out)
