// Every pto op once, in its custom form. The RUN lines check that
// print -> parse -> print is stable in the custom and the generic form.
// RUN: tileir-opt %s | tileir-opt | filecheck %s
// RUN: tileir-opt %s --print-op-generic | tileir-opt | filecheck %s

// CHECK-LABEL: pto.kernel @memory_and_layout
// CHECK-SAME:  (%x: memref<?x64xbf16>, %w: memref<64x32xbf16>, %out: memref<?x64xf32>)
// CHECK-SAME:  attributes {dynamic_dims = {out = ["S"], x = ["S"]}, jit_options = {runtime_options = {stitch_function_max_num = 4 : i64}}}
pto.kernel @memory_and_layout(%x: memref<?x64xbf16>, %w: memref<64x32xbf16>, %out: memref<?x64xf32>) attributes {dynamic_dims = {out = ["S"], x = ["S"]}, jit_options = {runtime_options = {stitch_function_max_num = 4 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %s = memref.dim %x, %c0 : memref<?x64xbf16>
  %ws = pto.tensor "acc" : memref<8x64xf32>
  // CHECK: pto.tensor "acc" : memref<8x64xf32>
  %rows = pto.tensor "rows" sizes(%s) : memref<?x64xf32>
  // CHECK: pto.tensor "rows" sizes(%{{.*}}) : memref<?x64xf32>
  %c2 = arith.constant 2 : index
  %s2 = arith.muli %s, %c2 : index
  %xr = pto.reshape_mem %x sizes(%s2) : memref<?x64xbf16> -> memref<?x32xbf16>
  // CHECK: pto.reshape_mem %{{.*}} sizes(%{{.*}}) : memref<?x64xbf16> -> memref<?x32xbf16>
  %wr = pto.reshape_mem %w : memref<64x32xbf16> -> memref<2x32x32xbf16>
  // CHECK: pto.reshape_mem %{{.*}} : memref<64x32xbf16> -> memref<2x32x32xbf16>
  pto.loop %i = %c0 to %s step %c8 name "rows" idx_name "i" unroll [4, 2, 1] {
    // CHECK: pto.loop %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name "rows" idx_name "i" unroll [4, 2, 1] {
    %rest = arith.subi %s, %i : index
    %v = arith.minsi %rest, %c8 : index
    pto.set_vec_tile_shapes [8, 64]
    // CHECK: pto.set_vec_tile_shapes [8, 64]
    pto.set_semantic_label "rope"
    // CHECK: pto.set_semantic_label "rope"
    pto.set_options "pass_options" {sg_set_scope = 3 : i64, vec_nbuffer_setting = {"0" = 2 : i64}}
    // CHECK: pto.set_options "pass_options" {sg_set_scope = 3 : i64, vec_nbuffer_setting = {"0" = 2 : i64}}
    pto.set_options "operation_options" {combine_axis = true}
    // CHECK: pto.set_options "operation_options" {combine_axis = true}
    pto.set_options "auto_mix_partition" {value = 1 : i64}
    // CHECK: pto.set_options "auto_mix_partition" {value = 1 : i64}
    %t = pto.view %x[%i, 0] valid [%v, 64] : memref<?x64xbf16> -> tensor<8x64xbf16>
    // CHECK: pto.view %{{.*}}[%{{.*}}, 0] valid [%{{.*}}, 64] : memref<?x64xbf16> -> tensor<8x64xbf16>
    %f = pto.cast %t mode rint sat : tensor<8x64xbf16> -> tensor<8x64xf32>
    // CHECK: pto.cast %{{.*}} mode rint sat : tensor<8x64xbf16> -> tensor<8x64xf32>
    %g = pto.cast %t : tensor<8x64xbf16> -> tensor<8x64xf32>
    // CHECK: pto.cast %{{.*}} : tensor<8x64xbf16> -> tensor<8x64xf32>
    %h = pto.view %f[0, 32] : tensor<8x64xf32> -> tensor<8x32xf32>
    %l = pto.view %f[0, 0] : tensor<8x64xf32> -> tensor<8x32xf32>
    %bytes = pto.view_type %l : tensor<8x32xf32> -> tensor<8x128xi8>
    // CHECK: pto.view_type %{{.*}} : tensor<8x32xf32> -> tensor<8x128xi8>
    %cat = pto.concat dim -1, %h, %l : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x64xf32>
    // CHECK: pto.concat dim -1, %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x64xf32>
    %r = pto.reshape %cat : tensor<8x64xf32> -> tensor<8x2x32xf32>
    %tr = pto.transpose %r, 1, 2 : tensor<8x2x32xf32> -> tensor<8x32x2xf32>
    // CHECK: pto.transpose %{{.*}}, 1, 2 : tensor<8x2x32xf32> -> tensor<8x32x2xf32>
    %r2 = pto.reshape %tr valid [%v, 64] inplace : tensor<8x32x2xf32> -> tensor<8x64xf32>
    // CHECK: pto.reshape %{{.*}} valid [%{{.*}}, 64] inplace : tensor<8x32x2xf32> -> tensor<8x64xf32>
    %u = pto.unsqueeze %g, 1 : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %e = pto.expand_clone %u : tensor<8x1x64xf32> -> tensor<8x2x64xf32>
    // CHECK: pto.expand_clone %{{.*}} : tensor<8x1x64xf32> -> tensor<8x2x64xf32>
    %acc = pto.view %ws[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
    %sum = pto.add %acc, %r2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    pto.assemble %sum into %ws[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
    // CHECK: pto.assemble %{{.*}} into %{{.*}}[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
    pto.assemble %sum into %out[%i, 0] : tensor<8x64xf32>, memref<?x64xf32>
    %first = pto.is_loop_begin %i
    // CHECK: pto.is_loop_begin %{{.*}}
    %last = pto.is_loop_end %i
    scf.if %first {
      %zero = arith.constant 0.000000e+00 : f32
      %z = pto.full %zero : f32 -> tensor<8x64xf32>
      pto.assemble %z into %ws[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
    }
  }
  %c4 = arith.constant 4 : index
  pto.loop_unroll %j, %n = %c0 to %c8 step %c1 unroll [4, 1] parallel {
    // CHECK: pto.loop_unroll %{{.*}}, %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} unroll [4, 1] parallel {
    %blk = pto.view %w[%j, 0] sizes(%n) : memref<64x32xbf16> -> tensor<?x32xbf16>
    // CHECK: pto.view %{{.*}}[%{{.*}}, 0] sizes(%{{.*}}) : memref<64x32xbf16> -> tensor<?x32xbf16>
  }
}

// CHECK-LABEL: pto.kernel @math
pto.kernel @math(%a: memref<4x16xf32>, %b: memref<16x8xf16>, %bias: memref<8xf32>, %idx: memref<4x3xi32>, %out: memref<4x8xf32>) {
  %x = pto.view %a[0, 0] : memref<4x16xf32> -> tensor<4x16xf32>
  %half = arith.constant 5.000000e-01 : f32
  %n0 = pto.neg %x : tensor<4x16xf32>
  // CHECK: pto.neg %{{.*}} : tensor<4x16xf32>
  %n1 = pto.exp %n0 : tensor<4x16xf32>
  %n2 = pto.log %n1 : tensor<4x16xf32>
  %n1h = pto.exp %n0 precision "HIGH_PRECISION" : tensor<4x16xf32>
  // CHECK: pto.exp %{{.*}} precision "HIGH_PRECISION" : tensor<4x16xf32>
  %n3 = pto.sqrt %n1 : tensor<4x16xf32>
  %n4 = pto.rsqrt %n3 : tensor<4x16xf32>
  %n5 = pto.tanh %n4 : tensor<4x16xf32>
  %n6 = pto.erf %n5 : tensor<4x16xf32>
  %n7 = pto.sigmoid %n6 : tensor<4x16xf32>
  %n8 = pto.abs %n7 : tensor<4x16xf32>
  %n9 = pto.reciprocal %n8 : tensor<4x16xf32>
  %n10 = pto.relu %n9 : tensor<4x16xf32>
  %n11 = pto.round %n10 decimals 2 : tensor<4x16xf32>
  // CHECK: pto.round %{{.*}} decimals 2 : tensor<4x16xf32>
  %n12 = pto.round %n11 : tensor<4x16xf32>
  // CHECK: pto.round %{{.*}} : tensor<4x16xf32>
  %b0 = pto.add %n10, %half : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  // CHECK: pto.add %{{.*}}, %{{.*}} : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  %b1 = pto.sub %half, %b0 : f32, tensor<4x16xf32> -> tensor<4x16xf32>
  %b2 = pto.mul %b1, %b0 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %b3 = pto.div %b2, %n1 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %b3i = pto.div %b2, %n1 precision "INTRINSIC" : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  // CHECK: pto.div %{{.*}}, %{{.*}} precision "INTRINSIC" : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %b4 = pto.maximum %b3, %n2 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %b5 = pto.minimum %b4, %half : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  %b6 = pto.pow %b5, %half : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  %b6i = pto.pow %b5, %half precision "INTRINSIC" : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  // CHECK: pto.pow %{{.*}}, %{{.*}} precision "INTRINSIC" : tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  %row = pto.amax %b6, -1 keepdim : tensor<4x16xf32> -> tensor<4x1xf32>
  // CHECK: pto.amax %{{.*}}, -1 keepdim : tensor<4x16xf32> -> tensor<4x1xf32>
  %bc = pto.sub %b6, %row : tensor<4x16xf32>, tensor<4x1xf32> -> tensor<4x16xf32>
  %s = pto.sum %bc, 1 : tensor<4x16xf32> -> tensor<4xf32>
  %m = pto.amin %bc, 0 keepdim : tensor<4x16xf32> -> tensor<1x16xf32>
  %c0 = pto.eq %b6, %bc : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xi1>
  %c1 = pto.ne %b6, %half : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
  %c2 = pto.lt %b6, %half : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
  %c3 = pto.le %b6, %half : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
  %c4 = pto.gt %b6, %half : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
  %c5 = pto.ge %b6, %half : tensor<4x16xf32>, f32 -> tensor<4x16xi1>
  %sel = pto.where %c2, %b6, %half : tensor<4x16xi1>, tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  // CHECK: pto.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x16xi1>, tensor<4x16xf32>, f32 -> tensor<4x16xf32>
  %xh = pto.cast %sel mode round : tensor<4x16xf32> -> tensor<4x16xf16>
  %wb = pto.view %b[0, 0] : memref<16x8xf16> -> tensor<16x8xf16>
  %bv = pto.view %bias[0] : memref<8xf32> -> tensor<8xf32>
  %mm = pto.matmul %xh, %wb bias %bv : tensor<4x16xf16>, tensor<16x8xf16>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: pto.matmul %{{.*}}, %{{.*}} bias %{{.*}} : tensor<4x16xf16>, tensor<16x8xf16>, tensor<8xf32> -> tensor<4x8xf32>
  %wt = pto.transpose %wb, 0, 1 : tensor<16x8xf16> -> tensor<8x16xf16>
  %mt = pto.matmul %xh, %wt b_trans : tensor<4x16xf16>, tensor<8x16xf16> -> tensor<4x8xf32>
  // CHECK: pto.matmul %{{.*}}, %{{.*}} b_trans : tensor<4x16xf16>, tensor<8x16xf16> -> tensor<4x8xf32>
  %w32 = pto.cast %wb : tensor<16x8xf16> -> tensor<16x8xf32>
  %mq = pto.matmul %b6, %w32 scale 5.000000e-01 : f64 relu trans_mode "CAST_RINT" : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xi8>
  // CHECK: pto.matmul %{{.*}}, %{{.*}} scale 5.000000e-01 : f64 relu trans_mode "CAST_RINT" : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xi8>
  %gm = pto.gathermask %b6, 1 : tensor<4x16xf32> -> tensor<4x8xf32>
  // CHECK: pto.gathermask %{{.*}}, 1 : tensor<4x16xf32> -> tensor<4x8xf32>
  %iv = pto.view %idx[0, 0] : memref<4x3xi32> -> tensor<4x3xi32>
  %ga = pto.gather %wb, 0, %iv : tensor<16x8xf16>, tensor<4x3xi32> -> tensor<4x3xf16>
  // CHECK: pto.gather %{{.*}}, 0, %{{.*}} : tensor<16x8xf16>, tensor<4x3xi32> -> tensor<4x3xf16>
  %i1 = pto.view %iv[0, 0] : tensor<4x3xi32> -> tensor<1x3xi32>
  %ir = pto.reshape %i1 : tensor<1x3xi32> -> tensor<3xi32>
  %is = pto.index_select %wb, 0, %ir : tensor<16x8xf16>, tensor<3xi32> -> tensor<3x8xf16>
  %tv, %ti = pto.topk %b6, 2 dim 1 largest false : tensor<4x16xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  // CHECK: pto.topk %{{.*}}, 2 dim 1 largest false : tensor<4x16xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  %tv2, %ti2 = pto.topk %b6, 3 : tensor<4x16xf32> -> tensor<4x3xf32>, tensor<4x3xi32>
  // CHECK: pto.topk %{{.*}}, 3 : tensor<4x16xf32> -> tensor<4x3xf32>, tensor<4x3xi32>
  pto.set_cube_tile_shapes m [16, 16] k [16, 32] n [16, 16] split_k
  // CHECK: pto.set_cube_tile_shapes m [16, 16] k [16, 32] n [16, 16] split_k
  %st = pto.stage cube label "linear" tile [4, 8] {
    %in = pto.matmul %xh, %wb : tensor<4x16xf16>, tensor<16x8xf16> -> tensor<4x8xf32>
    pto.yield %in : tensor<4x8xf32>
  } -> tensor<4x8xf32>
  // CHECK: pto.stage cube label "linear" tile [4, 8] {
  // CHECK: } -> tensor<4x8xf32>
  %sg = pto.stitch size 2 max 4 {
    %s0 = pto.exp %x : tensor<4x16xf32>
    pto.yield %s0 : tensor<4x16xf32>
  } -> tensor<4x16xf32>
  // CHECK: pto.stitch size 2 max 4 {
  // CHECK: } -> tensor<4x16xf32>
  %tf = pto.transfer %st from cube to vector : tensor<4x8xf32>
  // CHECK: pto.transfer %{{.*}} from cube to vector : tensor<4x8xf32>
  pto.assemble %tf into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
}

// ---- ops added by the ops branch (JIT frontend) ----

// CHECK-LABEL: pto.kernel @writes
pto.kernel @writes(%cache: memref<3x4x1x16xf32>, %slots: memref<2x1xi64>, %kv: memref<2x1x1x16xf32>, %rows: memref<3xi32>, %upd: memref<3x16xf32>, %t2: memref<12x16xf32>) {
  %c = pto.view %cache[0, 0, 0, 0] : memref<3x4x1x16xf32> -> tensor<3x4x1x16xf32>
  %i = pto.view %slots[0, 0] : memref<2x1xi64> -> tensor<2x1xi64>
  %s = pto.view %kv[0, 0, 0, 0] : memref<2x1x1x16xf32> -> tensor<2x1x1x16xf32>
  %u = pto.scatter_update %c[%i], %s : tensor<3x4x1x16xf32>[tensor<2x1xi64>], tensor<2x1x1x16xf32> -> tensor<3x4x1x16xf32>
  // CHECK: pto.scatter_update %{{.*}}[%{{.*}}], %{{.*}} : tensor<3x4x1x16xf32>[tensor<2x1xi64>], tensor<2x1x1x16xf32> -> tensor<3x4x1x16xf32>
  pto.assemble %u into %cache[0, 0, 0, 0] : tensor<3x4x1x16xf32>, memref<3x4x1x16xf32>
  %t = pto.view %t2[0, 0] : memref<12x16xf32> -> tensor<12x16xf32>
  %r = pto.view %rows[0] : memref<3xi32> -> tensor<3xi32>
  %v = pto.view %upd[0, 0] : memref<3x16xf32> -> tensor<3x16xf32>
  %p = pto.index_put %t[%r], %v accumulate : tensor<12x16xf32>[tensor<3xi32>], tensor<3x16xf32> -> tensor<12x16xf32>
  // CHECK: pto.index_put %{{.*}}[%{{.*}}], %{{.*}} accumulate : tensor<12x16xf32>[tensor<3xi32>], tensor<3x16xf32> -> tensor<12x16xf32>
  pto.assemble %p into %t2[0, 0] : tensor<12x16xf32>, memref<12x16xf32>
}

// CHECK-LABEL: pto.kernel @scatter_and_friends
pto.kernel @scatter_and_friends(%x: memref<4x8xf32>, %ix: memref<4x3xi64>, %out: memref<4x8xf32>, %flags: memref<4x8xi1>, %ramp: memref<6xf32>, %ints: memref<16xi32>) {
  %t = pto.view %x[0, 0] valid [4, 5] : memref<4x8xf32> -> tensor<4x8xf32>
  %i = pto.view %ix[0, 0] : memref<4x3xi64> -> tensor<4x3xi64>
  %one = arith.constant 1.000000e+00 : f32
  %s = pto.scatter %t, 1, %i, %one : tensor<4x8xf32>, tensor<4x3xi64>, f32 -> tensor<4x8xf32>
  // CHECK: pto.scatter %{{.*}}, 1, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x3xi64>, f32 -> tensor<4x8xf32>
  %src = pto.view %x[0, 0] : memref<4x8xf32> -> tensor<4x3xf32>
  %a = pto.scatter %s, -1, %i, %src reduce "add" : tensor<4x8xf32>, tensor<4x3xi64>, tensor<4x3xf32> -> tensor<4x8xf32>
  // CHECK: pto.scatter %{{.*}}, -1, %{{.*}}, %{{.*}} reduce "add" : tensor<4x8xf32>, tensor<4x3xi64>, tensor<4x3xf32> -> tensor<4x8xf32>
  %f = pto.fillpad %t value "-inf" : tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: pto.fillpad %{{.*}} value "-inf" : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = pto.clone %f : tensor<4x8xf32>
  // CHECK: pto.clone %{{.*}} : tensor<4x8xf32>
  %g = pto.silu %c : tensor<4x8xf32>
  // CHECK: pto.silu %{{.*}} : tensor<4x8xf32>
  %n = pto.logical_not %a : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: pto.logical_not %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi1>
  %h = pto.arange 1.000000e+00 to 4.000000e+00 step 5.000000e-01 : tensor<6xf32>
  // CHECK: pto.arange 1.000000e+00 to 4.000000e+00 step 5.000000e-01 : tensor<6xf32>
  %k = pto.arange 3.000000e+00 to 3.500000e+01 step 2.000000e+00 : tensor<16xi32>
  // CHECK: pto.arange 3.000000e+00 to 3.500000e+01 step 2.000000e+00 : tensor<16xi32>
  %e, %o = pto.deinterleave %g : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: pto.deinterleave %{{.*}} : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %e2, %o2 = pto.deinterleave %e, %o : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK: pto.deinterleave %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  pto.assemble %g into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
  pto.assemble %e2 into %out[0, 0] : tensor<4x4xf32>, memref<4x8xf32>
  pto.assemble %n into %flags[0, 0] : tensor<4x8xi1>, memref<4x8xi1>
  pto.assemble %h into %ramp[0] : tensor<6xf32>, memref<6xf32>
  pto.assemble %k into %ints[0] : tensor<16xi32>, memref<16xi32>
}

// One element of a DT_INT32 table as an index value (`x[i, j]`), from memory or a tile.
// CHECK-LABEL: pto.kernel @element_reads
pto.kernel @element_reads(%table: memref<?x4xi32>, %lens: memref<3xi32>, %x: memref<16x8xf32>, %out: memref<4x8xf32>) attributes {dynamic_dims = {table = ["B"]}} {
  %c1 = arith.constant 1 : index
  %n = pto.get_tensor_data %lens[2] : memref<3xi32>
  // CHECK: pto.get_tensor_data %{{.*}}[2] : memref<3xi32>
  %blk = pto.get_tensor_data %table[%c1, 3] : memref<?x4xi32>
  // CHECK: pto.get_tensor_data %{{.*}}[%{{.*}}, 3] : memref<?x4xi32>
  %rows = pto.view %table[0, 0] : memref<?x4xi32> -> tensor<2x4xi32>
  %first = pto.get_tensor_data %rows[1, 0] : tensor<2x4xi32>
  // CHECK: pto.get_tensor_data %{{.*}}[1, 0] : tensor<2x4xi32>
  %off = arith.addi %blk, %first : index
  %t = pto.view %x[%off, 0] valid [%n, 8] : memref<16x8xf32> -> tensor<4x8xf32>
  pto.assemble %t into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
}

// The MX matmul: fp8 operands, one e8m0 scale per 32 of K ([M, K/64, 2] and [K/64, N, 2],
// each flag swapping the first two dims), an optional bias.
// CHECK-LABEL: pto.kernel @mx_matmul
pto.kernel @mx_matmul(%a: memref<128x16xf8E5M2>, %b: memref<128x32xf8E4M3FN>, %sa: memref<2x16x2xf8E8M0FNU>, %sb: memref<2x32x2xf8E8M0FNU>, %bias: memref<1x32xf32>, %out: memref<16x32xbf16>) {
  %at = pto.view %a[0, 0] : memref<128x16xf8E5M2> -> tensor<128x16xf8E5M2>
  %bt = pto.view %b[0, 0] : memref<128x32xf8E4M3FN> -> tensor<128x32xf8E4M3FN>
  %sat = pto.view %sa[0, 0, 0] : memref<2x16x2xf8E8M0FNU> -> tensor<2x16x2xf8E8M0FNU>
  %sbt = pto.view %sb[0, 0, 0] : memref<2x32x2xf8E8M0FNU> -> tensor<2x32x2xf8E8M0FNU>
  %bv = pto.view %bias[0, 0] : memref<1x32xf32> -> tensor<1x32xf32>
  %r = pto.scaled_mm %at, %bt scales %sat, %sbt bias %bv a_trans scale_a_trans : tensor<128x16xf8E5M2>, tensor<128x32xf8E4M3FN>, tensor<2x16x2xf8E8M0FNU>, tensor<2x32x2xf8E8M0FNU>, tensor<1x32xf32> -> tensor<16x32xbf16>
  // CHECK: pto.scaled_mm %{{.*}}, %{{.*}} scales %{{.*}}, %{{.*}} bias %{{.*}} a_trans scale_a_trans : tensor<128x16xf8E5M2>, tensor<128x32xf8E4M3FN>, tensor<2x16x2xf8E8M0FNU>, tensor<2x32x2xf8E8M0FNU>, tensor<1x32xf32> -> tensor<16x32xbf16>
  pto.assemble %r into %out[0, 0] : tensor<16x32xbf16>, memref<16x32xbf16>
}

// quant_mx: MX quantisation along the last dim, fp8 e4m3 elements and one e8m0 scale
// per 32 of them, in pairs (what scaled_mm takes).
// CHECK-LABEL: pto.kernel @quant_mx
pto.kernel @quant_mx(%x: memref<4x128xbf16>, %q: memref<4x128xf8E4M3FN>, %s: memref<4x2x2xf8E8M0FNU>) {
  %xt = pto.view %x[0, 0] : memref<4x128xbf16> -> tensor<4x128xbf16>
  %a, %b = pto.quant_mx %xt performance_mode : tensor<4x128xbf16> -> tensor<4x128xf8E4M3FN>, tensor<4x2x2xf8E8M0FNU>
  // CHECK: %{{.*}}, %{{.*}} = pto.quant_mx %{{.*}} performance_mode : tensor<4x128xbf16> -> tensor<4x128xf8E4M3FN>, tensor<4x2x2xf8E8M0FNU>
  pto.assemble %a into %q[0, 0] : tensor<4x128xf8E4M3FN>, memref<4x128xf8E4M3FN>
  pto.assemble %b into %s[0, 0, 0] : tensor<4x2x2xf8E8M0FNU>, memref<4x2x2xf8E8M0FNU>
}

// index_add: `input[index[i]] += alpha * source[i]` along dim, in index order.
// CHECK-LABEL: pto.kernel @index_add
pto.kernel @index_add(%x: memref<6x16xbf16>, %idx: memref<8xi32>, %src: memref<8x16xbf16>, %out: memref<6x16xbf16>) {
  %xt = pto.view %x[0, 0] : memref<6x16xbf16> -> tensor<6x16xbf16>
  %it = pto.view %idx[0] : memref<8xi32> -> tensor<8xi32>
  %st = pto.view %src[0, 0] : memref<8x16xbf16> -> tensor<8x16xbf16>
  %r = pto.index_add %xt, 0, %it, %st alpha 3.000000e-01 : f64 : tensor<6x16xbf16>, tensor<8xi32>, tensor<8x16xbf16> -> tensor<6x16xbf16>
  // CHECK: pto.index_add %{{.*}}, 0, %{{.*}}, %{{.*}} alpha 3.000000e-01 : f64 : tensor<6x16xbf16>, tensor<8xi32>, tensor<8x16xbf16> -> tensor<6x16xbf16>
  pto.assemble %r into %out[0, 0] : tensor<6x16xbf16>, memref<6x16xbf16>
}
