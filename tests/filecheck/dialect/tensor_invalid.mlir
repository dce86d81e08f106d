// The verifier of `pto.tensor` (a workspace): one `sizes` value per `?` dim.
// RUN: tileir-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// CHECK: tensor_invalid.mlir:6:3: error: 'pto.tensor' workspace 'ws' has 1 dynamic dims but 0 sizes (one index value per `?`)
pto.kernel @missing_size() {
  %ws = pto.tensor "ws" : memref<?x16xf32>
}

// -----

// CHECK: tensor_invalid.mlir:14:3: error: 'pto.tensor' workspace 'ws' has 1 dynamic dims but 2 sizes (one index value per `?`)
pto.kernel @extra_size(%x: memref<?x16xf32>) attributes {dynamic_dims = {x = ["S"]}} {
  %c0 = arith.constant 0 : index
  %ws = pto.tensor "ws" sizes(%c0, %c0) : memref<?x16xf32>
}

// -----

// CHECK: tensor_invalid.mlir:22:3: error: 'pto.tensor' workspace 'ws': size -2 of dynamic dim 0 is not > 0
pto.kernel @constant_size() {
  %n = arith.constant -2 : index
  %ws = pto.tensor "ws" sizes(%n) : memref<?x16xf32>
}
