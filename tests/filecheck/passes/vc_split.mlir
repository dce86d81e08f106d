// RUN: tileir-opt %s -p vc-split | filecheck %s
// RUN: tileir-opt %s -p vc-split,vc-split | filecheck %s
// RUN: tileir-opt %s -p vc-split | tileir-opt -p vc-split | filecheck %s
// RUN: tileir-opt %s -p 'vc-split{report=true}' -o /dev/null 2>&1 | filecheck --check-prefix=REPORT %s
// RUN: tileir-opt %s -p 'vc-split{platform="A3"}' | filecheck %s
// RUN: not tileir-opt %s -p 'vc-split{platform="Z9"}' 2>&1 | filecheck --check-prefix=BADPLATFORM %s

// BADPLATFORM: unknown platform 'Z9'; known platforms: A2, A3

// SK-03 linear projection (seed 002): V(RMSNorm) -> C(MatMul, b_trans) -> V(cast), one
// token loop, the user's tile shapes and labels before each stage.
// CHECK-LABEL: pto.kernel @sk03
// CHECK-SAME:  flow_pattern = "V1,C1,V1"
// The index math in front of the loop belongs to no stage.
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    pto.loop
// CHECK-NEXT:      %[[OFF:[^,]*]], %[[NB:.*]] = pto.stage vector tile [8, 64] {
// CHECK:             pto.set_semantic_label "rmsnorm"
// CHECK:             pto.rsqrt
// CHECK:             %[[CAST:.*]] = pto.cast %{{.*}} mode rint : tensor<8x64xf32> -> tensor<8x64xbf16>
// CHECK-NEXT:        pto.yield %{{.*}}, %[[CAST]] : index, tensor<8x64xbf16>
// CHECK-NEXT:      } -> index, tensor<8x64xbf16>
// Settings are statements for the ops that follow: they open the next stage.
// CHECK-NEXT:      %[[P:.*]] = pto.stage cube cube [16, 16, 64, 64, 32, 32] {
// CHECK-NEXT:        %[[T:.*]] = pto.transfer %[[NB]] from vector to cube : tensor<8x64xbf16>
// CHECK-NEXT:        pto.set_semantic_label "linear"
// CHECK-NEXT:        pto.set_cube_tile_shapes m [16, 16] k [64, 64] n [32, 32]
// CHECK-NEXT:        %[[W:.*]] = pto.view %w[0, 0]
// CHECK-NEXT:        %[[MM:.*]] = pto.matmul %[[T]], %[[W]] b_trans
// CHECK-NEXT:        pto.yield %[[MM]] : tensor<8x32xf32>
// CHECK-NEXT:      } -> tensor<8x32xf32>
// CHECK-NEXT:      pto.stage vector tile [8, 32] {
// CHECK-NEXT:        %[[T2:.*]] = pto.transfer %[[P]] from cube to vector : tensor<8x32xf32>
// CHECK-NEXT:        pto.set_semantic_label "post"
// CHECK-NEXT:        pto.set_vec_tile_shapes [8, 32]
// CHECK-NEXT:        %[[O:.*]] = pto.cast %[[T2]] mode rint
// CHECK-NEXT:        pto.assemble %[[O]] into %out[%[[OFF]], 0]
// CHECK-NEXT:        pto.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
pto.kernel @sk03(%x: memref<21x64xbf16>, %gamma: memref<1x64xf32>, %w: memref<32x64xbf16>, %out: memref<21x32xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  pto.loop %i = %c0 to %c3 step %c1 name "LOOP_TOKEN" {
    %off = arith.muli %i, %c8 : index
    %c21 = arith.constant 21 : index
    %rest = arith.subi %c21, %off : index
    %rows = arith.minsi %rest, %c8 : index
    pto.set_semantic_label "rmsnorm"
    pto.set_vec_tile_shapes [8, 64]
    %xt = pto.view %x[%off, 0] valid [%rows, 64] : memref<21x64xbf16> -> tensor<8x64xbf16>
    %xf = pto.cast %xt : tensor<8x64xbf16> -> tensor<8x64xf32>
    %sq = pto.mul %xf, %xf : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %ss = pto.sum %sq, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    %inv_n = arith.constant 1.562500e-02 : f32
    %ms = pto.mul %ss, %inv_n : tensor<8x1xf32>, f32 -> tensor<8x1xf32>
    %eps = arith.constant 9.99999997E-7 : f32
    %mse = pto.add %ms, %eps : tensor<8x1xf32>, f32 -> tensor<8x1xf32>
    %r = pto.rsqrt %mse : tensor<8x1xf32>
    %xn = pto.mul %xf, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
    %g = pto.view %gamma[0, 0] : memref<1x64xf32> -> tensor<1x64xf32>
    %y = pto.mul %xn, %g : tensor<8x64xf32>, tensor<1x64xf32> -> tensor<8x64xf32>
    %yb = pto.cast %y mode rint : tensor<8x64xf32> -> tensor<8x64xbf16>
    pto.set_semantic_label "linear"
    pto.set_cube_tile_shapes m [16, 16] k [64, 64] n [32, 32]
    %wt = pto.view %w[0, 0] : memref<32x64xbf16> -> tensor<32x64xbf16>
    %p = pto.matmul %yb, %wt b_trans : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
    pto.set_semantic_label "post"
    pto.set_vec_tile_shapes [8, 32]
    %o = pto.cast %p mode rint : tensor<8x32xf32> -> tensor<8x32xbf16>
    pto.assemble %o into %out[%off, 0] : tensor<8x32xbf16>, memref<21x32xbf16>
  }
}

