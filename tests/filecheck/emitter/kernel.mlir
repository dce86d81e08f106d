// RUN: tileir-opt %s -t pypto | filecheck %s

// A kernel with a dynamic dim, jit options, a loop with an unroll list and a tail tile.

pto.kernel @scale(%x: memref<?x64xf32>, %out: memref<?x64xf32>) attributes {dynamic_dims = {out = ["S"], x = ["S"]}, jit_options = {runtime_options = {run_mode = "pypto.RunMode.NPU", stitch_function_max_num = 8 : i64}, pass_options = {cube_l1_reuse_setting = {"-1" = 2 : i64}}, debug_options = {x = unit}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %trips = arith.ceildivsi %n, %c4 : index
  pto.loop %i = %c0 to %trips step %c1 name "rows" idx_name "i" unroll [2, 1] {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %n, %row : index
    %rows = arith.minsi %left, %c4 : index
    pto.set_semantic_label "scale"
    pto.set_vec_tile_shapes [4, 64]
    %t = pto.view %x[%row, 0] valid [%rows, 64] : memref<?x64xf32> -> tensor<4x64xf32>
    %h = arith.constant -5.000000e-01 : f32
    %r = pto.mul %t, %h : tensor<4x64xf32>, f32 -> tensor<4x64xf32>
    %b = pto.cast %r mode rint : tensor<4x64xf32> -> tensor<4x64xf32>
    pto.assemble %b into %out[%row, 0] : tensor<4x64xf32>, memref<?x64xf32>
  }
}

// CHECK:      import pypto
// CHECK-EMPTY:
// CHECK-NEXT: S = pypto.frontend.dynamic("S")
// CHECK-EMPTY:
// CHECK-EMPTY:
// CHECK-NEXT: @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU, "stitch_function_max_num": 8}, pass_options={"cube_l1_reuse_setting": {-1: 2}}, debug_options={"x": None})
// CHECK-NEXT: def scale(
// CHECK-NEXT:     x: pypto.Tensor([S, 64], pypto.DT_FP32),
// CHECK-NEXT:     out: pypto.Tensor([S, 64], pypto.DT_FP32),
// CHECK-NEXT: ):
// CHECK-NEXT:     trips = pypto.ceildiv(x.shape[0], 4)
// CHECK-NEXT:     for i in pypto.loop(trips, name="rows", idx_name="i", unroll_list=[2, 1]):
// CHECK-NEXT:         row = i * 4
// CHECK-NEXT:         left = x.shape[0] - row
// CHECK-NEXT:         rows = pypto.min(left, 4)
// CHECK-NEXT:         pypto.set_semantic_label("scale")
// CHECK-NEXT:         pypto.set_vec_tile_shapes(4, 64)
// CHECK-NEXT:         t = pypto.view(x, [4, 64], [row, 0], valid_shape=[rows, 64])
// CHECK-NEXT:         r = pypto.mul(t, -0.5)
// CHECK-NEXT:         b = pypto.cast(r, pypto.DT_FP32, pypto.CastMode.CAST_RINT)
// CHECK-NEXT:         pypto.assemble(b, [row, 0], out)
// CHECK-NOT:  {{.}}
