// The verifier of `pto.get_tensor_data` (`x[i, j]`) names the op and the broken rule.
// RUN: tileir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: get_tensor_data_invalid.mlir:6:3: error: 'pto.get_tensor_data' reads element type f32; an index value is read only from an integer tensor (i8, i16, i32, i64)
pto.kernel @float_table(%t: memref<4x8xf32>) {
  %e = pto.get_tensor_data %t[0, 1] : memref<4x8xf32>
}

// -----

// CHECK: get_tensor_data_invalid.mlir:13:3: error: 'pto.get_tensor_data' has 1 indices for a rank-2 tensor
pto.kernel @rank(%t: memref<4x8xi32>) {
  %e = pto.get_tensor_data %t[0] : memref<4x8xi32>
}

// -----

// CHECK: get_tensor_data_invalid.mlir:20:3: error: 'pto.get_tensor_data' index 8 in dim 1 is outside the tensor's size 8
pto.kernel @static_out_of_bounds(%t: memref<4x8xi32>) {
  %e = pto.get_tensor_data %t[0, 8] : memref<4x8xi32>
}

// -----

// CHECK: get_tensor_data_invalid.mlir:28:3: error: 'pto.get_tensor_data' index -1 in dim 0 is negative
pto.kernel @constant_negative(%t: memref<?xi32>) attributes {dynamic_dims = {t = ["N"]}} {
  %m = arith.constant -1 : index
  %e = pto.get_tensor_data %t[%m] : memref<?xi32>
}
