"""mean over the last axis, ``sum(x, -1) / N`` (seed 001, mean).

``pypto.sum`` wants FP32 input, so the BF16 tile is cast to FP32 before the sum; the division
is by a ``full`` tile of ``N``, and the result is cast back to BF16 (CAST_RINT).  ``ROWS`` rows
are processed ``ROW_TILE`` at a time with a tail tile; the output keeps the reduced axis.
"""

import pypto

ROWS = 10
HIDDEN = 64
ROW_TILE = 4
ROW_LOOP = (ROWS + ROW_TILE - 1) // ROW_TILE


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mean_kernel(
    x: pypto.Tensor([ROWS, HIDDEN], pypto.DT_BF16),
    out: pypto.Tensor([ROWS, 1], pypto.DT_BF16),
):
    for r_idx in pypto.loop(ROW_LOOP, name="batch", idx_name="r_idx", unroll_list=[2, 1]):
        cur = pypto.min(ROWS - r_idx * ROW_TILE, ROW_TILE)
        pypto.set_vec_tile_shapes(ROW_TILE, HIDDEN)
        x_tile = pypto.view(x, [ROW_TILE, HIDDEN], [r_idx * ROW_TILE, 0], valid_shape=[cur, HIDDEN])
        s = pypto.sum(pypto.cast(x_tile, pypto.DT_FP32), dim=-1, keepdim=True)
        n = pypto.full([ROW_TILE, 1], float(HIDDEN), pypto.DT_FP32, valid_shape=[cur, 1])
        r = pypto.div(s, n)
        pypto.assemble(
            pypto.cast(r, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [r_idx * ROW_TILE, 0], out
        )
