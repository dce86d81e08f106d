// RUN: tileir-opt %s -p pypto-legalize | filecheck %s
// Legal IR stays as it is:
// RUN: tileir-opt %s -p pypto-legalize > %t.mlir && tileir-opt %t.mlir -p pypto-legalize | diff %t.mlir -

// pypto-legalize: stages / stitch groups are inlined, transfers disappear, a stage's
// label and tile shapes become settings before its first tile op, and a tile op whose
// rank differs from the vector tile shape in force gets a set_vec_tile_shapes of its
// rank (matmul, view and reshape are exempt).

pto.kernel @stages(%x: memref<8x64xf32>, %w: memref<32x64xf32>, %out: memref<8x32xf32>) {
  %y = pto.stage vector label "pre" tile [8, 64] {
    %a = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %a : tensor<8x64xf32>
    pto.yield %e : tensor<8x64xf32>
  } -> tensor<8x64xf32>
  %z = pto.stage cube label "linear" cube [16, 16, 64, 64, 32, 32] {
    %y2 = pto.transfer %y from vector to cube : tensor<8x64xf32>
    %b = pto.view %w[0, 0] : memref<32x64xf32> -> tensor<32x64xf32>
    %m = pto.matmul %y2, %b b_trans : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    pto.yield %m : tensor<8x32xf32>
  } -> tensor<8x32xf32>
  pto.stitch size 1 max 4 {
    pto.stage vector label "post" tile [8, 32] {
      %z2 = pto.transfer %z from cube to vector : tensor<8x32xf32>
      %s = pto.sum %z2, 1 : tensor<8x32xf32> -> tensor<8xf32>
      %u = pto.unsqueeze %s, 1 : tensor<8xf32> -> tensor<8x1xf32>
      %t = pto.expand_clone %u : tensor<8x1xf32> -> tensor<8x32xf32>
      pto.assemble %t into %out[0, 0] : tensor<8x32xf32>, memref<8x32xf32>
      pto.yield
    }
    pto.yield
  }
}

// CHECK-LABEL: pto.kernel @stages(
// CHECK-NEXT:    pto.set_semantic_label "pre"
// CHECK-NEXT:    pto.set_vec_tile_shapes [8, 64]
// CHECK-NEXT:    %[[A:.*]] = pto.view %x[0, 0]
// CHECK-NEXT:    %[[E:.*]] = pto.exp %[[A]]
// CHECK-NEXT:    pto.set_semantic_label "linear"
// CHECK-NEXT:    pto.set_cube_tile_shapes m [16, 16] k [64, 64] n [32, 32]
// CHECK-NEXT:    %[[B:.*]] = pto.view %w[0, 0]
// CHECK-NEXT:    %[[M:.*]] = pto.matmul %[[E]], %[[B]] b_trans
// CHECK-NEXT:    pto.set_semantic_label "post"
// CHECK-NEXT:    pto.set_vec_tile_shapes [8, 32]
// CHECK-NEXT:    pto.set_vec_tile_shapes [32]
// CHECK-NEXT:    %[[S:.*]] = pto.sum %[[M]], 1 : tensor<8x32xf32> -> tensor<8xf32>
// CHECK-NEXT:    pto.set_vec_tile_shapes [8, 32]
// CHECK-NEXT:    %[[U:.*]] = pto.unsqueeze %[[S]], 1
// CHECK-NEXT:    %[[T:.*]] = pto.expand_clone %[[U]]
// CHECK-NEXT:    pto.assemble %[[T]] into %out[0, 0]
// CHECK-NEXT:  }
// CHECK-NOT:   pto.stage
// CHECK-NOT:   pto.transfer

// A setting already in force is not repeated (outside loops: PyPTO traces a loop body
// once per unroll factor, so at the top of a body nothing counts as in force).

pto.kernel @in_force(%x: memref<4x16xf32>, %out: memref<4x16xf32>) {
  pto.set_vec_tile_shapes [4, 16]
  pto.set_semantic_label "act"
  %a = pto.view %x[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
  %e = pto.stage vector label "act" tile [4, 16] {
    %r = pto.relu %a : tensor<4x16xf32>
    pto.yield %r : tensor<4x16xf32>
  } -> tensor<4x16xf32>
  pto.assemble %e into %out[0, 0] : tensor<4x16xf32>, memref<4x16xf32>
}

// CHECK-LABEL: pto.kernel @in_force(
// CHECK-NEXT:    pto.set_vec_tile_shapes [4, 16]
// CHECK-NEXT:    pto.set_semantic_label "act"
// CHECK-NEXT:    %[[A:.*]] = pto.view %x[0, 0]
// CHECK-NEXT:    %[[R:.*]] = pto.relu %[[A]]
// CHECK-NEXT:    pto.assemble %[[R]] into %out[0, 0]
// CHECK-NEXT:  }

// A loop-state query used away from its `scf.if` (a pass may move it: it is pure) is
// asked again right before the `if`, where PyPTO requires it.

pto.kernel @loop_state(%x: memref<4x16xf32>, %out: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.set_vec_tile_shapes [4, 16]
  pto.loop %i = %c0 to %c2 step %c1 {
    %first = pto.is_loop_begin %i
    %a = pto.view %x[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
    scf.if %first {
      pto.assemble %a into %out[0, 0] : tensor<4x16xf32>, memref<4x16xf32>
    }
  }
}

// CHECK-LABEL: pto.kernel @loop_state(
// CHECK:         pto.loop %i
// CHECK-NEXT:      %[[A:.*]] = pto.view %x[0, 0]
// CHECK-NEXT:      %[[F:.*]] = pto.is_loop_begin %i
// CHECK-NEXT:      scf.if %[[F]] {
// CHECK-NEXT:        pto.assemble %[[A]] into %out[0, 0]
