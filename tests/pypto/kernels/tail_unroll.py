"""2 * x + 1 over 10 rows in tiles of 4 (the last tile holds 2), with unroll_list."""

import pypto

B, D, T = 10, 32, 4


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def tail_unroll(
    x: pypto.Tensor([B, D], pypto.DT_FP32),
    out: pypto.Tensor([B, D], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(T, D)
    for i in pypto.loop(0, (B + T - 1) // T, 1, name="tiles", idx_name="i", unroll_list=[2, 1]):
        rows = pypto.min(B - i * T, T)
        t = pypto.view(x, [T, D], [i * T, 0], valid_shape=[rows, D])
        pypto.assemble(pypto.add(pypto.mul(t, 2.0), 1.0), [i * T, 0], out)
