"""out[M, N] (f32) = a[M, K] @ b[N, K]^T, f16 operands, b transposed."""

import pypto

M, K, N = 32, 64, 48


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def matmul_f16(
    a: pypto.Tensor([M, K], pypto.DT_FP16),
    b: pypto.Tensor([N, K], pypto.DT_FP16),
    out: pypto.Tensor([M, N], pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([16, 16], [64, 64], [48, 48])
    for i in pypto.loop(0, M // 16, 1, name="mblk", idx_name="i"):
        ta = pypto.view(a, [16, K], [i * 16, 0])
        c = pypto.matmul(ta, b, pypto.DT_FP32, b_trans=True)
        pypto.assemble(c, [i * 16, 0], out)
