"""A 2-d vector tile shape for 3-d ops: PyPTO fails in a pass (`Errcode: FFFFFF`), and only
its C++ log says why."""

import pypto


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def broken(
    a: pypto.Tensor([2, 16, 64], pypto.DT_FP32),
    out: pypto.Tensor([2, 16, 64], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 64)
    for i in pypto.loop(0, 2, 1, name="rows", idx_name="i"):
        t = pypto.view(a, [1, 16, 64], [i, 0, 0])
        pypto.assemble(pypto.exp(t), [i, 0, 0], out)
