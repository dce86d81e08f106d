"""Online softmax over column blocks: workspaces carry the running max, sum and output
between iterations; the first and last iteration are special (`is_loop_begin`,
`is_loop_end`), and `scale` is an `scf.if` result."""

import pypto

ROWS = 4
COLS = 24
BLOCK = 8
NBLOCKS = COLS // BLOCK


@pypto.frontend.jit
def online_softmax_sum(
    x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, 1], pypto.DT_FP32),
):
    mi = pypto.tensor([ROWS, 1], pypto.DT_FP32, "mi")
    li = pypto.tensor([ROWS, 1], pypto.DT_FP32, "li")
    pypto.set_vec_tile_shapes(ROWS, BLOCK)
    for j in pypto.loop(NBLOCKS, name="LOOP_S2", idx_name="j", unroll_list=[1]):
        blk = pypto.view(x, [ROWS, BLOCK], [0, j * BLOCK])
        m_ij = pypto.amax(blk, -1, keepdim=True)
        if pypto.is_loop_begin(j):
            mi_new = m_ij
            scale = pypto.full([ROWS, 1], 0.0, pypto.DT_FP32)
        else:
            mi_new = pypto.maximum(mi, m_ij)
            scale = pypto.exp(mi - mi_new)
        l_ij = pypto.sum(pypto.exp(blk - mi_new), -1, keepdim=True)
        if pypto.is_loop_begin(j):
            li[:] = l_ij
        else:
            li[:] = li * scale + l_ij
        mi[:] = mi_new
        if pypto.is_loop_end(j):
            out[:] = pypto.log(li) + mi