// RoPE B (interleave, gathermask) stays pure Vector: one stage, no transfer.
// CHECK-LABEL: pto.kernel @rope_b
// CHECK-SAME:  flow_pattern = "V1"
// CHECK:         pto.loop
// CHECK-NEXT:      pto.stage vector tile [8, 2, 64] {
// CHECK-NOT:       pto.transfer
// CHECK-NOT:       pto.stage
// CHECK:           pto.gathermask %{{.*}}, 1
// CHECK:           pto.gathermask %{{.*}}, 2
// CHECK-NOT:       pto.stage
// CHECK:           pto.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
pto.kernel @rope_b(%x: memref<16x2x64xf32>, %cos: memref<16x1x32xf32>, %sin: memref<16x1x32xf32>, %out: memref<16x2x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 {
    %c8 = arith.constant 8 : index
    %off = arith.muli %i, %c8 : index
    pto.set_vec_tile_shapes [8, 2, 64]
    %t = pto.view %x[%off, 0, 0] : memref<16x2x64xf32> -> tensor<8x2x64xf32>
    %c = pto.view %cos[%off, 0, 0] : memref<16x1x32xf32> -> tensor<8x1x32xf32>
    %s = pto.view %sin[%off, 0, 0] : memref<16x1x32xf32> -> tensor<8x1x32xf32>
    %e = pto.gathermask %t, 1 : tensor<8x2x64xf32> -> tensor<8x2x32xf32>
    %o = pto.gathermask %t, 2 : tensor<8x2x64xf32> -> tensor<8x2x32xf32>
    %ec = pto.mul %e, %c : tensor<8x2x32xf32>, tensor<8x1x32xf32> -> tensor<8x2x32xf32>
    %os = pto.mul %o, %s : tensor<8x2x32xf32>, tensor<8x1x32xf32> -> tensor<8x2x32xf32>
    %ye = pto.sub %ec, %os : tensor<8x2x32xf32>, tensor<8x2x32xf32> -> tensor<8x2x32xf32>
    %es = pto.mul %e, %s : tensor<8x2x32xf32>, tensor<8x1x32xf32> -> tensor<8x2x32xf32>
    %oc = pto.mul %o, %c : tensor<8x2x32xf32>, tensor<8x1x32xf32> -> tensor<8x2x32xf32>
    %yo = pto.add %es, %oc : tensor<8x2x32xf32>, tensor<8x2x32xf32> -> tensor<8x2x32xf32>
    pto.assemble %ye into %out[%off, 0, 0] : tensor<8x2x32xf32>, memref<16x2x64xf32>
    pto.assemble %yo into %out[%off, 0, 32] : tensor<8x2x32xf32>, memref<16x2x64xf32>
  }
}

// No settings: shapes come from the A2 buffer table. Vector: [8, 4096] f32 would need
// 8*4096*4*4 = 512 KiB of UB (> 192 KiB), so the long dim halves to 1024 (128 KiB).
// Cube, bf16 (M, K, N) = (8, 4096, 1024): L0 blocks start at m 16, k 256, n 128; L0B
// needs 256*128*2*2 = 128 KiB > 64 KiB, so k halves to 128; L1 then takes k up to 512
// ((16*1024 + 1024*128)*2*2 = 576 KiB > 512 KiB, 512 gives 288 KiB).
// CHECK-LABEL: pto.kernel @derived
// CHECK-SAME:  flow_pattern = "V1,C1,V1"
// CHECK:         pto.stage vector tile [8, 1024] {
// CHECK:         pto.stage cube cube [16, 16, 128, 512, 128, 128] {
// CHECK:         pto.stage vector tile [8, 1024] {
pto.kernel @derived(%x: memref<8x4096xf32>, %w: memref<4096x1024xbf16>, %out: memref<8x1024xf32>) {
  %t = pto.view %x[0, 0] : memref<8x4096xf32> -> tensor<8x4096xf32>
  %e = pto.exp %t : tensor<8x4096xf32>
  %b = pto.cast %e mode rint : tensor<8x4096xf32> -> tensor<8x4096xbf16>
  %wt = pto.view %w[0, 0] : memref<4096x1024xbf16> -> tensor<4096x1024xbf16>
  %p = pto.matmul %b, %wt : tensor<8x4096xbf16>, tensor<4096x1024xbf16> -> tensor<8x1024xf32>
  pto.assemble %p into %out[0, 0] : tensor<8x1024xf32>, memref<8x1024xf32>
}

