// RUN: tileir-opt %s -p inplace-reshape | filecheck %s
// RUN: tileir-opt %s -p inplace-reshape,inplace-reshape | filecheck %s
// RUN: tileir-opt %s -p vc-split,semantic-labels,inplace-reshape | filecheck %s
// RUN: tileir-opt %s -p 'inplace-reshape{report=true}' -o /dev/null 2>&1 | filecheck --check-prefix=REPORT %s

// A computed, full tile that nothing reads after the reshape: no data move needed.
// CHECK-LABEL: pto.kernel @dead_input
// CHECK:         pto.reshape %{{.*}} inplace : tensor<8x64xf32> -> tensor<512xf32>
// REPORT: inplace-reshape: @dead_input: marked 1
pto.kernel @dead_input(%x: memref<8x64xf32>, %out: memref<512xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %y = pto.exp %t : tensor<8x64xf32>
  %r = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>
  %z = pto.neg %r : tensor<512xf32>
  pto.assemble %z into %out[0] : tensor<512xf32>, memref<512xf32>
}

// Left alone: the input is a view (PyPTO rule), is read again later, or is the tile
// made by the previous trip of the loop that runs the reshape.
// CHECK-LABEL: pto.kernel @live_or_view
// CHECK:         %[[A:.*]] = pto.reshape %t : tensor<8x64xf32> -> tensor<512xf32>
// CHECK:         %[[B:.*]] = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>
// CHECK:         pto.loop
// CHECK:           pto.reshape %e : tensor<8x64xf32> -> tensor<512xf32>
// CHECK:           pto.reshape %{{.*}} inplace : tensor<8x64xf32> -> tensor<512xf32>
// REPORT: inplace-reshape: @live_or_view: marked 1 (left alone: 1 input made by pto.view, 2 input used afterwards)
pto.kernel @live_or_view(%x: memref<8x64xf32>, %out: memref<512xf32>, %o2: memref<8x64xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %a = pto.reshape %t : tensor<8x64xf32> -> tensor<512xf32>
  %y = pto.exp %t : tensor<8x64xf32>
  %b = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>
  %s = pto.add %a, %b : tensor<512xf32>, tensor<512xf32> -> tensor<512xf32>
  pto.assemble %s into %out[0] : tensor<512xf32>, memref<512xf32>
  pto.assemble %y into %o2[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
  %e = pto.abs %t : tensor<8x64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 {
    %r = pto.reshape %e : tensor<8x64xf32> -> tensor<512xf32>
    %u = pto.neg %e : tensor<8x64xf32>
    %ru = pto.reshape %u : tensor<8x64xf32> -> tensor<512xf32>
    %q = pto.add %r, %ru : tensor<512xf32>, tensor<512xf32> -> tensor<512xf32>
    pto.assemble %q into %out[0] : tensor<512xf32>, memref<512xf32>
  }
}

// A one-trip loop does not run the reshape again, and a use inside an `scf.if` that
// comes before the reshape is over when the reshape runs.
// CHECK-LABEL: pto.kernel @one_trip_and_if
// CHECK:         pto.loop
// CHECK:           pto.reshape %e inplace
// REPORT: inplace-reshape: @one_trip_and_if: marked 1
pto.kernel @one_trip_and_if(%x: memref<8x64xf32>, %out: memref<512xf32>, %o2: memref<8x64xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %e = pto.abs %t : tensor<8x64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  pto.loop %i = %c0 to %c1 step %c1 {
    %first = pto.is_loop_begin %i
    scf.if %first {
      pto.assemble %e into %o2[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
    }
    %r = pto.reshape %e : tensor<8x64xf32> -> tensor<512xf32>
    %n = pto.neg %r : tensor<512xf32>
    pto.assemble %n into %out[0] : tensor<512xf32>, memref<512xf32>
  }
}

// Left alone: a tail tile (its `valid` region reaches the reshape through exp), a
// reshape with its own `valid` list, and a result written straight into a kernel
// argument (an inplace reshape's output cannot be a function output).
// CHECK-LABEL: pto.kernel @tails_and_outputs
// CHECK-NOT:     inplace
// CHECK:         }
// REPORT: inplace-reshape: @tails_and_outputs: marked 0 (left alone: 1 has a valid list, 1 input may be a tail tile, 1 result is a kernel output)
pto.kernel @tails_and_outputs(%x: memref<13x64xf32>, %out: memref<512xf32>, %o3: memref<8x64xf32>) {
  %c5 = arith.constant 5 : index
  %t = pto.view %x[8, 0] valid [%c5, 64] : memref<13x64xf32> -> tensor<8x64xf32>
  %y = pto.exp %t : tensor<8x64xf32>
  %r = pto.reshape %y : tensor<8x64xf32> -> tensor<512xf32>
  %rn = pto.neg %r : tensor<512xf32>
  pto.assemble %rn into %out[0] : tensor<512xf32>, memref<512xf32>
  %f = pto.view %x[0, 0] : memref<13x64xf32> -> tensor<8x64xf32>
  %g = pto.exp %f : tensor<8x64xf32>
  %h = pto.reshape %g valid [%c5, 64] : tensor<8x64xf32> -> tensor<8x64xf32>
  %hn = pto.neg %h : tensor<8x64xf32>
  pto.assemble %hn into %o3[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
  %k = pto.view %x[0, 0] : memref<13x64xf32> -> tensor<8x64xf32>
  %m = pto.exp %k : tensor<8x64xf32>
  %n = pto.reshape %m : tensor<8x64xf32> -> tensor<512xf32>
  pto.assemble %n into %out[0] : tensor<512xf32>, memref<512xf32>
}
