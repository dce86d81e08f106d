"""A `pypto.loop_unroll` body that uses the chunk length as a Python int (a Python `if`
on it picks the tile shape), as PyPTO traces the body once per unroll factor, plus
tensor slicing (`x[a:b, :]`) and a scalar parameter with a default."""

import pypto

ROWS = 21
COLS = 64


@pypto.frontend.jit
def unroll_by_factor(
    x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
    scale: float = 3.0,
):
    for i, n in pypto.loop_unroll(0, ROWS, 1, name="rows", idx_name="i", unroll_list=[8, 2]):
        if n <= 2:
            tile = [1, COLS // 2]
        else:
            tile = [4, COLS // 2]
        pypto.set_vec_tile_shapes(*tile)
        t = pypto.view(x, [n, COLS], [i, 0])
        left = t[:, : COLS // 2] * scale
        right = t[:, COLS // 2 :]
        out[i:, :] = pypto.concat([left, right + 1.0], -1)
