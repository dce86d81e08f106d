# RUN: tileir-opt %s | filecheck %s
# RUN: tileir-opt %s -t pypto | filecheck %s --check-prefix=PY
# pypto.scaled_mm (the MX matmul: fp8 operands, e8m0 scales per 32 of K) with its four
# transpose flags and a bias; `t[i] = v` reshapes v to a size-1 dim at i, as PyPTO does.

import pypto

M, K, N = 16, 128, 32


# CHECK-LABEL: pto.kernel @mx
# CHECK:         %[[X:.*]] = pto.view %x[0, 0] : memref<128x16xf8E5M2> -> tensor<128x16xf8E5M2>
# CHECK:         %[[W:.*]] = pto.view %w[0, 0] : memref<32x128xf8E4M3FN> -> tensor<32x128xf8E4M3FN>
# CHECK:         %[[XS:.*]] = pto.view %xs[0, 0, 0] : memref<2x16x2xf8E8M0FNU> -> tensor<2x16x2xf8E8M0FNU>
# CHECK:         %[[WS:.*]] = pto.view %ws[0, 0, 0] : memref<32x2x2xf8E8M0FNU> -> tensor<32x2x2xf8E8M0FNU>
# CHECK:         %[[B:.*]] = pto.view %bias[0, 0] : memref<1x32xbf16> -> tensor<1x32xbf16>
# CHECK:         %[[R:.*]] = pto.scaled_mm %[[X]], %[[W]] scales %[[XS]], %[[WS]] bias %[[B]] a_trans b_trans scale_a_trans scale_b_trans
# CHECK-SAME:      : tensor<128x16xf8E5M2>, tensor<32x128xf8E4M3FN>, tensor<2x16x2xf8E8M0FNU>, tensor<32x2x2xf8E8M0FNU>, tensor<1x32xbf16> -> tensor<16x32xbf16>
# CHECK:         %[[R3:.*]] = pto.reshape %[[R]] : tensor<16x32xbf16> -> tensor<1x16x32xbf16>
# CHECK:         pto.assemble %[[R3]] into %y[%{{.*}}, 0, 0] : tensor<1x16x32xbf16>, memref<2x16x32xbf16>
# PY-LABEL: def mx(
# PY:         [[R:t_[0-9]+]] = pypto.scaled_mm(t, t_2, pypto.DT_BF16, t_3, t_4, a_trans=True, b_trans=True, scale_a_trans=True, scale_b_trans=True, extend_params={"bias_tensor": bias})  # tileir: PyPTO 0.2.0 compiles scaled_mm (fp8 operands) for DAV_3510 (Ascend 950) only; on DAV_2201 it reports FC3000
# PY-NEXT:    [[R3:t_[0-9]+]] = pypto.reshape([[R]], [1, 16, 32])
# PY-NEXT:    pypto.assemble([[R3]], [i, 0, 0], y)
@pypto.frontend.jit
def mx(
    x: pypto.Tensor([K, M], pypto.DT_FP8E5M2),
    w: pypto.Tensor([N, K], pypto.DT_FP8E4M3),
    xs: pypto.Tensor([K // 64, M, 2], pypto.DT_FP8E8M0),
    ws: pypto.Tensor([N, K // 64, 2], pypto.DT_FP8E8M0),
    bias: pypto.Tensor([1, N], pypto.DT_BF16),
    y: pypto.Tensor([2, M, N], pypto.DT_BF16),
):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [32, 32])
    for i in pypto.loop(2, name="rep", idx_name="i"):
        y[i] = pypto.scaled_mm(
            x[:, :],
            w[:, :],
            pypto.DT_BF16,
            xs[:, :, :],
            ws[:, :, :],
            a_trans=True,
            b_trans=True,
            scale_a_trans=True,
            scale_b_trans=True,
            extend_params={"bias_tensor": bias[:, :]},
        )
