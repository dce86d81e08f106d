// RUN: tileir-opt %s -p 'coarsen{factor=2}' | filecheck %s
// RUN: tileir-opt %s -p 'coarsen{factor=2}' | %roundtrip | filecheck %s
// RUN: tileir-opt %s -p 'coarsen{factor=4 report=true}' 2>&1 >/dev/null | filecheck --check-prefix=REPORT %s
// RUN: tileir-opt %repo/frontends/kernels/linear.py -p 'coarsen{factor=4}' | filecheck --check-prefix=LINEAR %s
// RUN: not tileir-opt %s -p 'coarsen{factor=0}' 2>&1 | filecheck --check-prefix=BAD %s

// BAD: coarsen: option factor=0 must be at least 1

// 20 rows in blocks of 4 (5 iterations, the last one full) -> blocks of 8: 3 iterations,
// the row count caps the last at 4 rows.
// CHECK-LABEL: pto.kernel @softmax_rows
// CHECK:         %[[KT:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[U:.*]] = arith.constant 3 : index
// CHECK-NEXT:    pto.loop %[[I:.*]] = %{{.*}} to %[[U]] step %{{.*}} name "rows" {
// CHECK-NEXT:      %[[S:.*]] = arith.muli %[[I]], %[[KT]] : index
// CHECK-NEXT:      %[[L:.*]] = arith.subi %{{.*}}, %[[S]] : index
// CHECK-NEXT:      %[[N:.*]] = arith.minsi %[[L]], %[[KT]] : index
// CHECK-NEXT:      pto.set_vec_tile_shapes [8, 64]
// CHECK-NEXT:      %[[T:.*]] = pto.view %x[%[[S]], 0] valid [%[[N]], 64] : memref<20x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT:      %{{.*}} = pto.exp %[[T]] : tensor<8x64xf32>
// CHECK-NEXT:      %{{.*}} = pto.sum %{{.*}}, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
// CHECK-NEXT:      %{{.*}} = pto.add %{{.*}}, %bias2 : tensor<8x1xf32>, tensor<1x1xf32> -> tensor<8x1xf32>
// CHECK:           pto.assemble %{{.*}} into %out[%[[S]], 0] : tensor<8x64xf32>, memref<20x64xf32>
// REPORT: coarsen: loop rows: 4 -> 16 rows per iteration
builtin.module {
  pto.kernel @softmax_rows(%x: memref<20x64xf32>, %bias: memref<1x1xf32>, %out: memref<20x64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c20 = arith.constant 20 : index
    %bias2 = pto.view %bias[0, 0] : memref<1x1xf32> -> tensor<1x1xf32>
    pto.loop %i = %c0 to %c5 step %c1 name "rows" {
      %s = arith.muli %i, %c4 : index
      %l = arith.subi %c20, %s : index
      %n = arith.minsi %l, %c4 : index
      pto.set_vec_tile_shapes [4, 64]
      %t = pto.view %x[%s, 0] valid [%n, 64] : memref<20x64xf32> -> tensor<4x64xf32>
      %e = pto.exp %t : tensor<4x64xf32>
      %m = pto.sum %e, -1 keepdim : tensor<4x64xf32> -> tensor<4x1xf32>
      %mb = pto.add %m, %bias2 : tensor<4x1xf32>, tensor<1x1xf32> -> tensor<4x1xf32>
      %d = pto.div %e, %mb : tensor<4x64xf32>, tensor<4x1xf32> -> tensor<4x64xf32>
      pto.assemble %d into %out[%s, 0] : tensor<4x64xf32>, memref<20x64xf32>
    }
  }

  // A reduction over the rows: left alone.
  // CHECK-LABEL: pto.kernel @column_sum
  // CHECK:         pto.view %x[%{{.*}}, 0] : memref<8x16xf32> -> tensor<2x16xf32>
  // REPORT: coarsen: loop cols: left alone: 'pto.sum' reduces over the rows (dim 0)
  pto.kernel @column_sum(%x: memref<8x16xf32>, %out: memref<4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    pto.loop %i = %c0 to %c4 step %c1 name "cols" {
      %s = arith.muli %i, %c2 : index
      %t = pto.view %x[%s, 0] : memref<8x16xf32> -> tensor<2x16xf32>
      %r = pto.sum %t, 0 keepdim : tensor<2x16xf32> -> tensor<1x16xf32>
      pto.assemble %r into %out[%i, 0] : tensor<1x16xf32>, memref<4x16xf32>
    }
  }
}

// The linear seed kernel (SK-03): 8 rows per iteration -> 32, the matmul's M block 32.
// LINEAR:       pto.loop
// LINEAR:         pto.view %x[%{{.*}}, 0] valid [%{{.*}}, 64] : memref<20x64xbf16> -> tensor<32x64xbf16>
// LINEAR:         pto.set_cube_tile_shapes m [32, 32] k [64, 64] n [32, 32]
