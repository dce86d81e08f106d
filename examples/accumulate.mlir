// out = the sum of the 8 row blocks of x, through a workspace carried across iterations
// (is_loop_begin initialises it, is_loop_end writes the result).
//
//   tileir-run examples/accumulate.mlir --input x=x.npy --output-dir out/
pto.kernel @accumulate(%x: memref<32x64xf32>, %out: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %acc = pto.tensor "acc" : memref<4x64xf32>
  pto.loop %i = %c0 to %c8 step %c1 name "blocks" idx_name "i" {
    %row = arith.muli %i, %c4 : index
    %t = pto.view %x[%row, 0] : memref<32x64xf32> -> tensor<4x64xf32>
    %first = pto.is_loop_begin %i
    scf.if %first {
      pto.assemble %t into %acc[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    } else {
      %a = pto.view %acc[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
      %s = pto.add %a, %t : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %s into %acc[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    }
    %last = pto.is_loop_end %i
    scf.if %last {
      %a = pto.view %acc[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %a into %out[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    }
  }
}
