"""A kernel in the PyPTO-Gym style that steers PyPTO's compiler: operation options at
the top of the kernel, pass options around one stage of each loop iteration. None of
them changes a value: out = exp(x) * 2 + x."""

import pypto

SCOPE = 3
TILE = 4


@pypto.frontend.jit()
def steered(
    x: pypto.Tensor([8, 16], pypto.DT_FP32),
    out: pypto.Tensor([8, 16], pypto.DT_FP32),
):
    pypto.experimental.set_operation_options(combine_axis=True)
    pypto.set_vec_tile_shapes(TILE, 16)
    for i in pypto.loop(8 // TILE):
        pypto.set_pass_options(sg_set_scope=SCOPE, vec_nbuffer_setting={-1: 2, 0: 1})
        t = pypto.view(x, [TILE, 16], [i * TILE, 0])
        r = pypto.mul(pypto.exp(t), 2.0)
        pypto.set_pass_options(sg_set_scope=-1, pg_upper_bound=1024)
        pypto.assemble(pypto.add(r, t), [i * TILE, 0], out)
