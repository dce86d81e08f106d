"""A kernel file in the PyPTO-Gym style (written for tileir's tests): module-level
compiler settings, a frozen config dataclass argument, a flattening `reshape(...,
inplace=True)` and results `.move`d into 4-D outputs, a host wrapper that allocates
the outputs on the device."""

from dataclasses import dataclass

import pypto
import torch

pypto.set_pass_options(vec_nbuffer_setting={-1: 2})


@dataclass(frozen=True)
class StatsTiles:
    rows: int
    cols: int


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def column_stats_kernel(
    x: pypto.Tensor([], pypto.DT_FP32),
    total: pypto.Tensor([], pypto.DT_FP32),
    squares: pypto.Tensor([], pypto.DT_FP32),
    tiles: StatsTiles,
):
    n, c, h = x.shape
    pypto.set_vec_tile_shapes(tiles.rows, tiles.cols, 8)
    flat = pypto.reshape(pypto.transpose(x, 1, 2), [n * h, c], inplace=True)
    pypto.set_vec_tile_shapes(tiles.rows, tiles.cols)
    s = pypto.sum(flat, dim=0, keepdim=True)
    q = pypto.sum(flat * flat, dim=0, keepdim=True)
    pypto.set_vec_tile_shapes(1, tiles.cols, 1, 8)
    total.move(pypto.reshape(s, [1, c, 1, 1], inplace=True))
    squares.move(pypto.reshape(q, [1, c, 1, 1], inplace=True))


def column_stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n, c, h = x.shape
    total = torch.empty(1, c, 1, 1, dtype=torch.float32, device=x.device)
    squares = torch.empty_like(total)
    column_stats_kernel(x, total, squares, StatsTiles(rows=max(8, n * h), cols=16))
    return total, squares
