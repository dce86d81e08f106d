"""Kernels written in the PyPTO-Gym style for the ops the JIT frontend added (indexed
writes, clone, Element, fillpad, arange, logical_not, silu); tileir's tests check them
against numpy goldens and, where pypto 0.2.0 has the op, against the real pypto."""

import pypto

TILE = 4
NEG_INF = pypto.Element(pypto.DT_FP32, float("-inf"))
HALF = pypto.Element(pypto.DT_FP32, 0.5)
RUN = {"run_mode": pypto.RunMode.SIM}


@pypto.frontend.jit(runtime_options=RUN)
def kv_cache_write(
    kv: pypto.Tensor([pypto.STATIC, 1, 1, pypto.STATIC], pypto.DT_FP32),
    slots: pypto.Tensor([pypto.STATIC, 1], pypto.DT_INT64),
    cache: pypto.Tensor([pypto.STATIC, pypto.STATIC, 1, pypto.STATIC], pypto.DT_FP32),
):
    tokens, _, _, dim = kv.shape
    pypto.set_vec_tile_shapes(TILE, 1, 1, dim)
    for t in pypto.loop(tokens // TILE, name="TOKENS", idx_name="t"):
        index = pypto.view(slots, [TILE, 1], [t * TILE, 0])
        rows = pypto.view(kv, [TILE, 1, 1, dim], [t * TILE, 0, 0, 0])
        cache.move(pypto.scatter_update(cache, -2, index, rows))


@pypto.frontend.jit(runtime_options=RUN)
def table_rows(
    table: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    index: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT64),
    rows: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(rows.shape[0], rows.shape[1])
    out[:] = pypto.scatter_update(table, -2, index, rows)


@pypto.frontend.jit(runtime_options=RUN)
def masked_row_max(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, 1], pypto.DT_FP32),
    width: int,
):
    n, cols = x.shape
    pypto.set_vec_tile_shapes(n, cols)
    t = pypto.view(x, [n, cols], [0, 0], valid_shape=[n, width])
    padded = pypto.fillpad(t, "constant", NEG_INF.value)
    best = pypto.amax(padded, -1, keepdim=True)
    pypto.set_vec_tile_shapes(n, 1)
    out[:] = pypto.add(best, pypto.full([n, 1], HALF, pypto.DT_FP32))


@pypto.frontend.jit(runtime_options=RUN)
def clone_twice(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(x.shape[0], x.shape[1])
    t = pypto.view(x, list(x.shape), [0, 0])
    copy = t.clone()
    out[:] = pypto.add(pypto.mul(copy, 2.0), pypto.clone(t))


@pypto.frontend.jit(runtime_options=RUN)
def ramp(
    ints: pypto.Tensor([16], pypto.DT_INT32),
    halves: pypto.Tensor([6], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(16)
    ints[:] = pypto.arange(3, 35, 2)
    halves[:] = pypto.arange(1.0, 4.0, 0.5)


@pypto.frontend.jit(runtime_options=RUN)
def zeros_to_ones(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(x.shape[0], x.shape[1])
    t = pypto.view(x, list(x.shape), [0, 0])
    out[:] = pypto.where(pypto.logical_not(t), 1.0, t)


@pypto.frontend.jit(runtime_options=RUN)
def silu_gate(
    gate: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    up: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    rows, cols = gate.shape
    pypto.set_vec_tile_shapes(TILE, cols)
    for r in pypto.loop((rows + TILE - 1) // TILE, name="ROWS", idx_name="r"):
        valid = (rows - r * TILE).min(TILE)
        g = pypto.view(gate, [TILE, cols], [r * TILE, 0], valid_shape=[valid, cols])
        u = pypto.view(up, [TILE, cols], [r * TILE, 0], valid_shape=[valid, cols])
        out[r * TILE :, 0:] = pypto.mul(pypto.silu(g), u)


@pypto.frontend.jit(runtime_options=RUN)
def subtract_rows(
    target: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    rows: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
    updates: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(target.shape[0], target.shape[1])
    negated = pypto.mul(updates, -1.0)
    pypto.index_put_(target, (rows,), negated, True)


@pypto.frontend.jit(runtime_options=RUN)
def one_hot_plus(
    index: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT64),
    bonus: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    n, picks = index.shape
    classes = out.shape[1]
    pypto.set_vec_tile_shapes(n, classes)
    hot = pypto.zeros([n, classes], dtype=pypto.DT_FP32)
    hot = hot.scatter_(1, index, 1.0)
    out[:] = pypto.scatter(hot, 1, index, bonus, reduce="add")


@pypto.frontend.jit(runtime_options=RUN)
def split_pairs(
    pairs: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    flags: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT32),
    re: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    im: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
):
    rows, cols = pairs.shape
    pypto.set_vec_tile_shapes(rows, cols)
    x = pypto.view(pairs, [rows, cols], [0, 0])
    z = pypto.logical_not(pypto.view(flags, [rows, cols // 2], [0, 0]))
    even, odd = pypto.deinterleave(x)
    pypto.set_vec_tile_shapes(rows, cols // 2)
    re[:] = pypto.where(z, 0.0, even)
    im[:] = odd


@pypto.frontend.jit(runtime_options=RUN)
def rms_rows(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    gamma: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    eps: float,
):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(TILE, cols)
    for r in pypto.loop(rows // TILE, name="ROWS", idx_name="r"):
        t = pypto.view(x, [TILE, cols], [r * TILE, 0])
        out[r * TILE :, 0:] = pypto.rms_norm(t, gamma, eps)
