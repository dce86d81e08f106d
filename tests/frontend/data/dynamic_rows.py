"""A dynamic row count: `S` is named in the annotation and read back with `x.shape[0]`;
the trip count and the tail are index arithmetic on it."""

import pypto

S = pypto.frontend.dynamic("S")
D = 32
T = 8


@pypto.frontend.jit
def dynamic_rows(
    x: pypto.Tensor([S, D], pypto.DT_BF16),
    out: pypto.Tensor([S, D], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(T, D)
    rows = x.shape[0]
    for i in pypto.loop((rows + T - 1) // T, name="rows"):
        cur = pypto.min(rows, (i + 1) * T) - i * T
        t = pypto.view(x, [T, D], [i * T, 0], valid_shape=[cur, D])
        y = pypto.cast(
            pypto.exp(pypto.cast(t, pypto.DT_FP32)), pypto.DT_BF16, mode=pypto.CastMode.CAST_RINT
        )
        pypto.assemble(y, [i * T, 0], out)


@pypto.frontend.jit
def chunked_copy(
    x: pypto.Tensor([S, D], pypto.DT_FP32),
    out: pypto.Tensor([S, D], pypto.DT_FP32),
):
    for i, n in pypto.loop_unroll(0, S, 1, name="tok", idx_name="i", unroll_list=[4, 2]):
        pypto.set_vec_tile_shapes(n, D)
        t = pypto.view(x, [n, D], [i, 0])
        pypto.assemble(t * 2.0, [i, 0], out)
