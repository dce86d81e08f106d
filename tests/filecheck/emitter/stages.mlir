// RUN: tileir-opt %s -t pypto | filecheck %s

// Stages, transfers and stitch groups have no PyPTO spelling: their bodies are inlined,
// a transfer is the identity, and a stage's label / tile shapes become settings before
// its first tile op unless already in force there. A whole-tensor view used by the next
// op is the tensor's name; a whole-tensor write is `dst[:] = t`.

pto.kernel @vcv(%x: memref<8x64xf32>, %w: memref<32x64xf32>, %out: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 name "L" {
    %y = pto.stage vector label "pre" tile [8, 64] {
      pto.set_semantic_label "pre"
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
        %s = pto.sigmoid %z2 : tensor<8x32xf32>
        pto.assemble %s into %out[0, 0] : tensor<8x32xf32>, memref<8x32xf32>
        pto.yield
      }
      pto.yield
    }
  }
}

// CHECK-LABEL: def vcv(
// CHECK:           for i in pypto.loop(2, name="L"):
// CHECK-NEXT:          pypto.set_semantic_label("pre")
// CHECK-NEXT:          pypto.set_vec_tile_shapes(8, 64)
// CHECK-NEXT:          e = pypto.exp(x)
// CHECK-NEXT:          pypto.set_semantic_label("linear")
// CHECK-NEXT:          pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
// CHECK-NEXT:          m = pypto.matmul(e, w, pypto.DT_FP32, b_trans=True)
// CHECK-NEXT:          pypto.set_semantic_label("post")
// CHECK-NEXT:          pypto.set_vec_tile_shapes(8, 32)
// CHECK-NEXT:          s = pypto.sigmoid(m)
// CHECK-NEXT:          out[:] = s
// CHECK-NOT:   {{.}}
