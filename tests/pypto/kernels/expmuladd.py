"""exp(a) * b + a on 16 rows of 64, one row per loop iteration.

It asks for the NPU run mode on purpose: the harness must force SIM.
"""

import pypto

B, D = 16, 64


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def expmuladd(
    a: pypto.Tensor([B, D], pypto.DT_FP32),
    b: pypto.Tensor([B, D], pypto.DT_FP32),
    out: pypto.Tensor([B, D], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, D)
    for i in pypto.loop(0, B, 1, name="rows", idx_name="i"):
        ta = pypto.view(a, [1, D], [i, 0])
        tb = pypto.view(b, [1, D], [i, 0])
        r = pypto.add(pypto.mul(pypto.exp(ta), tb), ta)
        pypto.assemble(r, [i, 0], out)
