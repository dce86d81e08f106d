// RUN: tileir-opt %s -p loop-unroll | filecheck %s
// RUN: tileir-opt %s -p loop-unroll | %roundtrip | filecheck %s
// RUN: tileir-opt %s -p 'loop-unroll{factors=3 loops=rope}' | filecheck --check-prefix=OPT %s
// RUN: tileir-opt %s -p 'loop-unroll{max-body-ops=44}' | filecheck --check-prefix=CAP %s
// RUN: tileir-opt %repo/frontends/kernels/linear_projection.py -p loop-unroll | filecheck --check-prefix=SK03 %s
// RUN: not tileir-opt %s -p 'loop-unroll{factors=0,2}' 2>&1 | filecheck --check-prefix=BAD %s

// BAD: loop-unroll: option factors: unroll_list factors must be positive, got 0

// RoPE (rotate-half) over S = 13 rows, one row per iteration, unroll [8, 4, 2, 1]:
// 13 = 8 + 4 + 1, so one chunk loop of 8 copies, one of 4 and one of 1; 2 is not used.
// CHECK-LABEL: pto.kernel @rope
// CHECK:         pto.set_vec_tile_shapes [1, 64]
// CHECK-NEXT:    %[[LB8:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[ST8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[LB4:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[UB4:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[ST4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[LB1:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[UB1:.*]] = arith.constant 13 : index
// CHECK-NEXT:    %[[ST1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    pto.loop %[[J:.*]] = %[[LB8]] to %[[UB8]] step %[[ST8]] name "rope_LoopUnroll8" idx_name "s" {
// Copy 0 uses the chunk index itself; copy k starts with its index j + k.
// CHECK:           pto.view %x[%[[J]], 0] : memref<13x64xf32> -> tensor<1x64xf32>
// CHECK-COUNT-7:   arith.addi %[[J]], %{{.*}} : index
// CHECK-NOT:       arith.addi %[[J]]
// CHECK:         }
// CHECK-NEXT:    pto.loop %{{.*}} = %[[LB4]] to %[[UB4]] step %[[ST4]] name "rope_LoopUnroll4" idx_name "s" {
// CHECK-COUNT-4:   pto.assemble
// CHECK-NOT:       pto.assemble
// CHECK:         }
// CHECK-NEXT:    pto.loop %{{.*}} = %[[LB1]] to %[[UB1]] step %[[ST1]] name "rope_LoopUnroll1" idx_name "s" {
// CHECK-COUNT-1:   pto.assemble
// CHECK-NOT:       pto.assemble
// CHECK:         }
// CHECK-NOT:     pto.loop

// OPT-LABEL: pto.kernel @rope
// OPT:         name "rope_LoopUnroll3"
// OPT:         name "rope_LoopUnroll1"
// OPT-LABEL: pto.kernel @state
// OPT:         unroll [4, 1]

