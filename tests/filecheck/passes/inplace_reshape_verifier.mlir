// Where the ReshapeOp verifier draws the line on a user's `inplace`.
// RUN: tileir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// An inplace reshape of a view window verifies: PyPTO's newer docs allow only
// inplace=False there, but 0.2.0 compiles and computes it (PyPTO-Gym's mhc_post).
// CHECK-NOT: error
// CHECK: pto.kernel @view
// CHECK: pto.reshape %t inplace
pto.kernel @view(%x: memref<16x64xf32>, %out: memref<512xf32>) {
  %t = pto.view %x[8, 0] : memref<16x64xf32> -> tensor<8x64xf32>
  %r = pto.reshape %t inplace : tensor<8x64xf32> -> tensor<512xf32>
  %n = pto.neg %r : tensor<512xf32>
  pto.assemble %n into %out[0] : tensor<512xf32>, memref<512xf32>
}

// -----

// A view of a whole kernel argument is the global tensor itself: PyPTO reshapes
// those inplace (seed 002: `reshape(w_scale, [1, N], inplace=True)`).
// CHECK-NOT: error
// CHECK: pto.kernel @whole
// CHECK: pto.reshape %t inplace
pto.kernel @whole(%g: memref<64xf32>, %out: memref<1x64xf32>) {
  %t = pto.view %g[0] : memref<64xf32> -> tensor<64xf32>
  %r = pto.reshape %t inplace : tensor<64xf32> -> tensor<1x64xf32>
  %n = pto.neg %r : tensor<1x64xf32>
  pto.assemble %n into %out[0, 0] : tensor<1x64xf32>, memref<1x64xf32>
}

// -----

// An inplace result written into a kernel argument (`out.move(reshape(y, ..., inplace=True))`)
// verifies: PyPTO 0.2.0 drops that `inplace` itself (it costs a copy, not a wrong value).
// CHECK-NOT: error
// CHECK: pto.kernel @output
// CHECK: pto.reshape %y inplace
pto.kernel @output(%x: memref<8x64xf32>, %out: memref<512xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %y = pto.exp %t : tensor<8x64xf32>
  %r = pto.reshape %y inplace : tensor<8x64xf32> -> tensor<512xf32>
  pto.assemble %r into %out[0] : tensor<512xf32>, memref<512xf32>
}
