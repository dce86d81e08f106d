// A stage that lost its label, and an op left outside every stage, in a kernel that
// semantic-labels has seen, are reported by `semantic-labels{check=true}`.
// RUN: not tileir-opt %s -p 'semantic-labels{check=true}' 2>&1 | filecheck %s
// CHECK: error: semantic labels lost:
// CHECK-NEXT: {{.*}}semantic_labels_check.mlir:16:3: a vector stage in @lost has no semantic label
// CHECK-NEXT: {{.*}}semantic_labels_check.mlir:20:3: 'pto.neg' in @lost is outside every stage, so it has lost its semantic label

// vc-split stages the loose op and semantic-labels labels every stage: the check passes.
// RUN: tileir-opt %s -p vc-split,semantic-labels,semantic-labels{check=true} -o /dev/null

pto.kernel @lost(%x: memref<8x8xf32>, %out: memref<8x8xf32>) attributes {labelled} {
  %t = pto.stage vector label "copy" {
    %v = pto.view %x[0, 0] : memref<8x8xf32> -> tensor<8x8xf32>
    pto.yield %v : tensor<8x8xf32>
  } -> tensor<8x8xf32>
  %e = pto.stage vector {
    %a = pto.exp %t : tensor<8x8xf32>
    pto.yield %a : tensor<8x8xf32>
  } -> tensor<8x8xf32>
  %n = pto.neg %e : tensor<8x8xf32>
  pto.stage vector label "copy-2" {
    pto.assemble %n into %out[0, 0] : tensor<8x8xf32>, memref<8x8xf32>
    pto.yield
  }
}
