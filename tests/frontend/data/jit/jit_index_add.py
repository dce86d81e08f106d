"""Kernels in the PyPTO-Gym style (written for tileir's tests) around `pypto.index_add_`
/ `pypto.index_add`: the MoE combine step (each token's expert rows, weighted by their
routing logits, added into the token's output row, in place), and the out-of-place form
with an alpha, along dim 1 and on integers."""

import pypto

_T, _K, _H = 4, 2, 16  # tokens, experts per token, hidden


@pypto.frontend.jit
def moe_combine(
    expert_out: pypto.Tensor([_T * _K, _H], pypto.DT_FP32),
    logit: pypto.Tensor([_T * _K], pypto.DT_FP32),
    row_index: pypto.Tensor([_T * _K], pypto.DT_INT32),
    out: pypto.Tensor([_T, _H], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_T * _K, _H)
    weighted = pypto.mul(expert_out[:, :], pypto.unsqueeze(logit[:], -1))
    pypto.index_add_(out, 0, row_index[:], weighted)


@pypto.frontend.jit
def add_rows_alpha(
    x: pypto.Tensor([6, _H], pypto.DT_BF16),
    idx: pypto.Tensor([8], pypto.DT_INT32),
    src: pypto.Tensor([8, _H], pypto.DT_BF16),
    y: pypto.Tensor([6, _H], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(8, _H)
    y[:] = pypto.index_add(x, 0, idx, src, alpha=0.3)


@pypto.frontend.jit
def add_rows_alpha_f32(
    x: pypto.Tensor([6, _H], pypto.DT_FP32),
    idx: pypto.Tensor([8], pypto.DT_INT32),
    src: pypto.Tensor([8, _H], pypto.DT_FP32),
    y: pypto.Tensor([6, _H], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(8, _H)
    y[:] = x.index_add(0, idx, src, alpha=0.3)


@pypto.frontend.jit
def add_cols(
    x: pypto.Tensor([_H, 6], pypto.DT_FP32),
    idx: pypto.Tensor([8], pypto.DT_INT64),
    src: pypto.Tensor([_H, 8], pypto.DT_FP32),
    y: pypto.Tensor([_H, 6], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_H, 8)
    y[:] = pypto.index_add(x, -1, idx, src)
