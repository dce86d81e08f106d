"""out[1, D] = sum of the 8 row blocks of x[8 * 4, D], with a loop-carried accumulator."""

import pypto

NB, T, D = 8, 4, 64


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def accumulate(
    x: pypto.Tensor([NB * T, D], pypto.DT_FP32),
    out: pypto.Tensor([T, D], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(T, D)
    acc = pypto.tensor([T, D], pypto.DT_FP32, "acc")
    for i in pypto.loop(0, NB, 1, name="blocks", idx_name="i"):
        t = pypto.view(x, [T, D], [i * T, 0])
        if pypto.is_loop_begin(i):
            acc[:] = pypto.mul(t, 1.0)
        else:
            acc[:] = pypto.add(acc, t)
        if pypto.is_loop_end(i):
            out[:] = pypto.mul(acc, 1.0)
