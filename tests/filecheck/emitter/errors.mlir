// RUN: not tileir-opt %s -t pypto 2>&1 | filecheck %s

// A condition PyPTO cannot trace (what loop-unroll makes of is_loop_begin on a loop
// with dynamic bounds) is a located error, not a traceback.

pto.kernel @k(%x: memref<?x4xf32>, %out: memref<1x4xf32>) attributes {dynamic_dims = {x = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  pto.loop %i = %c0 to %n step %c1 {
    %first = arith.cmpi eq, %i, %c0 : index
    scf.if %first {
      %t = pto.view %x[%i, 0] : memref<?x4xf32> -> tensor<1x4xf32>
      pto.assemble %t into %out[0, 0] : tensor<1x4xf32>, memref<1x4xf32>
    }
  }
}


// CHECK: errors.mlir:12:5: error: the PyPTO emitter can only write `if` on pypto.is_loop_begin / is_loop_end or on a pypto.loop_unroll chunk length
// CHECK-NOT: Traceback
