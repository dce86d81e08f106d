// RUN: tileir-opt %s -p loop-fusion | filecheck %s
// RUN: tileir-opt %s -p loop-fusion | %roundtrip | filecheck %s

// Two independent row loops over the same range (bounds equal constants): one loop,
// named after the first, body 1 then body 2 on the first loop's index; the scalar
// between them moves in front.
// CHECK-LABEL: pto.kernel @fuse
// CHECK:         %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         pto.loop %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name "first" idx_name "i" {
// CHECK-NEXT:      %[[T:.*]] = pto.view %x[%[[I]], 0]
// CHECK-NEXT:      %[[E:.*]] = pto.exp %[[T]]
// CHECK-NEXT:      pto.assemble %[[E]] into %out1[%[[I]], 0]
// CHECK-NEXT:      %[[U:.*]] = pto.view %x[%[[I]], 0]
// CHECK-NEXT:      %[[M:.*]] = pto.mul %[[U]], %[[TWO]]
// CHECK-NEXT:      pto.assemble %[[M]] into %out2[%[[I]], 0]
// CHECK-NEXT:    }
// CHECK-NOT:     pto.loop
// CHECK-NOT:     "second"
pto.kernel @fuse(%x: memref<4x8xf32>, %out1: memref<4x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 name "first" idx_name "i" {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %e = pto.exp %t : tensor<1x8xf32>
    pto.assemble %e into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
  %two = arith.constant 2.0 : f32
  %n = arith.constant 4 : index
  pto.loop %j = %c0 to %n step %c1 name "second" idx_name "j" {
    %u = pto.view %x[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %m = pto.mul %u, %two : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    pto.assemble %m into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}

// Read after write across the loops: the second loop reads what the first writes.
// CHECK-LABEL: pto.kernel @raw
// CHECK:         name "first"
// CHECK:         name "second"
pto.kernel @raw(%x: memref<4x8xf32>, %out1: memref<4x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 name "first" {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
  pto.loop %j = %c0 to %c4 step %c1 name "second" {
    %u = pto.view %out1[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %u into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}

// Different upper bounds.
// CHECK-LABEL: pto.kernel @bounds
// CHECK:         name "first"
// CHECK:         name "second"
pto.kernel @bounds(%x: memref<4x8xf32>, %out1: memref<4x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 name "first" {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
  pto.loop %j = %c0 to %c3 step %c1 name "second" {
    %u = pto.view %x[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %u into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}

// `parallel` survives fusion only when both loops had it: B's iterations may depend on
// each other when B is not marked, and every fused iteration runs one of them.
// CHECK-LABEL: pto.kernel @parallel_both
// CHECK:         pto.loop %{{.*}} name "first" parallel {
// CHECK-NOT:     pto.loop
// CHECK-LABEL: pto.kernel @parallel_one
// CHECK:         pto.loop %{{.*}} name "first" {
// CHECK-NOT:     pto.loop
pto.kernel @parallel_both(%x: memref<4x8xf32>, %out1: memref<4x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 name "first" parallel {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
  pto.loop %j = %c0 to %c4 step %c1 name "second" parallel {
    %u = pto.view %x[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %u into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}
pto.kernel @parallel_one(%x: memref<4x8xf32>, %out1: memref<4x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.loop %i = %c0 to %c4 step %c1 name "first" parallel {
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %t into %out1[%i, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
  pto.loop %j = %c0 to %c4 step %c1 name "second" {
    %u = pto.view %x[%j, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %u into %out2[%j, 0] : tensor<1x8xf32>, memref<4x8xf32>
  }
}
