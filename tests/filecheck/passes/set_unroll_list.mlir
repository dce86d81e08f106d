// RUN: tileir-opt %s -p 'set-unroll-list{factors=2}' | filecheck %s
// RUN: tileir-opt %s -p 'set-unroll-list{factors=4 loops=cols}' | filecheck --check-prefix=COLS %s
// RUN: tileir-opt %s -p 'set-unroll-list' | filecheck --check-prefix=ONE %s
// RUN: not tileir-opt %s -p 'set-unroll-list{factors=0}' 2>&1 | filecheck --check-prefix=BAD %s

// BAD: set-unroll-list: option factors: unroll_list factors must be positive, got 0

// CHECK: pto.loop %{{.*}} name "rows" unroll [2, 1] {
// CHECK: pto.loop %{{.*}} name "cols" unroll [2, 1] {
// COLS: pto.loop %{{.*}} name "rows" unroll [8, 4, 2, 1] {
// COLS: pto.loop %{{.*}} name "cols" unroll [4, 1] {
// ONE: pto.loop %{{.*}} name "rows" unroll [1] {
// ONE: pto.loop %{{.*}} name "cols" unroll [1] {
builtin.module {
  pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    pto.set_vec_tile_shapes [1, 64]
    pto.loop %i = %c0 to %c8 step %c1 name "rows" unroll [8, 4, 2, 1] {
      %t = pto.view %x[%i, 0] : memref<8x64xf32> -> tensor<1x64xf32>
      pto.assemble %t into %out[%i, 0] : tensor<1x64xf32>, memref<8x64xf32>
    }
    pto.loop %j = %c0 to %c8 step %c1 name "cols" {
      %t = pto.view %x[%j, 0] : memref<8x64xf32> -> tensor<1x64xf32>
      pto.assemble %t into %out[%j, 0] : tensor<1x64xf32>, memref<8x64xf32>
    }
  }
}
