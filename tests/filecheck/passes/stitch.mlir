// RUN: tileir-opt %s -p 'loop-unroll,canonicalize,cse,stitch{max-functions=2}' | filecheck %s
// RUN: tileir-opt %s -p 'loop-unroll,canonicalize,cse,stitch{max-functions=2}' | %roundtrip | filecheck %s
// RUN: tileir-opt %s -p 'loop-unroll,stitch{max-functions=3}' | filecheck --check-prefix=N3 %s
// RUN: tileir-opt %s -p 'loop-unroll,stitch{max-functions=3 report=true}' -o /dev/null 2>&1 | filecheck --check-prefix=REPORT %s
// RUN: tileir-opt %s -p 'loop-unroll,stitch{interleave=false max-functions=8}' | filecheck --check-prefix=GROUPONLY %s
// RUN: not tileir-opt %s -p 'loop-unroll,stitch{max-functions=0}' 2>&1 | filecheck --check-prefix=BAD %s

// BAD: stitch: option max-functions=0 must be in 1..1024

// Rows: 8 -> 3 + 3 + 2 and 4 -> 3 + 1; softmax: one chunk of 2. A row iteration makes
// two 1x64 f32 tiles (512 B), the largest slot; workspace = 512 x (3 + 1) x 1.
// REPORT: stitch: 6 groups, sizes [3, 3, 2, 3, 1, 2], max_functions 3, workspace 512 B/slot x (3 + 1) x 1 = 2048 B

// 13 rows, unroll [8, 4, 2, 1]: groups of at most 3 iterations.
// N3-LABEL: pto.kernel @rows
// N3-SAME:    jit_options = {runtime_options = {stitch_function_max_num = 3 : i64}}
// N3:         name "rows_LoopUnroll8"
// N3:           pto.stitch size 3 max 3 {
// N3:           pto.stitch size 3 max 3 {
// N3:           pto.stitch size 2 max 3 {
// N3:         name "rows_LoopUnroll4"
// N3:           pto.stitch size 3 max 3 {
// N3:           pto.stitch size 1 max 3 {
// The remainder loop holds one iteration: nothing to group.
// N3:         name "rows_LoopUnroll1"
// N3-NOT:       pto.stitch
// N3:       pto.kernel @online_softmax

