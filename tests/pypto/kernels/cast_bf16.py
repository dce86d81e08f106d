"""f32 -> bf16 with round-to-nearest-even (CAST_RINT), 4 rows per iteration."""

import pypto

B, D, T = 16, 64, 4


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def cast_bf16(
    x: pypto.Tensor([B, D], pypto.DT_FP32),
    out: pypto.Tensor([B, D], pypto.DT_BF16),
):
    pypto.set_vec_tile_shapes(T, D)
    for i in pypto.loop(0, B // T, 1, name="rows", idx_name="i"):
        t = pypto.view(x, [T, D], [i * T, 0])
        pypto.assemble(pypto.cast(t, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [i * T, 0], out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def widen_bf16(
    x: pypto.Tensor([B, D], pypto.DT_BF16),
    out: pypto.Tensor([B, D], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(T, D)
    for i in pypto.loop(0, B // T, 1, name="rows", idx_name="i"):
        t = pypto.view(x, [T, D], [i * T, 0])
        pypto.assemble(pypto.cast(t, pypto.DT_FP32), [i * T, 0], out)
