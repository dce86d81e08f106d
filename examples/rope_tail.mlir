// RoPE (rotate-half form) over 20 rows in tiles of 8: the last tile is a tail of 4 rows.
// bf16 in / out, fp32 math, round-to-nearest-even on the way out.
//
//   tileir-run examples/rope_tail.mlir --random-inputs --seed 0 --output-dir out/
pto.kernel @rope(%x: memref<20x2x64xbf16>, %cos: memref<20x64xbf16>, %sin: memref<20x64xbf16>,
                 %out: memref<20x2x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c20 = arith.constant 20 : index
  pto.loop %i = %c0 to %c3 step %c1 name "LOOP_BS_ROPE" idx_name "bs_idx" unroll [2, 1] {
    %row = arith.muli %i, %c8 : index
    %left = arith.subi %c20, %row : index
    %cur = arith.minsi %left, %c8 : index
    pto.set_vec_tile_shapes [8, 64]
    %c = pto.view %cos[%row, 0] valid [%cur, 64] : memref<20x64xbf16> -> tensor<8x64xbf16>
    %cf = pto.cast %c : tensor<8x64xbf16> -> tensor<8x64xf32>
    %cb = pto.reshape %cf valid [%cur, 1, 64] : tensor<8x64xf32> -> tensor<8x1x64xf32>
    %s = pto.view %sin[%row, 0] valid [%cur, 64] : memref<20x64xbf16> -> tensor<8x64xbf16>
    %sf = pto.cast %s : tensor<8x64xbf16> -> tensor<8x64xf32>
    %sb = pto.reshape %sf valid [%cur, 1, 64] : tensor<8x64xf32> -> tensor<8x1x64xf32>
    pto.set_vec_tile_shapes [8, 2, 64]
    %xt = pto.view %x[%row, 0, 0] valid [%cur, 2, 64] : memref<20x2x64xbf16> -> tensor<8x2x64xbf16>
    %xf = pto.cast %xt : tensor<8x2x64xbf16> -> tensor<8x2x64xf32>
    %x1 = pto.view %xf[0, 0, 0] valid [%cur, 2, 32] : tensor<8x2x64xf32> -> tensor<8x2x32xf32>
    %x2 = pto.view %xf[0, 0, 32] valid [%cur, 2, 32] : tensor<8x2x64xf32> -> tensor<8x2x32xf32>
    %n2 = pto.neg %x2 : tensor<8x2x32xf32>
    %rot = pto.concat dim -1, %n2, %x1 : tensor<8x2x32xf32>, tensor<8x2x32xf32> -> tensor<8x2x64xf32>
    %a = pto.mul %xf, %cb : tensor<8x2x64xf32>, tensor<8x1x64xf32> -> tensor<8x2x64xf32>
    %b = pto.mul %rot, %sb : tensor<8x2x64xf32>, tensor<8x1x64xf32> -> tensor<8x2x64xf32>
    %y = pto.add %a, %b : tensor<8x2x64xf32>, tensor<8x2x64xf32> -> tensor<8x2x64xf32>
    %o = pto.cast %y mode rint : tensor<8x2x64xf32> -> tensor<8x2x64xbf16>
    pto.assemble %o into %out[%row, 0, 0] : tensor<8x2x64xbf16>, memref<20x2x64xbf16>
  }
}
