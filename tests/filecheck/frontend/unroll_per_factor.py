# RUN: tileir-opt %s | filecheck %s
# A loop_unroll body that needs the chunk length as a Python int (here: a Python `if`
# choosing the tile rows) is traced once per factor, as PyPTO does, under
# `scf.if %n == factor`; the last factor needs no test. Tensor slices are views.

import pypto

ROWS = 21
COLS = 64


# CHECK-LABEL: pto.kernel @per_factor
# CHECK:         pto.loop_unroll %i, %n = {{.*}} unroll [8, 2, 1] {
# CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : index
# CHECK-NEXT:      %[[IS8:.*]] = arith.cmpi eq, %n, %[[C8]] : index
# CHECK-NEXT:      scf.if %[[IS8]] {
# CHECK-NEXT:        pto.set_vec_tile_shapes [4, 32]
# CHECK-NEXT:        %[[T8:.*]] = pto.view %x[%i, 0] : memref<21x64xf32> -> tensor<8x64xf32>
# CHECK-NEXT:        %{{.*}} = pto.view %[[T8]][0, 0] : tensor<8x64xf32> -> tensor<8x32xf32>
# CHECK:           } else {
# CHECK-NEXT:        %[[C2:.*]] = arith.constant 2 : index
# CHECK-NEXT:        %[[IS2:.*]] = arith.cmpi eq, %n, %[[C2]] : index
# CHECK-NEXT:        scf.if %[[IS2]] {
# CHECK-NEXT:          pto.set_vec_tile_shapes [1, 32]
# CHECK-NEXT:          %{{.*}} = pto.view %x[%i, 0] : memref<21x64xf32> -> tensor<2x64xf32>
# CHECK:             } else {
# CHECK-NEXT:          pto.set_vec_tile_shapes [1, 32]
# CHECK-NEXT:          %{{.*}} = pto.view %x[%i, 0] : memref<21x64xf32> -> tensor<1x64xf32>
@pypto.frontend.jit
def per_factor(
    x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, COLS // 2], pypto.DT_FP32),
):
    for i, n in pypto.loop_unroll(0, ROWS, 1, unroll_list=[8, 2]):
        rows = 4 if n > 4 else 1
        pypto.set_vec_tile_shapes(rows, COLS // 2)
        t = pypto.view(x, [n, COLS], [i, 0])
        out[i:, :] = pypto.exp(t[:, : COLS // 2])
