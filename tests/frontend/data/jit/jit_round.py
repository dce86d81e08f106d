"""Kernels in the PyPTO-Gym style (written for tileir's tests) around `pypto.round`:
half-to-even rounding to a number of decimals, as a function and as a Tensor method,
and the per-token int8 quantisation that uses it."""

import pypto

_R, _C = 8, 16


@pypto.frontend.jit
def round_f32(x: pypto.Tensor([_R, _C], pypto.DT_FP32), y: pypto.Tensor([_R, _C], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(_R, _C)
    y[:] = pypto.round(x)


@pypto.frontend.jit
def round_bf16_method(
    x: pypto.Tensor([_R, _C], pypto.DT_BF16), y: pypto.Tensor([_R, _C], pypto.DT_BF16)
):
    pypto.set_vec_tile_shapes(_R, _C)
    y[:] = x.round(2)


@pypto.frontend.jit
def round_f16_tens(
    x: pypto.Tensor([_R, _C], pypto.DT_FP16), y: pypto.Tensor([_R, _C], pypto.DT_FP16)
):
    pypto.set_vec_tile_shapes(_R, _C)
    y[:] = pypto.round(x, decimals=-1)


@pypto.frontend.jit
def quant_rows(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    q: pypto.Tensor([_R, _C], pypto.DT_INT8),
    s: pypto.Tensor([_R, 1], pypto.DT_FP32),
):
    """Per-row symmetric int8: scale = 127 / max|x|, q = round(x * scale)."""
    pypto.set_vec_tile_shapes(_R, _C)
    x_max = pypto.amax(pypto.abs(x), -1, True)
    scale = pypto.div(pypto.full([_R, 1], 127.0, pypto.DT_FP32), x_max)
    x_q = pypto.round(pypto.mul(x, scale))
    q[:] = pypto.cast(pypto.cast(x_q, pypto.DT_FP16, pypto.CastMode.CAST_RINT), pypto.DT_INT8)
    s[:] = pypto.div(pypto.full([_R, 1], 1.0, pypto.DT_FP32), scale)
