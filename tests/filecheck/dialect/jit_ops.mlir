// The ops added for the JIT frontend in their custom form: print -> parse -> print is
// stable in the custom and the generic form (tests/frontend/test_frontend_ops.py checks
// what they compute).
// RUN: tileir-opt %s | tileir-opt | filecheck %s
// RUN: tileir-opt %s --print-op-generic | tileir-opt | filecheck %s

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
