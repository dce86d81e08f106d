"""GQA decode attention with online softmax over S2 blocks (seed 001, Attention scheme B).

One query token: ``q: [NQ, HEAD_DIM]`` attends to ``k, v: [NKV, S2, HEAD_DIM]``; query head
``h`` uses KV head ``h // GROUPS``.  The S2 axis is processed ``S2_TILE`` at a time; the
running max ``mi``, running sum ``li`` and running output ``oi`` live in FP32 workspaces
(``pypto.tensor``) updated with ``x[:] = value``, and ``is_loop_begin`` / ``is_loop_end``
pick the first-block initialisation and the final normalisation.  ``S2`` is not a multiple of
``S2_TILE``: the last block's views carry ``valid_shape`` and the local softmax re-windows the
scores to the valid columns.  ``P @ V`` is compensated: ``P`` is split into a BF16 high part
and a BF16 low part, each multiplied by ``V``, and the two products are added.
"""

import pypto

NKV = 2
GROUPS = 4
NQ = NKV * GROUPS
HEAD_DIM = 64
S2 = 40
S2_TILE = 16
S2_LOOP = (S2 + S2_TILE - 1) // S2_TILE
SCALE = 0.125  # 1 / sqrt(HEAD_DIM)
UNROLL_LIST = [2, 1]


def _local_softmax(sij, s2_valid):
    """Block max, ``exp(s - max)`` and block sum over the valid columns of ``sij``."""
    pypto.set_vec_tile_shapes(NKV, GROUPS, S2_TILE)
    scores = pypto.view(sij, [NKV, GROUPS, S2_TILE], [0, 0, 0], valid_shape=[NKV, GROUPS, s2_valid])
    scores = pypto.mul(scores, SCALE)
    m_ij = pypto.amax(scores, -1, keepdim=True)
    p_ij = pypto.exp(pypto.sub(scores, m_ij))
    l_ij = pypto.sum(p_ij, -1, keepdim=True)
    return m_ij, p_ij, l_ij


def _compensated_pv(p_ij, v_tile):
    """``P @ V`` with ``P = hi + lo`` split into two BF16 parts."""
    pypto.set_vec_tile_shapes(NKV, GROUPS, S2_TILE)
    p_hi = pypto.cast(p_ij, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
    p_rest = pypto.sub(p_ij, pypto.cast(p_hi, pypto.DT_FP32))
    p_lo = pypto.cast(p_rest, pypto.DT_BF16, pypto.CastMode.CAST_RINT)
    pypto.set_cube_tile_shapes([16, 16], [16, 16], [64, 64])
    o_hi = pypto.matmul(p_hi, v_tile, pypto.DT_FP32)
    o_lo = pypto.matmul(p_lo, v_tile, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(NKV, GROUPS, HEAD_DIM)
    return pypto.add(o_hi, o_lo)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def decode_attention_kernel(
    q: pypto.Tensor([NQ, HEAD_DIM], pypto.DT_BF16),
    k: pypto.Tensor([NKV, S2, HEAD_DIM], pypto.DT_BF16),
    v: pypto.Tensor([NKV, S2, HEAD_DIM], pypto.DT_BF16),
    out: pypto.Tensor([NQ, HEAD_DIM], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(NKV, GROUPS, HEAD_DIM)
    q_3d = pypto.tensor([NKV, GROUPS, HEAD_DIM], pypto.DT_BF16, "q_3d")
    q_3d[:] = pypto.reshape(q, [NKV, GROUPS, HEAD_DIM])

    oi = pypto.tensor([NKV, GROUPS, HEAD_DIM], pypto.DT_FP32, "oi")
    li = pypto.tensor([NKV, GROUPS, 1], pypto.DT_FP32, "li")
    mi = pypto.tensor([NKV, GROUPS, 1], pypto.DT_FP32, "mi")

    for s2_idx in pypto.loop(S2_LOOP, name="LOOP_S2", idx_name="s2_idx", unroll_list=UNROLL_LIST):
        s2_start = s2_idx * S2_TILE
        s2_valid = pypto.min(S2 - s2_start, S2_TILE)

        pypto.set_vec_tile_shapes(NKV, S2_TILE, HEAD_DIM)
        k_tile = pypto.view(
            k, [NKV, S2_TILE, HEAD_DIM], [0, s2_start, 0], valid_shape=[NKV, s2_valid, HEAD_DIM]
        )
        v_tile = pypto.view(
            v, [NKV, S2_TILE, HEAD_DIM], [0, s2_start, 0], valid_shape=[NKV, s2_valid, HEAD_DIM]
        )

        pypto.set_cube_tile_shapes([16, 16], [64, 64], [16, 16])
        sij = pypto.matmul(q_3d, k_tile, pypto.DT_FP32, b_trans=True)
        m_ij, p_ij, l_ij = _local_softmax(sij, s2_valid)
        o_ij = _compensated_pv(p_ij, v_tile)

        pypto.set_vec_tile_shapes(NKV, GROUPS, HEAD_DIM)
        if pypto.is_loop_begin(s2_idx):
            if pypto.is_loop_end(s2_idx):
                o_final = pypto.div(o_ij, l_ij)
                out[:] = pypto.reshape(
                    pypto.cast(o_final, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [NQ, HEAD_DIM]
                )
            else:
                oi[:] = o_ij
            li[:] = l_ij
            mi[:] = m_ij
        else:
            mi_new = pypto.maximum(mi, m_ij)
            alpha = pypto.exp(pypto.sub(mi, mi_new))
            beta = pypto.exp(pypto.sub(m_ij, mi_new))
            li_new = pypto.add(pypto.mul(alpha, li), pypto.mul(beta, l_ij))
            oi_new = pypto.add(pypto.mul(oi, alpha), pypto.mul(o_ij, beta))
            if pypto.is_loop_end(s2_idx):
                o_final = pypto.div(oi_new, li_new)
                out[:] = pypto.reshape(
                    pypto.cast(o_final, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [NQ, HEAD_DIM]
                )
            else:
                oi[:] = oi_new
            li[:] = li_new
            mi[:] = mi_new
