// RUN: tileir-opt %s -p default | filecheck %s
// RUN: tileir-opt %s -p default | %roundtrip | filecheck %s
// RUN: tileir-opt %s -p 'default{unroll-factors=4 max-functions=2}' | filecheck --check-prefix=OPTS %s
// RUN: tileir-opt %s -p 'default{unroll=false}' | filecheck --check-prefix=NOUNROLL %s

// The default pipeline: stages and labels first (vc-split, semantic-labels), then the
// user's unroll list made explicit, then stitch groups of at most PyPTO's default 128.
// CHECK-LABEL: pto.kernel @rows
// CHECK-SAME:    stitch_function_max_num = 128 : i64
// CHECK:         pto.set_vec_tile_shapes [1, 64]
// CHECK:         pto.loop %[[I:.*]] = {{.*}} name "rows_LoopUnroll8" {
// CHECK:           pto.stitch size 8 max 128 {
// CHECK-NEXT:        pto.stage vector label "elementwise" tile [1, 64] {
// CHECK-NEXT:          pto.view %x[%[[I]], 0]
// CHECK-NEXT:          pto.exp
// CHECK-NEXT:          pto.assemble
// CHECK:           pto.yield
// CHECK:         name "rows_LoopUnroll4" {
// CHECK:           pto.stitch size 4 max 128 {
// CHECK:         name "rows_LoopUnroll1" {
// CHECK-NOT:       pto.stitch

// A loop without an unroll list is not unrolled (PyPTO's cost model made an unrolled
// one-row loop slower); settings and memory writes survive the cleanups, the dead
// pure op does not.
// CHECK-LABEL: pto.kernel @plain
// CHECK:         pto.loop %{{.*}} name "rows" {
// CHECK-NEXT:      pto.stage vector label "scale" tile [1, 64] {
// CHECK-NEXT:        pto.set_semantic_label "scale"
// CHECK-NEXT:        pto.set_vec_tile_shapes [1, 64]
// CHECK-NEXT:        pto.view
// CHECK-NEXT:        pto.exp
// CHECK-NEXT:        pto.assemble
// CHECK-NOT:     pto.neg
// CHECK-NOT:     LoopUnroll

// OPTS-LABEL: pto.kernel @rows
// OPTS-SAME:    stitch_function_max_num = 2 : i64
// OPTS:         name "rows_LoopUnroll4"
// OPTS:           pto.stitch size 2 max 2
// OPTS:           pto.stitch size 2 max 2
// OPTS:         name "rows_LoopUnroll1"
// OPTS-LABEL: pto.kernel @plain
// OPTS:         name "rows_LoopUnroll4"

// NOUNROLL-LABEL: pto.kernel @rows
// NOUNROLL-NOT:     stitch_function_max_num
// NOUNROLL:         pto.loop {{.*}} name "rows" unroll [8, 4, 2, 1] {
// NOUNROLL-NEXT:      pto.stage vector
pto.kernel @rows(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.set_vec_tile_shapes [1, 64]
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [8, 4, 2, 1] {
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %r = pto.exp %t : tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
pto.kernel @plain(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" {
    pto.set_semantic_label "scale"
    pto.set_vec_tile_shapes [1, 64]
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %r = pto.exp %t : tensor<1x64xf32>
    %dead = pto.neg %r : tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
