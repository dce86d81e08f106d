"""Kernels in the PyPTO-Gym style (written for tileir's tests) for values that leave a
pypto.loop: a concrete `pypto.SymbolicScalar` counter changed under runtime `if`s and
tested after the loop, inplace reshapes made in a `pypto.loop(1)` and read after it,
`Tensor.move` of a tile of another rank, and a tail tile read before it is written."""

import pypto

_R = 4
_C = 8


@pypto.frontend.jit
def flag_then_pass(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    y: pypto.Tensor([_R, _C], pypto.DT_FP32),
    z: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, _C)
    seen = pypto.SymbolicScalar(0)
    for i in pypto.loop(_R, name="ROWS", idx_name="i"):
        row = pypto.view(x, [1, _C], [i, 0])
        if pypto.is_loop_begin(i):
            y[i : i + 1, :] = row * 2.0
        else:
            seen = seen + 1
            y[i : i + 1, :] = row * 3.0
    if seen > 0:
        for j in pypto.loop(_R, name="PASS", idx_name="j"):
            r = pypto.view(x, [1, _C], [j, 0])
            z[j : j + 1, :] = r + float(seen)
    else:
        for j in pypto.loop(_R, name="PASS", idx_name="j"):
            r = pypto.view(x, [1, _C], [j, 0])
            z[j : j + 1, :] = r - 100.0


@pypto.frontend.jit
def count_two_ifs(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    z: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, _C)
    hits = 0
    for i in pypto.loop(_R, name="ROWS", idx_name="i"):
        row = pypto.view(x, [1, _C], [i, 0])
        if pypto.is_loop_begin(i):
            z[i : i + 1, :] = row
        else:
            hits += 1
            z[i : i + 1, :] = row * 2.0
        if pypto.is_loop_end(i):
            hits -= 3
        else:
            hits = hits + 5
    for j in pypto.loop(_R, name="PASS", idx_name="j"):
        r = pypto.view(z, [1, _C], [j, 0])
        z[j : j + 1, :] = r + float(hits)


@pypto.frontend.jit
def set_in_one_branch(
    x: pypto.Tensor([_R, _C], pypto.DT_FP32),
    z: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, _C)
    mode = 0
    for i in pypto.loop(_R, name="ROWS", idx_name="i"):
        row = pypto.view(x, [1, _C], [i, 0])
        if pypto.is_loop_begin(i):
            mode = 2
        z[i : i + 1, :] = row
    if mode > 0:
        z[:] = x


@pypto.frontend.jit
def flatten_then_rows(
    x: pypto.Tensor([pypto.DYNAMIC, 2, _C], pypto.DT_FP32),
    y: pypto.Tensor([pypto.DYNAMIC, _C], pypto.DT_FP32),
):
    n = x.shape[0]
    for _ in pypto.loop(0, 1, 1, name="flat"):
        x_2d = pypto.reshape(x, [n * 2, _C], inplace=True)
    pypto.set_vec_tile_shapes(1, _C)
    for r in pypto.loop(n * 2, name="ROWS", idx_name="r"):
        row = pypto.view(x_2d, [1, _C], [r, 0])
        y[r : r + 1, :] = row * 0.5


@pypto.frontend.jit
def move_flat_into_3d(
    x: pypto.Tensor([_R * 2, _C], pypto.DT_FP32),
    out: pypto.Tensor([2, _R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R * 2, _C)
    t = pypto.view(x, [_R * 2, _C], [0, 0])
    out.move(t - 1.0)


@pypto.frontend.jit
def cache_rows_update(
    cache: pypto.Tensor([pypto.DYNAMIC, 2, _C], pypto.DT_FP32),
    slots: pypto.Tensor([2, 1], pypto.DT_INT64),
    rows: pypto.Tensor([2, _C], pypto.DT_FP32),
):
    n = cache.shape[0]
    cache_2d = pypto.reshape(cache, [n * 2, _C], inplace=True)
    pypto.set_vec_tile_shapes(2, _C)
    for _ in pypto.loop(1, name="upd"):
        idx = pypto.view(slots, [2, 1], [0, 0])
        src = pypto.view(rows, [2, _C], [0, 0])
        cache.move(pypto.scatter_update(cache_2d, -2, idx, src))


@pypto.frontend.jit
def tail_read_then_write(
    x: pypto.Tensor([pypto.DYNAMIC, _C], pypto.DT_FP32),
    y: pypto.Tensor([_R, _C], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(_R, _C)
    n = x.shape[0]
    for _ in pypto.loop(1, name="once"):
        whole = pypto.view(x, [_R, _C], [0, 0], valid_shape=[n, _C])
        t = whole[0:_R, :]
        doubled = t * 2.0
        t[0:1, :] = doubled[1:2, :]
        y[:] = t + doubled