// Iterations are interleaved where nothing orders them: the next row's read moves
// above this row's write (rows are disjoint windows of %x and %out).
// CHECK-LABEL: pto.kernel @rows
// CHECK:         name "rows_LoopUnroll8"
// CHECK-NEXT:      arith.constant
// CHECK:           pto.stitch size 2 max 2 {
// CHECK-NEXT:        %[[T0:.*]] = pto.view %x[%[[I:.*]], 0]
// CHECK-NEXT:        %[[R0:.*]] = pto.exp %[[T0]]
// CHECK-NEXT:        %[[I1:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK-NEXT:        pto.assemble %[[R0]] into %out[%[[I]], 0]
// CHECK-NEXT:        %[[T1:.*]] = pto.view %x[%[[I1]], 0]
// CHECK-NEXT:        %[[R1:.*]] = pto.exp %[[T1]]
// CHECK-NEXT:        pto.assemble %[[R1]] into %out[%[[I1]], 0]
// CHECK-NEXT:        pto.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      pto.stitch size 2 max 2 {
pto.kernel @rows(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.set_vec_tile_shapes [1, 64]
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [8, 4, 2, 1] {
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %r = pto.exp %t : tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}

// Online softmax: the running max %m_ws and running sum %l_ws are loop-carried state.
// Iteration 1's independent work (its row view and amax) moves up, but each read of
// the state stays after the previous iteration's write of it.
// CHECK-LABEL: pto.kernel @online_softmax
// CHECK:         name "kv_LoopUnroll2"
// CHECK:           pto.stitch size 2 max 2 {
// CHECK:             %[[M0:.*]] = pto.view %m_ws[0, 0]
// CHECK:             %[[T1:.*]] = pto.view %s[%{{.*}}, 0]
// CHECK:             pto.amax %[[T1]]
// CHECK:             pto.view %l_ws[0, 0]
// CHECK:             pto.assemble %{{.*}} into %m_ws[0, 0]
// CHECK-NEXT:        pto.view %m_ws[0, 0]
// CHECK:             pto.assemble %{{.*}} into %l_ws[0, 0]
// CHECK-NEXT:        pto.view %l_ws[0, 0]
// CHECK:             pto.assemble %{{.*}} into %m_ws[0, 0]
// CHECK-NEXT:        pto.assemble %{{.*}} into %l_ws[0, 0]
// CHECK-NEXT:        pto.yield
// CHECK:         name "kv_LoopUnroll1"
// CHECK-NOT:       pto.stitch

// Grouping without interleaving keeps the program order inside each group.
// GROUPONLY-LABEL: pto.kernel @online_softmax
// GROUPONLY:         pto.stitch size 2 max 8 {
// GROUPONLY-NEXT:      pto.view %s
// GROUPONLY-NEXT:      pto.view %m_ws
// GROUPONLY-NEXT:      pto.amax
pto.kernel @online_softmax(%s: memref<5x16xf32>, %out: memref<1x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %lo = arith.constant -1.0e30 : f32
  %zero = arith.constant 0.0 : f32
  %m_init = pto.full %lo : f32 -> tensor<1x1xf32>
  %l_init = pto.full %zero : f32 -> tensor<1x1xf32>
  %m_ws = pto.tensor "m" : memref<1x1xf32>
  %l_ws = pto.tensor "l" : memref<1x1xf32>
  pto.assemble %m_init into %m_ws[0, 0] : tensor<1x1xf32>, memref<1x1xf32>
  pto.assemble %l_init into %l_ws[0, 0] : tensor<1x1xf32>, memref<1x1xf32>
  pto.set_vec_tile_shapes [1, 16]
  pto.loop %i = %c0 to %c5 step %c1 name "kv" idx_name "i" unroll [2, 1] {
    %t = pto.view %s[%i, 0] : memref<5x16xf32> -> tensor<1x16xf32>
    %m_old = pto.view %m_ws[0, 0] : memref<1x1xf32> -> tensor<1x1xf32>
    %m_t = pto.amax %t, -1 keepdim : tensor<1x16xf32> -> tensor<1x1xf32>
    %m_new = pto.maximum %m_old, %m_t : tensor<1x1xf32>, tensor<1x1xf32> -> tensor<1x1xf32>
    %d = pto.sub %m_old, %m_new : tensor<1x1xf32>, tensor<1x1xf32> -> tensor<1x1xf32>
    %alpha = pto.exp %d : tensor<1x1xf32>
    %z = pto.sub %t, %m_new : tensor<1x16xf32>, tensor<1x1xf32> -> tensor<1x16xf32>
    %p = pto.exp %z : tensor<1x16xf32>
    %ps = pto.sum %p, -1 keepdim : tensor<1x16xf32> -> tensor<1x1xf32>
    %l_old = pto.view %l_ws[0, 0] : memref<1x1xf32> -> tensor<1x1xf32>
    %l_a = pto.mul %l_old, %alpha : tensor<1x1xf32>, tensor<1x1xf32> -> tensor<1x1xf32>
    %l_new = pto.add %l_a, %ps : tensor<1x1xf32>, tensor<1x1xf32> -> tensor<1x1xf32>
    pto.assemble %m_new into %m_ws[0, 0] : tensor<1x1xf32>, memref<1x1xf32>
    pto.assemble %l_new into %l_ws[0, 0] : tensor<1x1xf32>, memref<1x1xf32>
  }
  %l = pto.view %l_ws[0, 0] : memref<1x1xf32> -> tensor<1x1xf32>
  pto.assemble %l into %out[0, 0] : tensor<1x1xf32>, memref<1x1xf32>
}
