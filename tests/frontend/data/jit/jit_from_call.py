"""Shapes that come only from the call: a trailing `...` and `[]`."""

import pypto


@pypto.frontend.jit
def exp_rows(
    x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
    out: pypto.Tensor([], pypto.DT_BF16),
):
    n, c = x.shape[0], x.shape[1]
    pypto.set_vec_tile_shapes(1, c)
    for i in pypto.loop(n, name="ROW", idx_name="i"):
        t = pypto.cast(pypto.view(x, [1, c], [i, 0]), pypto.DT_FP32)
        pypto.assemble(pypto.cast(pypto.exp(t), pypto.DT_BF16), [i, 0], out)