// A mixed `scf.if` branch is split too: the tile made before the `if` reaches the
// branch's cube stage through a transfer, the cube result reaches the branch's vector
// stage through another.
// CHECK-LABEL: pto.kernel @mixed_if
// CHECK-SAME:  flow_pattern = "V1,C1,V2"
// CHECK:         pto.loop
// CHECK:           %[[A:.*]] = pto.stage vector
// CHECK:           scf.if
// CHECK-NEXT:        %[[M:.*]] = pto.stage cube
// CHECK-NEXT:          pto.transfer %[[A]] from vector to cube
// CHECK:               pto.matmul
// CHECK:             pto.stage vector
// CHECK-NEXT:          pto.transfer %[[M]] from cube to vector
// CHECK:               pto.assemble
// CHECK:           }
// CHECK:         pto.stage vector
pto.kernel @mixed_if(%x: memref<16x16xf16>, %w: memref<16x16xf16>, %out: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 {
    %t = pto.view %x[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
    %a = pto.abs %t : tensor<16x16xf16>
    %first = pto.is_loop_begin %i
    scf.if %first {
      %wt = pto.view %w[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
      %m = pto.matmul %a, %wt : tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf32>
      pto.assemble %m into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>
    }
  }
  %z = arith.constant 0.0 : f32
  %f = pto.full %z : f32 -> tensor<16x16xf32>
  pto.assemble %f into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>
}

// An `scf.if` whose branches yield a Cube tile and a Vector tile: the Cube one is handed
// over inside its branch, so the `if` result comes from one unit. When both branches
// yield Cube tiles, the consumer receives the result through one transfer.
// CHECK-LABEL: pto.kernel @if_results
// CHECK:         %[[R:.*]] = scf.if
// CHECK-NEXT:      %[[M:.*]] = pto.stage cube
// CHECK:           %[[H:.*]] = pto.stage vector tile [16, 16] {
// CHECK-NEXT:        %[[T:.*]] = pto.transfer %[[M]] from cube to vector
// CHECK-NEXT:        pto.yield %[[T]]
// CHECK-NEXT:      } -> tensor<16x16xf32>
// CHECK-NEXT:      scf.yield %[[H]]
// CHECK:         } else {
// CHECK-NEXT:      %[[F:.*]] = pto.stage vector
// CHECK:           scf.yield %[[F]]
// CHECK:         pto.stage vector
// CHECK-NEXT:      pto.abs %[[R]]
// CHECK:         %[[R2:.*]] = scf.if
// CHECK:         pto.stage vector
// CHECK-NEXT:      %[[T2:.*]] = pto.transfer %[[R2]] from cube to vector
// CHECK-NEXT:      pto.neg %[[T2]]
pto.kernel @if_results(%x: memref<16x16xf16>, %w: memref<16x16xf16>, %out: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  pto.loop %i = %c0 to %c2 step %c1 {
    %t = pto.view %x[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
    %first = pto.is_loop_begin %i
    %r = scf.if %first -> (tensor<16x16xf32>) {
      %wt = pto.view %w[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
      %m = pto.matmul %t, %wt : tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf32>
      scf.yield %m : tensor<16x16xf32>
    } else {
      %f = pto.cast %t : tensor<16x16xf16> -> tensor<16x16xf32>
      scf.yield %f : tensor<16x16xf32>
    }
    %a = pto.abs %r : tensor<16x16xf32>
    pto.assemble %a into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>
    %r2 = scf.if %first -> (tensor<16x16xf32>) {
      %wt2 = pto.view %w[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
      %m2 = pto.matmul %t, %wt2 : tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf32>
      scf.yield %m2 : tensor<16x16xf32>
    } else {
      %wt3 = pto.view %w[0, 0] : memref<16x16xf16> -> tensor<16x16xf16>
      %m3 = pto.matmul %wt3, %t : tensor<16x16xf16>, tensor<16x16xf16> -> tensor<16x16xf32>
      scf.yield %m3 : tensor<16x16xf32>
    }
    %n = pto.neg %r2 : tensor<16x16xf32>
    pto.assemble %n into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>
  }
}

// REPORT: vc-split: @sk03: V1,C1,V1 [vector tile [8, 64]; cube m [16, 16] k [64, 64] n [32, 32]; vector tile [8, 32]]; 2 transfers added
// REPORT: vc-split: @rope_b: V1 [vector tile [8, 2, 64]]; 0 transfers added
// REPORT: vc-split: @derived: V1,C1,V1 [vector tile [8, 1024]; cube m [16, 16] k [128, 512] n [128, 128]; vector tile [8, 1024]]; 2 transfers added
// REPORT: vc-split: @mixed_if: V1,C1,V2
