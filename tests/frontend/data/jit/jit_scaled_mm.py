"""Kernels in the PyPTO-Gym style (written for tileir's tests) around `pypto.scaled_mm`,
the MX matmul of fp8 operands with one e8m0 scale per 32 elements of K: a plain linear
layer, a grouped one (expert groups from a config object, the weights and their scales
indexed per group, `b_trans` from the config), a transposed left operand with a bias, and
row tiles of a dynamic token count with a tail (`valid_shape`)."""

from dataclasses import dataclass, field

import pypto

_M, _K, _N = 16, 128, 32
_T = 8  # rows per tile of the tiled kernel


@dataclass
class GroupConfig:
    """Expert group sizes (rows of `x` per weight) and whether the weights are [N, K]."""

    group_sizes: list = field(default_factory=lambda: [5, 11])
    b_trans: bool = False
    cube_tiles: tuple = ([16, 16], [64, 128], [32, 32])


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_linear(
    x: pypto.Tensor([_M, _K], pypto.DT_FP8E4M3),
    w: pypto.Tensor([_K, _N], pypto.DT_FP8E4M3),
    x_scale: pypto.Tensor([_M, _K // 64, 2], pypto.DT_FP8E8M0),
    w_scale: pypto.Tensor([_K // 64, _N, 2], pypto.DT_FP8E8M0),
    y: pypto.Tensor([_M, _N], pypto.DT_BF16),
):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [32, 32])
    y[:] = pypto.scaled_mm(x, w, pypto.DT_BF16, x_scale, w_scale)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_grouped(
    x: pypto.Tensor(),
    w: pypto.Tensor(),
    x_scale: pypto.Tensor(),
    w_scale: pypto.Tensor(),
    y: pypto.Tensor(),
    config: GroupConfig,
):
    pypto.set_cube_tile_shapes(*config.cube_tiles)
    start = 0
    for g in range(len(config.group_sizes)):
        stop = start + config.group_sizes[g]
        y[start:stop, :] = pypto.scaled_mm(
            x[start:stop, :],
            w[g],
            pypto.DT_FP32,
            x_scale[start:stop, :, :],
            w_scale[g],
            b_trans=config.b_trans,
            scale_b_trans=config.b_trans,
        )
        start = stop


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_trans_bias(
    xt: pypto.Tensor([_K, _M], pypto.DT_FP8E5M2),
    w: pypto.Tensor([_K, _N], pypto.DT_FP8E4M3),
    xt_scale: pypto.Tensor([_K // 64, _M, 2], pypto.DT_FP8E8M0),
    w_scale: pypto.Tensor([_K // 64, _N, 2], pypto.DT_FP8E8M0),
    bias: pypto.Tensor([1, _N], pypto.DT_FP32),
    y: pypto.Tensor([_M, _N], pypto.DT_FP16),
):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [32, 32])
    y[:] = pypto.scaled_mm(
        xt,
        w,
        pypto.DT_FP16,
        xt_scale,
        w_scale,
        a_trans=True,
        scale_a_trans=True,
        extend_params={"bias_tensor": bias},
    )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_row_tiles(
    x: pypto.Tensor([pypto.DYNAMIC, _K], pypto.DT_FP8E4M3),
    w: pypto.Tensor([_N, _K], pypto.DT_FP8E4M3),
    x_scale: pypto.Tensor([pypto.DYNAMIC, _K // 64, 2], pypto.DT_FP8E8M0),
    w_scale: pypto.Tensor([_N, _K // 64, 2], pypto.DT_FP8E8M0),
    y: pypto.Tensor([pypto.DYNAMIC, _N], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_cube_tile_shapes([_T, _T], [64, 128], [32, 32])
    for i in pypto.loop((rows + _T - 1) // _T, name="row_loop", idx_name="i"):
        cur = pypto.min(rows - i * _T, _T)
        x_t = pypto.view(x, [_T, _K], [i * _T, 0], valid_shape=[cur, _K])
        s_t = pypto.view(x_scale, [_T, _K // 64, 2], [i * _T, 0, 0], valid_shape=[cur, _K // 64, 2])
        out = pypto.scaled_mm(x_t, w, pypto.DT_FP32, s_t, w_scale, b_trans=True, scale_b_trans=True)
        pypto.assemble(out, [i * _T, 0], y)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def mx_k_split(
    x: pypto.Tensor([_M, 2 * _K], pypto.DT_FP8E4M3),
    w: pypto.Tensor([2 * _K, _N], pypto.DT_FP8E5M2),
    x_scale: pypto.Tensor([_M, 2 * _K // 64, 2], pypto.DT_FP8E8M0),
    w_scale: pypto.Tensor([2 * _K // 64, _N, 2], pypto.DT_FP8E8M0),
    y: pypto.Tensor([_M, _N], pypto.DT_FP32),
    last: pypto.Tensor([_M, _N], pypto.DT_FP32),
):
    """Two halves of K, each partial product written at an index of a workspace
    (`partial[h] = ...`), then added; the last one also kept through `partial[-1]`."""
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [32, 32])
    partial = pypto.tensor([2, _M, _N], pypto.DT_FP32)
    for h in pypto.loop(2, name="k_half", idx_name="h"):
        k0 = h * _K
        partial[h] = pypto.scaled_mm(
            x[:, k0 : k0 + _K],
            w[k0 : k0 + _K, :],
            pypto.DT_FP32,
            x_scale[:, h * (_K // 64) : (h + 1) * (_K // 64), :],
            w_scale[h * (_K // 64) : (h + 1) * (_K // 64), :, :],
        )
    pypto.set_vec_tile_shapes(_M, _N)
    y[:] = pypto.add(partial[0], partial[1])
    partial[-1] = pypto.mul(partial[1], 2.0)
    last[:] = partial[1]