// The body holds 11 ops: 8 copies (88) exceed the cap of 44, 4 copies (44) do not.
// CAP-LABEL: pto.kernel @rope
// CAP-NOT:     LoopUnroll8
// CAP:         name "rope_LoopUnroll4"
// CAP:         name "rope_LoopUnroll1"
pto.kernel @rope(%x: memref<13x64xf32>, %cos: memref<13x64xf32>, %sin: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.set_vec_tile_shapes [1, 64]
  pto.loop %s = %c0 to %c13 step %c1 name "rope" idx_name "s" unroll [8, 4, 2, 1] {
    %xt = pto.view %x[%s, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %ct = pto.view %cos[%s, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %st = pto.view %sin[%s, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %x1 = pto.view %xt[0, 0] : tensor<1x64xf32> -> tensor<1x32xf32>
    %x2 = pto.view %xt[0, 32] : tensor<1x64xf32> -> tensor<1x32xf32>
    %n2 = pto.neg %x2 : tensor<1x32xf32>
    %rot = pto.concat dim 1, %n2, %x1 : tensor<1x32xf32>, tensor<1x32xf32> -> tensor<1x64xf32>
    %a = pto.mul %xt, %ct : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
    %b = pto.mul %rot, %st : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
    %r = pto.add %a, %b : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
    pto.assemble %r into %out[%s, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}

// Loop state keeps referring to the original loop. Static bounds: the first copy of the
// first chunk loop asks that loop's is_loop_begin, every other copy is false; the last
// copy of the last chunk loop asks is_loop_end.
// CHECK-LABEL: pto.kernel @state
// CHECK:         pto.loop %[[A:.*]] = {{.*}} name "acc_LoopUnroll4"
// CHECK-NEXT:      arith.constant 1 : index
// CHECK-NEXT:      arith.constant 2 : index
// CHECK-NEXT:      arith.constant 3 : index
// CHECK-NEXT:      pto.is_loop_begin %[[A]]
// CHECK-NEXT:      arith.constant false
// CHECK-NOT:       pto.is_loop_end
// CHECK:         pto.loop %[[B:.*]] = {{.*}} name "acc_LoopUnroll1"
// CHECK-NEXT:      arith.constant false
// CHECK-NEXT:      pto.is_loop_end %[[B]]
pto.kernel @state(%x: memref<6x8xf32>, %out: memref<1x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %ws = pto.tensor "acc" : memref<1x8xf32>
  pto.loop %i = %c0 to %c5 step %c1 name "acc" unroll [4, 1] {
    %b = pto.is_loop_begin %i
    %e = pto.is_loop_end %i
    %t = pto.view %x[%i, 0] : memref<6x8xf32> -> tensor<1x8xf32>
    scf.if %b {
      pto.assemble %t into %ws[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
    } else {
      %a = pto.view %ws[0, 0] : memref<1x8xf32> -> tensor<1x8xf32>
      %s = pto.add %a, %t : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
      pto.assemble %s into %ws[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
    }
    scf.if %e {
      %a = pto.view %ws[0, 0] : memref<1x8xf32> -> tensor<1x8xf32>
      pto.assemble %a into %out[0, 0] : tensor<1x8xf32>, memref<1x8xf32>
    }
  }
}

// Dynamic bounds: trip = max(ceildiv(ub - lb, step), 0); each factor but 1 takes
// floordiv(rest, f) chunks; the chunk of 1 runs to the original bound. Loop state
// becomes index comparisons.
// CHECK-LABEL: pto.kernel @dyn
// CHECK:         %[[S:.*]] = memref.dim %x, %{{.*}} : memref<?x8xf32>
// CHECK:         %[[SPAN:.*]] = arith.subi %[[S]], %[[LB:.*]] : index
// CHECK-NEXT:    %[[T:.*]] = arith.ceildivsi %[[SPAN]], %{{.*}} : index
// CHECK-NEXT:    %[[TRIP:.*]] = arith.maxsi %[[T]], %{{.*}} : index
// CHECK:         %[[N:.*]] = arith.floordivsi %[[TRIP]], %{{.*}} : index
// CHECK:         %[[END:.*]] = arith.addi %[[LB]], %{{.*}} : index
// CHECK:         pto.loop %[[J:.*]] = %[[LB]] to %[[END]] step %{{.*}} name "d_LoopUnroll2" {
// CHECK:           arith.cmpi eq, %[[J]], %[[LB]] : index
// CHECK:           %[[J1:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:           arith.cmpi eq, %[[J1]], %[[LB]] : index
// CHECK:         pto.loop %{{.*}} = %[[END]] to %[[S]] step %{{.*}} name "d_LoopUnroll1" {
pto.kernel @dyn(%x: memref<?x8xf32>, %out: memref<?x8xf32>) attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %S = memref.dim %x, %c0 : memref<?x8xf32>
  pto.loop %i = %c1 to %S step %c2 name "d" unroll [2, 1] {
    %b = pto.is_loop_begin %i
    %t = pto.view %x[%i, 0] : memref<?x8xf32> -> tensor<1x8xf32>
    scf.if %b {
      pto.assemble %t into %out[0, 0] : tensor<1x8xf32>, memref<?x8xf32>
    }
    pto.assemble %t into %out[%i, 0] : tensor<1x8xf32>, memref<?x8xf32>
  }
}

// SK-03 (seed 002) with pypto.loop_unroll over 21 tokens, [8, 4, 2, 1]:
// 21 = 2 x 8 + 4 + 1. Each chunk loop holds the body once, with the chunk length a
// constant (the tile's row count).
// SK03-LABEL: pto.kernel @linear_projection_kernel
// SK03-NOT:     pto.loop_unroll
// SK03:         arith.constant 21 : index
// SK03-NEXT:    arith.constant 1 : index
// SK03-NEXT:    %[[LB8:.*]] = arith.constant 0 : index
// SK03-NEXT:    %[[UB8:.*]] = arith.constant 16 : index
// SK03-NEXT:    %[[ST8:.*]] = arith.constant 8 : index
// SK03:         pto.loop %[[T:.*]] = %[[LB8]] to %[[UB8]] step %[[ST8]] name "LOOP_TOKEN_LoopUnroll8" idx_name "t_idx" {
// SK03-NEXT:      %[[N8:.*]] = arith.constant 8 : index
// SK03:           pto.view %x[%[[T]], 0] sizes(%[[N8]]) : memref<21x64xbf16> -> tensor<?x64xbf16>
// SK03:           pto.matmul
// SK03:         name "LOOP_TOKEN_LoopUnroll4"
// SK03-NEXT:      arith.constant 4 : index
// SK03-NOT:     LOOP_TOKEN_LoopUnroll2
// SK03:         name "LOOP_TOKEN_LoopUnroll1"
// SK03-NEXT:      arith.constant 1 : index
