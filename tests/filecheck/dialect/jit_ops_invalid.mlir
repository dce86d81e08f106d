// The verifiers of the JIT ops name the op and the broken rule.
// RUN: tileir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: jit_ops_invalid.mlir:9:3: error: 'pto.scatter_update' src [3, 16] must have b*s = 4 rows for index [2, 2]
pto.kernel @rows(%x: memref<8x16xf32>, %i: memref<2x2xi64>, %s: memref<3x16xf32>) {
  %xt = pto.view %x[0, 0] : memref<8x16xf32> -> tensor<8x16xf32>
  %it = pto.view %i[0, 0] : memref<2x2xi64> -> tensor<2x2xi64>
  %st = pto.view %s[0, 0] : memref<3x16xf32> -> tensor<3x16xf32>
  %r = pto.scatter_update %xt[%it], %st : tensor<8x16xf32>[tensor<2x2xi64>], tensor<3x16xf32> -> tensor<8x16xf32>
}

// -----

// CHECK: jit_ops_invalid.mlir:17:3: error: 'pto.fillpad' value '1.0' is not supported (PyPTO fills with 0.0, inf, -inf)
pto.kernel @fill(%x: memref<8x16xf32>) {
  %xt = pto.view %x[0, 0] : memref<8x16xf32> -> tensor<8x16xf32>
  %r = pto.fillpad %xt value "1.0" : tensor<8x16xf32> -> tensor<8x16xf32>
}

// -----

// CHECK: jit_ops_invalid.mlir:24:3: error: 'pto.arange' result shape [5] should be [6]
pto.kernel @ramp(%x: memref<8x16xf32>) {
  %r = pto.arange 1.000000e+00 to 4.000000e+00 step 5.000000e-01 : tensor<5xf32>
}

// -----

// CHECK: jit_ops_invalid.mlir:35:3: error: 'pto.scatter' index [4, 9] is larger than the input [4, 8] in dim 1
pto.kernel @wide(%x: memref<4x8xf32>, %i: memref<4x9xi64>) {
  %xt = pto.view %x[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
  %it = pto.view %i[0, 0] : memref<4x9xi64> -> tensor<4x9xi64>
  %one = arith.constant 1.000000e+00 : f32
  // dim 0: the index may be larger along dim 0 only
  %r = pto.scatter %xt, 0, %it, %one : tensor<4x8xf32>, tensor<4x9xi64>, f32 -> tensor<4x8xf32>
}

// -----

// CHECK: jit_ops_invalid.mlir:45:3: error: 'pto.index_put' values [2, 16] must be [3, 16] (no broadcasting)
pto.kernel @put(%x: memref<8x16xf32>, %i: memref<3xi32>, %v: memref<2x16xf32>) {
  %xt = pto.view %x[0, 0] : memref<8x16xf32> -> tensor<8x16xf32>
  %it = pto.view %i[0] : memref<3xi32> -> tensor<3xi32>
  %vt = pto.view %v[0, 0] : memref<2x16xf32> -> tensor<2x16xf32>
  %r = pto.index_put %xt[%it], %vt : tensor<8x16xf32>[tensor<3xi32>], tensor<2x16xf32> -> tensor<8x16xf32>
}

// -----

// CHECK: jit_ops_invalid.mlir:53:3: error: 'pto.logical_not' operand has element type i64; it must be one of f32, f16, bf16, i1, i8, i16, i32
pto.kernel @lnot(%x: memref<8xi64>) {
  %xt = pto.view %x[0] : memref<8xi64> -> tensor<8xi64>
  %r = pto.logical_not %xt : tensor<8xi64> -> tensor<8xi1>
}
