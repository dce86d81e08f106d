// RUN: tileir-opt %s -p vc-split,semantic-labels | filecheck %s
// RUN: tileir-opt %s -p vc-split,semantic-labels,semantic-labels | filecheck %s
// RUN: tileir-opt %s -p vc-split,semantic-labels,inplace-reshape,semantic-labels{check=true} | filecheck %s
// Without vc-split there are no stages, so nothing is labelled or marked.
// RUN: not tileir-opt %s -p semantic-labels 2>&1 | filecheck --check-prefix=NOSTAGES %s
// NOSTAGES: error: pass 'semantic-labels' requires staged IR
// NOSTAGES-SAME: which pass 'vc-split' establishes: run `-p vc-split,semantic-labels`

// The user's labels, each in effect at its stage's first op, win over derived ones.
// CHECK-LABEL: pto.kernel @sk03_user
// CHECK-SAME:  labelled
// CHECK:         pto.stage vector label "q-rmsnorm" tile [8, 64]
// CHECK:         pto.stage cube label "wqa-linear" cube [16, 16, 64, 64, 32, 32]
// CHECK:         pto.stage vector label "post" tile [8, 32]
pto.kernel @sk03_user(%x: memref<8x64xbf16>, %w: memref<32x64xbf16>, %out: memref<8x32xbf16>) {
  pto.set_semantic_label "q-rmsnorm"
  pto.set_vec_tile_shapes [8, 64]
  %xt = pto.view %x[0, 0] : memref<8x64xbf16> -> tensor<8x64xbf16>
  %xf = pto.cast %xt : tensor<8x64xbf16> -> tensor<8x64xf32>
  %sq = pto.mul %xf, %xf : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %ss = pto.sum %sq, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = pto.rsqrt %ss : tensor<8x1xf32>
  %y = pto.mul %xf, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
  %yb = pto.cast %y mode rint : tensor<8x64xf32> -> tensor<8x64xbf16>
  pto.set_semantic_label "wqa-linear"
  pto.set_cube_tile_shapes m [16, 16] k [64, 64] n [32, 32]
  %wt = pto.view %w[0, 0] : memref<32x64xbf16> -> tensor<32x64xbf16>
  %p = pto.matmul %yb, %wt b_trans : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
  pto.set_semantic_label "post"
  pto.set_vec_tile_shapes [8, 32]
  %o = pto.cast %p mode rint : tensor<8x32xf32> -> tensor<8x32xbf16>
  pto.assemble %o into %out[0, 0] : tensor<8x32xbf16>, memref<8x32xbf16>
}

// Without user labels the rule table names each stage: RMSNorm (sum + rsqrt), a matmul
// with a weight read from a kernel argument (linear), a cast-only post stage.
// CHECK-LABEL: pto.kernel @sk03_derived
// CHECK:         pto.stage vector label "rmsnorm"
// CHECK:         pto.stage cube label "linear"
// CHECK:         pto.stage vector label "cast"
pto.kernel @sk03_derived(%x: memref<8x64xbf16>, %w: memref<32x64xbf16>, %out: memref<8x32xbf16>) {
  %xt = pto.view %x[0, 0] : memref<8x64xbf16> -> tensor<8x64xbf16>
  %xf = pto.cast %xt : tensor<8x64xbf16> -> tensor<8x64xf32>
  %sq = pto.mul %xf, %xf : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %ss = pto.sum %sq, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
  %r = pto.rsqrt %ss : tensor<8x1xf32>
  %y = pto.mul %xf, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
  %yb = pto.cast %y mode rint : tensor<8x64xf32> -> tensor<8x64xbf16>
  %wt = pto.view %w[0, 0] : memref<32x64xbf16> -> tensor<32x64xbf16>
  %p = pto.matmul %yb, %wt b_trans : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
  %o = pto.cast %p mode rint : tensor<8x32xf32> -> tensor<8x32xbf16>
  pto.assemble %o into %out[0, 0] : tensor<8x32xbf16>, memref<8x32xbf16>
}

// Quant variant (AT-11): RMSNorm and the int8 quantisation share one vector stage
// (both patterns match, joined in table order); the int32 result is dequantised.
// Two RoPE-like stages in one kernel get unique labels.
// CHECK-LABEL: pto.kernel @quant_and_two_ropes
// CHECK:         pto.stage vector label "rmsnorm-quant"
// CHECK:         pto.stage cube label "linear"
// CHECK:         pto.stage vector label "dequant"
// CHECK:         pto.stage cube label "matmul"
// CHECK:         pto.stage vector label "rope"
// CHECK:         pto.stage cube label "matmul-2"
// CHECK:         pto.stage vector label "rope-2"
pto.kernel @quant_and_two_ropes(%x: memref<16x64xf32>, %w: memref<64x64xi8>, %out: memref<16x64xf32>) {
  %xt = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<16x64xf32>
  %sq = pto.mul %xt, %xt : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  %ss = pto.sum %sq, -1 keepdim : tensor<16x64xf32> -> tensor<16x1xf32>
  %r = pto.rsqrt %ss : tensor<16x1xf32>
  %y = pto.mul %xt, %r : tensor<16x64xf32>, tensor<16x1xf32> -> tensor<16x64xf32>
  %q = pto.cast %y mode rint sat : tensor<16x64xf32> -> tensor<16x64xi8>
  %wt = pto.view %w[0, 0] : memref<64x64xi8> -> tensor<64x64xi8>
  %acc = pto.matmul %q, %wt : tensor<16x64xi8>, tensor<64x64xi8> -> tensor<16x64xi32>
  %f = pto.cast %acc : tensor<16x64xi32> -> tensor<16x64xf32>
  %s = arith.constant 5.000000e-01 : f32
  %d = pto.mul %f, %s : tensor<16x64xf32>, f32 -> tensor<16x64xf32>
  %m1 = pto.matmul %d, %d b_trans : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x16xf32>
  %lo = pto.view %m1[0, 0] : tensor<16x16xf32> -> tensor<16x8xf32>
  %hi = pto.view %m1[0, 8] : tensor<16x16xf32> -> tensor<16x8xf32>
  %a = pto.mul %lo, %hi : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %b = pto.mul %hi, %lo : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %c = pto.sub %a, %b : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %e = pto.add %a, %b : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %rot = pto.concat dim 1, %c, %e : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  %m2 = pto.matmul %rot, %rot : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  %lo2 = pto.view %m2[0, 0] : tensor<16x16xf32> -> tensor<16x8xf32>
  %hi2 = pto.view %m2[0, 8] : tensor<16x16xf32> -> tensor<16x8xf32>
  %a2 = pto.mul %lo2, %hi2 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %b2 = pto.mul %hi2, %lo2 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %c2 = pto.sub %a2, %b2 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %e2 = pto.add %a2, %b2 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %rot2 = pto.concat dim 1, %c2, %e2 : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  pto.assemble %rot2 into %out[0, 0] : tensor<16x16xf32>, memref<16x64xf32>
}
