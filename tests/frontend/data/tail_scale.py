"""Rows scaled and shifted with Python operators, in tiles of 4 rows with a tail tile."""

import os

import pypto
import torch

ROWS = 13
COLS = 16
TILE = 4
LOOPS = (ROWS + TILE - 1) // TILE
DEVICE = int(os.environ.get("DEVICE_ID", 0))  # never used by the kernel
ONES = torch.ones(3)  # never used by the kernel


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def tail_scale(
    x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
):
    for i in pypto.loop(LOOPS, name="rows", idx_name="i", unroll_list=[2, 4]):
        cur = pypto.min(ROWS - i * TILE, TILE)
        pypto.set_vec_tile_shapes(TILE, COLS)
        t = pypto.view(x, [TILE, COLS], [i * TILE, 0], valid_shape=[cur, COLS])
        y = 1.0 - t * 0.5
        y = -y + t
        pypto.assemble(y, [i * TILE, 0], out)
