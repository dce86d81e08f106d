"""Kernels in the PyPTO-Gym style (written for tileir's tests) around `pypto.quant_mx`,
the MX quantisation that makes `pypto.scaled_mm`'s fp8 operands: row tiles of an
activation quantised in a loop (each tile's elements and scales assembled at its rows),
and a normalised activation quantised and multiplied by an fp8 weight."""

import pypto

_T, _H, _N = 8, 128, 32
_ROWS = 4  # rows per tile of `mx_quantize_rows`


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_quantize_rows(
    x: pypto.Tensor([_T, _H], pypto.DT_BF16),
    x_q: pypto.Tensor([_T, _H], pypto.DT_FP8E4M3),
    x_scale: pypto.Tensor([_T, _H // 64, 2], pypto.DT_FP8E8M0),
):
    for t in pypto.loop(_T // _ROWS, name="rows", idx_name="t"):
        pypto.set_vec_tile_shapes(_ROWS, _H)
        tile = pypto.view(x, [_ROWS, _H], [t * _ROWS, 0])
        q, s = pypto.quant_mx(tile, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, True)
        pypto.assemble(q, [t * _ROWS, 0], x_q)
        pypto.set_vec_tile_shapes(_ROWS, _H // 64, 2)
        pypto.assemble(s, [t * _ROWS, 0, 0], x_scale)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_norm_project(
    x: pypto.Tensor([_T, _H], pypto.DT_FP32),
    gamma: pypto.Tensor([_H], pypto.DT_FP32),
    w: pypto.Tensor([_H, _N], pypto.DT_FP8E4M3),
    w_scale: pypto.Tensor([_H // 64, _N, 2], pypto.DT_FP8E8M0),
    y: pypto.Tensor([_T, _N], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(_T, _H)
    normed = pypto.rms_norm(x, gamma, 1e-6)
    x_q, x_scale = pypto.quant_mx(normed)
    pypto.set_cube_tile_shapes([8, 8], [64, 128], [32, 32])
    y[:] = pypto.scaled_mm(x_q, w, pypto.DT_BF16, x_scale, w_scale)
