// RUN: tileir-opt %s -t pypto | filecheck %s

// A run-time condition (here what loop-unroll makes of is_loop_begin on a loop with
// dynamic bounds) is written as an `if` on it: PyPTO 0.2.0 traces both branches and runs
// the kernel as written (tests/backends/test_emitter_roundtrip.py checks it there).

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

// CHECK:      for [[I:[a-z_0-9]+]] in pypto.loop(x.shape[0]):
// CHECK-NEXT:     if [[I]] == 0:
// CHECK-NEXT:         [[T:[a-z_0-9]+]] = pypto.view(x, [1, 4], [[[I]], 0])
// CHECK-NEXT:         out[:] = [[T]]
