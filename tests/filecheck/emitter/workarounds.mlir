// RUN: tileir-opt %s -t pypto | filecheck %s

// PyPTO 0.2.0 work-arounds: helpers for tanh and erf (missing) and for sigmoid of a tail
// tile (fails); a vector tile shape of the op's rank before every tile op.

pto.kernel @fixes(%x: memref<6x64xf32>, %out: memref<6x64xf32>, %red: memref<6x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  pto.loop %i = %c0 to %c2 step %c1 name "L" {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %c6, %row : index
    %rows = arith.minsi %left, %c4 : index
    pto.set_vec_tile_shapes [2, 4, 64]
    %t = pto.view %x[%row, 0] valid [%rows, 64] : memref<6x64xf32> -> tensor<4x64xf32>
    %a = pto.tanh %t : tensor<4x64xf32>
    %b = pto.erf %a : tensor<4x64xf32>
    %s = pto.sigmoid %b : tensor<4x64xf32>
    pto.assemble %s into %out[%row, 0] : tensor<4x64xf32>, memref<6x64xf32>
    %w = pto.view %x[0, 0] : memref<6x64xf32> -> tensor<6x64xf32>
    %u = pto.unsqueeze %w, 0 : tensor<6x64xf32> -> tensor<1x6x64xf32>
    %v = pto.sigmoid %u : tensor<1x6x64xf32>
    %r = pto.sum %w, -1 keepdim : tensor<6x64xf32> -> tensor<6x1xf32>
    pto.assemble %r into %red[0, 0] : tensor<6x1xf32>, memref<6x1xf32>
  }
}

// CHECK:      def tileir_erf(x):
// CHECK:          return pypto.mul(pypto.sign(x), pypto.add(pypto.neg(tail), 1.0))
// CHECK:      def tileir_sigmoid(x):
// CHECK-NEXT:     """
// CHECK-NEXT:     sigmoid
// CHECK-NEXT:     return pypto.reciprocal(pypto.add(pypto.exp(pypto.neg(x)), 1.0))
// CHECK:      def tileir_tanh(x):
// CHECK:          e = pypto.exp(pypto.mul(x, -2.0))
// CHECK-NEXT:     return pypto.sub(pypto.mul(pypto.reciprocal(pypto.add(e, 1.0)), 2.0), 1.0)

// CHECK-LABEL: def fixes(
// CHECK:           pypto.set_vec_tile_shapes(2, 4, 64)
// CHECK-NEXT:      t = pypto.view(x, [4, 64], [row, 0], valid_shape=[rows, 64])
// CHECK-NEXT:      pypto.set_vec_tile_shapes(4, 64)
// CHECK-NEXT:      a = tileir_tanh(t)
// CHECK-NEXT:      b = tileir_erf(a)
// CHECK-NEXT:      s = tileir_sigmoid(b)
// CHECK-NEXT:      pypto.assemble(s, [row, 0], out)
// CHECK-NEXT:      w = pypto.view(x, [6, 64], [0, 0])
// CHECK-NEXT:      pypto.set_vec_tile_shapes(2, 4, 64)
// CHECK-NEXT:      u = pypto.unsqueeze(w, 0)
// CHECK-NEXT:      v = pypto.sigmoid(u)
// CHECK-NEXT:      pypto.set_vec_tile_shapes(4, 64)
// CHECK-NEXT:      r = pypto.sum(w, dim=-1, keepdim=True)
// CHECK-NEXT:      red[:] = r
