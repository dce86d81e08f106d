"""Kernels in the PyPTO-Gym style (written for tileir's tests): slice assignment into a
tile (`state[:] = new_state` carried through a pypto.loop, a window `t[1:3, 2:5] = u`, a
row at a loop index `t[i:i + 1, :] = u`), `pypto.clip`, a Python list of tiles built with
`append` and joined by `pypto.concat`, and `set_cache_policy` on a view and on a tile."""

import pypto

_R = 4
_C = 8
_LIM = 1.5


@pypto.frontend.jit
def decay_carry(
    x: pypto.Tensor([4 * _R, _C], pypto.DT_FP32),
    y: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R, _C)
    state = pypto.full([_R, _C], 1.0, dtype=pypto.DT_FP32)
    for s_idx in pypto.loop(4, name="s_loop", idx_name="s_idx"):
        x_s = pypto.view(x, [_R, _C], [s_idx * _R, 0])
        scaled = pypto.mul(state, 0.5)
        new_state = pypto.add(scaled, x_s)
        state[:] = new_state
    state[1:3, 2:5] = pypto.full([2, 3], -7.0, dtype=pypto.DT_FP32)
    pypto.assemble(state, [0, 0], y)


@pypto.frontend.jit
def row_fill(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    y: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R, _C)
    acc = pypto.full([_R, _C], 0.0, dtype=pypto.DT_FP32)
    total = x[0:1, :] + 0.0
    for i in pypto.loop(_R, name="r_loop", idx_name="i"):
        row = pypto.view(x, [1, _C], [i, 0])
        acc[i : i + 1, :] = pypto.add(row, acc[0:1, :])
        if pypto.is_loop_begin(i):
            total[:] = pypto.mul(total, 3.0)
    acc[0:1, :] = total
    y[:] = acc


@pypto.frontend.jit
def clipped(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    lo: pypto.Tensor([_R, 1], pypto.DT_FP32),
    a: pypto.Tensor([_R, _C], pypto.DT_FP32),
    b: pypto.Tensor([_R, _C], pypto.DT_FP32),
    c: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R, _C)
    a[:] = pypto.clip(x, -float("inf"), _LIM)
    b[:] = pypto.clip(x, _LIM, -_LIM)
    c[:] = pypto.clip(x, min=lo) + pypto.clip(x)


@pypto.frontend.jit
def gathered(
    x: pypto.Tensor([_R * 2, _C], pypto.DT_FP32),
    w: pypto.Tensor([2, _R, _C], pypto.DT_FP32),
    y: pypto.Tensor([_R * 2, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R, _C)
    parts = []
    for i in range(_R):
        parts.append(x.view([2, _C], [2 * i, 0]) * float(i + 1))
    weight_tile = w[1, :, :]
    weight_tile.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
    summed = weight_tile + 0.0
    summed.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
    joined = pypto.concat(parts[::-1], dim=0)
    y[:] = pypto.add(joined, pypto.concat([summed, summed], dim=0))


@pypto.frontend.jit
def chained(
    a: pypto.Tensor([_C, _C], pypto.DT_FP32),
    b: pypto.Tensor([_C, _C], pypto.DT_FP32),
    h: pypto.Tensor([_C, _C], pypto.DT_BF16),
    y: pypto.Tensor([_C, _C], pypto.DT_FP32),
    z: pypto.Tensor([_C, _C], pypto.DT_BF16),
):
    pypto.set_cube_tile_shapes([_C, _C], [_C, _C], [_C, _C])
    pypto.set_vec_tile_shapes(_C, _C)
    a_t = a.view([_C, _C], [0, 0])
    y[:] = (a_t @ b) @ a_t
    z[:] = h @ h
