# RUN: tileir-opt %s | filecheck %s
# RUN: tileir-opt %s | tileir-opt | filecheck %s
# A PyPTO kernel file read by the `py` frontend: loops, index arithmetic and tail views.

import pypto

SEQ = 20
TILE = 8
LOOPS = (SEQ + TILE - 1) // TILE


# CHECK-LABEL: pto.kernel @tail_rows(%x: memref<20x64xf32>, %out: memref<20x64xf32>)
# CHECK-SAME:    jit_options = {runtime_options = {run_mode = "pypto.RunMode.NPU"}}
# CHECK:         %[[C0:.*]] = arith.constant 0 : index
# CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
# CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
# CHECK-NEXT:    pto.loop %i = %[[C0]] to %[[C3]] step %[[C1]] name "rows" idx_name "i" unroll [8, 4, 2, 1] {
# CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : index
# CHECK-NEXT:      %[[OFF:.*]] = arith.muli %i, %[[C8]] : index
# CHECK-NEXT:      %[[C20:.*]] = arith.constant 20 : index
# CHECK-NEXT:      %[[LEFT:.*]] = arith.subi %[[C20]], %[[OFF]] : index
# CHECK-NEXT:      %cur = arith.minsi %[[LEFT]], %[[C8]] : index
# CHECK-NEXT:      pto.set_vec_tile_shapes [8, 64]
# CHECK:           %t = pto.view %x[%{{.*}}, 0] valid [%cur, 64] : memref<20x64xf32> -> tensor<8x64xf32>
# CHECK-NEXT:      %[[H:.*]] = arith.constant 5.000000e-01 : f32
# CHECK-NEXT:      %y = pto.mul %t, %[[H]] : tensor<8x64xf32>, f32 -> tensor<8x64xf32>
# CHECK:           pto.assemble %y into %out[%{{.*}}, 0] : tensor<8x64xf32>, memref<20x64xf32>
# CHECK-NEXT:    }
@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def tail_rows(
    x: pypto.Tensor([SEQ, 64], pypto.DT_FP32),
    out: pypto.Tensor([SEQ, 64], pypto.DT_FP32),
):
    for i in pypto.loop(LOOPS, name="rows", idx_name="i", unroll_list=[4, 8, 2]):
        cur = pypto.min(SEQ - i * TILE, TILE)
        pypto.set_vec_tile_shapes(TILE, 64)
        t = pypto.view(x, [TILE, 64], [i * TILE, 0], valid_shape=[cur, 64])
        y = t * 0.5
        pypto.assemble(y, [i * TILE, 0], out)


S = pypto.frontend.dynamic("S")


# CHECK-LABEL: pto.kernel @chunks(%x: memref<?x16xbf16>, %out: memref<?x16xbf16>)
# CHECK-SAME:    dynamic_dims = {out = ["S"], x = ["S"]}
# CHECK:         %S = memref.dim %x, %{{.*}} : memref<?x16xbf16>
# CHECK:         pto.loop_unroll %i, %n = %{{.*}} to %S step %{{.*}} name "tok" unroll [4, 1] {
# CHECK-NEXT:      pto.set_vec_tile_shapes [4, 16]
# CHECK-NEXT:      %t = pto.view %x[%i, 0] sizes(%n) : memref<?x16xbf16> -> tensor<?x16xbf16>
# CHECK-NEXT:      %[[E:.*]] = pto.exp %t : tensor<?x16xbf16>
# CHECK-NEXT:      pto.assemble %[[E]] into %out[%i, 0] : tensor<?x16xbf16>, memref<?x16xbf16>
@pypto.frontend.jit
def chunks(
    x: pypto.Tensor([S, 16], pypto.DT_BF16),
    out: pypto.Tensor([S, 16], pypto.DT_BF16),
):
    for i, n in pypto.loop_unroll(0, x.shape[0], 1, name="tok", unroll_list=[4]):
        pypto.set_vec_tile_shapes(n, 16)
        t = pypto.view(x, [n, 16], [i, 0])
        pypto.assemble(pypto.exp(t), [i, 0], out)
