// RUN: tileir-opt %s -p sink-invariants | filecheck %s
// RUN: tileir-opt %s -p sink-invariants | %roundtrip | filecheck %s

// A weight cast before the loop and used only in it: recomputed at the start of the
// body under the tile shape it had, then the loop's own setting is restored.
// CHECK-LABEL: pto.kernel @scale_rows
// CHECK:         pto.set_vec_tile_shapes [1, 64]
// CHECK-NEXT:    pto.set_vec_tile_shapes [4, 64]
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK:         pto.loop %[[I:.*]] = {{.*}} name "rows" {
// CHECK-NEXT:      pto.set_vec_tile_shapes [1, 64]
// CHECK-NEXT:      %[[G:.*]] = pto.view %w[0, 0] : memref<1x64xbf16> -> tensor<1x64xbf16>
// CHECK-NEXT:      %[[GF:.*]] = pto.cast %[[G]] : tensor<1x64xbf16> -> tensor<1x64xf32>
// CHECK-NEXT:      pto.set_vec_tile_shapes [4, 64]
// CHECK-NEXT:      %{{.*}} = arith.muli %[[I]], %{{.*}} : index
// CHECK:           pto.mul %{{.*}}, %[[GF]]
builtin.module {
  pto.kernel @scale_rows(%x: memref<8x64xf32>, %w: memref<1x64xbf16>, %out: memref<8x64xf32>) {
    pto.set_vec_tile_shapes [1, 64]
    %g = pto.view %w[0, 0] : memref<1x64xbf16> -> tensor<1x64xbf16>
    %gf = pto.cast %g : tensor<1x64xbf16> -> tensor<1x64xf32>
    pto.set_vec_tile_shapes [4, 64]
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    pto.loop %i = %c0 to %c2 step %c1 name "rows" {
      %s = arith.muli %i, %c4 : index
      %t = pto.view %x[%s, 0] : memref<8x64xf32> -> tensor<4x64xf32>
      %y = pto.mul %t, %gf : tensor<4x64xf32>, tensor<1x64xf32> -> tensor<4x64xf32>
      pto.assemble %y into %out[%s, 0] : tensor<4x64xf32>, memref<8x64xf32>
    }
  }

  // The loop writes the memory the invariant view reads: reading it in the loop would
  // see the loop's own writes, so the view stays (the exp of the tile it read moves).
  // A tile also used after the loop stays.
  // CHECK-LABEL: pto.kernel @reads_what_the_loop_writes
  // CHECK:         %[[V:.*]] = pto.view %buf[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
  // CHECK-NEXT:    %[[K:.*]] = pto.view %x[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
  // CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
  // CHECK:         pto.loop
  // CHECK-NEXT:      pto.set_vec_tile_shapes [4, 64]
  // CHECK-NEXT:      %[[E:.*]] = pto.exp %[[V]]
  // CHECK-NEXT:      pto.add %[[E]], %[[K]]
  // CHECK:         pto.assemble %[[K]] into %out2
  pto.kernel @reads_what_the_loop_writes(%x: memref<4x64xf32>, %buf: memref<4x64xf32>, %out2: memref<4x64xf32>) {
    pto.set_vec_tile_shapes [4, 64]
    %v = pto.view %buf[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
    %e = pto.exp %v : tensor<4x64xf32>
    %k = pto.view %x[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    pto.loop %i = %c0 to %c3 step %c1 name "acc" {
      %a = pto.add %e, %k : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %a into %buf[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    }
    pto.assemble %k into %out2[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
  }
}
