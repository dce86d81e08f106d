"""RoPE variant C (rotate-half via reshape/transpose), pattern card AT-04 (seed 000), MLAProlog style.

The input pairs are interleaved ``(x[2k], x[2k+1])``.  ``reshape`` to ``[..., R/2, 2]``,
``transpose`` of the last two axes and ``reshape`` back to ``[..., R]`` put the evens first and
the odds second (split-half); then ``out = x * cos + rotate_half(x) * sin`` with
``rotate_half(x) = concat([-x2, x1])``.  ``cos`` / ``sin`` are ``[SEQ, R]`` in the
``cat(freqs, freqs)`` layout.  FP32 math, BF16 exit cast with CAST_RINT.

``rope_rotate_half_partial_kernel`` rotates the first ``PARTIAL_ROTARY_DIM`` dims and copies the
rest through.
"""

import pypto

SEQ = 20
HEADS = 2
HEAD_DIM = 64
PARTIAL_ROTARY_DIM = 32
BS_TILE = 8
BS_LOOP = (SEQ + BS_TILE - 1) // BS_TILE
UNROLL_LIST = [8, 4, 2, 1]


def _load_cos_sin(table, bs_idx, cur_bs, rot_dim):
    """View one row tile of a ``[SEQ, rot_dim]`` table, cast it to FP32, shape ``[BS_TILE, 1, rot_dim]``."""
    pypto.set_vec_tile_shapes(BS_TILE, rot_dim)
    tile = pypto.view(
        table, [BS_TILE, rot_dim], [bs_idx * BS_TILE, 0], valid_shape=[cur_bs, rot_dim]
    )
    tile_fp32 = pypto.cast(tile, pypto.DT_FP32)
    return pypto.reshape(tile_fp32, [BS_TILE, 1, rot_dim], valid_shape=[cur_bs, 1, rot_dim])


def _rope_rotate_half(x_fp32, cos_b, sin_b, cur_bs, rot_dim):
    """De-interleave a ``[BS_TILE, HEADS, rot_dim]`` FP32 tile and apply the rotate-half RoPE."""
    half = rot_dim // 2
    pypto.set_vec_tile_shapes(BS_TILE, HEADS, half, 2)
    pairs = pypto.reshape(x_fp32, [BS_TILE, HEADS, half, 2], valid_shape=[cur_bs, HEADS, half, 2])
    pypto.set_vec_tile_shapes(BS_TILE, HEADS, 2, half)
    planes = pypto.transpose(pairs, -1, -2)
    pypto.set_vec_tile_shapes(BS_TILE, HEADS, rot_dim)
    x_split = pypto.reshape(planes, [BS_TILE, HEADS, rot_dim], valid_shape=[cur_bs, HEADS, rot_dim])

    pypto.set_vec_tile_shapes(BS_TILE, HEADS, half)
    x1 = pypto.view(x_split, [BS_TILE, HEADS, half], [0, 0, 0], valid_shape=[cur_bs, HEADS, half])
    x2 = pypto.view(
        x_split, [BS_TILE, HEADS, half], [0, 0, half], valid_shape=[cur_bs, HEADS, half]
    )
    rot = pypto.concat([pypto.neg(x2), x1], -1)
    # concat drops the tail's valid_shape in PyPTO 0.2.0: restore it.
    rot = pypto.view(
        rot, [BS_TILE, HEADS, rot_dim], [0, 0, 0], valid_shape=[cur_bs, HEADS, rot_dim]
    )
    pypto.set_vec_tile_shapes(BS_TILE, HEADS, rot_dim)
    return pypto.add(pypto.mul(x_split, cos_b), pypto.mul(rot, sin_b))


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def rope_rotate_half_kernel(
    x: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
    cos: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_BF16),
    sin: pypto.Tensor([SEQ, HEAD_DIM], pypto.DT_BF16),
    out: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
):
    for bs_idx in pypto.loop(
        BS_LOOP, name="LOOP_BS_ROPE", idx_name="bs_idx", unroll_list=UNROLL_LIST
    ):
        cur_bs = pypto.min(SEQ - bs_idx * BS_TILE, BS_TILE)
        cos_b = _load_cos_sin(cos, bs_idx, cur_bs, HEAD_DIM)
        sin_b = _load_cos_sin(sin, bs_idx, cur_bs, HEAD_DIM)

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, HEAD_DIM)
        x_tile = pypto.view(
            x,
            [BS_TILE, HEADS, HEAD_DIM],
            [bs_idx * BS_TILE, 0, 0],
            valid_shape=[cur_bs, HEADS, HEAD_DIM],
        )
        x_fp32 = pypto.cast(x_tile, pypto.DT_FP32)
        roped = _rope_rotate_half(x_fp32, cos_b, sin_b, cur_bs, HEAD_DIM)
        roped_bf16 = pypto.cast(roped, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
        pypto.assemble(roped_bf16, [bs_idx * BS_TILE, 0, 0], out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def rope_rotate_half_partial_kernel(
    x: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
    cos: pypto.Tensor([SEQ, PARTIAL_ROTARY_DIM], pypto.DT_BF16),
    sin: pypto.Tensor([SEQ, PARTIAL_ROTARY_DIM], pypto.DT_BF16),
    out: pypto.Tensor([SEQ, HEADS, HEAD_DIM], pypto.DT_BF16),
):
    pass_dim = HEAD_DIM - PARTIAL_ROTARY_DIM
    for bs_idx in pypto.loop(
        BS_LOOP, name="LOOP_BS_ROPE", idx_name="bs_idx", unroll_list=UNROLL_LIST
    ):
        cur_bs = pypto.min(SEQ - bs_idx * BS_TILE, BS_TILE)
        cos_b = _load_cos_sin(cos, bs_idx, cur_bs, PARTIAL_ROTARY_DIM)
        sin_b = _load_cos_sin(sin, bs_idx, cur_bs, PARTIAL_ROTARY_DIM)

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, PARTIAL_ROTARY_DIM)
        x_rot = pypto.view(
            x,
            [BS_TILE, HEADS, PARTIAL_ROTARY_DIM],
            [bs_idx * BS_TILE, 0, 0],
            valid_shape=[cur_bs, HEADS, PARTIAL_ROTARY_DIM],
        )
        x_fp32 = pypto.cast(x_rot, pypto.DT_FP32)
        roped = _rope_rotate_half(x_fp32, cos_b, sin_b, cur_bs, PARTIAL_ROTARY_DIM)
        roped_bf16 = pypto.cast(roped, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
        pypto.assemble(roped_bf16, [bs_idx * BS_TILE, 0, 0], out)

        pypto.set_vec_tile_shapes(BS_TILE, HEADS, pass_dim)
        x_pass = pypto.view(
            x,
            [BS_TILE, HEADS, pass_dim],
            [bs_idx * BS_TILE, 0, PARTIAL_ROTARY_DIM],
            valid_shape=[cur_bs, HEADS, pass_dim],
        )
        pypto.assemble(x_pass, [bs_idx * BS_TILE, 0, PARTIAL_ROTARY_DIM], out)
