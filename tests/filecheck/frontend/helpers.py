# RUN: tileir-opt %s | filecheck %s
# Helpers are inlined at each call with their own settings; matmul takes its bias from
# extend_params; cast modes and trace-time Python (range, constant if) fold away.

import pypto

M, K, N = 16, 32, 16
PARTIAL = False


def _rms_norm(x):
    pypto.set_semantic_label("rmsnorm")
    pypto.set_vec_tile_shapes(M, K)
    return x * pypto.rsqrt(pypto.sum(x * x, -1, keepdim=True) * (1.0 / K) + 1e-6)


# CHECK-LABEL: pto.kernel @linear
# CHECK-SAME:    jit_options = {pass_options = {cube_l1_reuse_setting = {"-1" = 2 : i64, "1" = 1 : i64}}}
# CHECK:         pto.set_semantic_label "rmsnorm"
# CHECK-NEXT:    pto.set_vec_tile_shapes [16, 32]
# CHECK:         pto.rsqrt
# CHECK:         %[[B:.*]] = pto.cast %{{.*}} mode rint : tensor<16x32xf32> -> tensor<16x32xbf16>
# CHECK-NEXT:    pto.set_semantic_label "linear"
# CHECK-NEXT:    pto.set_cube_tile_shapes m [16, 16] k [32, 32] n [16, 16]
# CHECK-NEXT:    %[[W:.*]] = pto.view %w[0, 0] : memref<16x32xbf16> -> tensor<16x32xbf16>
# CHECK-NEXT:    %[[BIAS:.*]] = pto.view %bias[0] : memref<16xf32> -> tensor<16xf32>
# CHECK-NEXT:    %y = pto.matmul %[[B]], %[[W]] bias %[[BIAS]] b_trans : tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<16xf32> -> tensor<16x16xf32>
# CHECK-COUNT-2: pto.exp
# CHECK-NOT:     pto.neg
# CHECK:         pto.assemble
@pypto.frontend.jit(pass_options={"cube_l1_reuse_setting": {-1: 2, 1: 1}})
def linear(
    x: pypto.Tensor([M, K], pypto.DT_FP32),
    w: pypto.Tensor([N, K], pypto.DT_BF16),
    bias: pypto.Tensor([N], pypto.DT_FP32),
    out: pypto.Tensor([M, N], pypto.DT_FP32),
):
    normed = pypto.cast(_rms_norm(x), pypto.DT_BF16, pypto.CastMode.CAST_RINT)
    pypto.set_semantic_label("linear")
    pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
    y = pypto.matmul(normed, w, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias})
    for _ in range(2):
        y = pypto.exp(y)
    if PARTIAL:
        y = -y
    pypto.assemble(y, [0, 0], out)
