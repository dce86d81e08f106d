# RUN: tileir-opt %s | filecheck %s
# `if pypto.is_loop_begin(i)` becomes scf.if; tiles assigned in both branches are its
# results, memory writes inside the branches stay there, and a workspace read where a
# tile is expected is a whole pto.view.

import pypto

ROWS = 4
BLOCK = 8


# CHECK-LABEL: pto.kernel @running_max
# CHECK:         %acc = pto.tensor "acc" : memref<4x1xf32>
# CHECK:         pto.loop %j = {{.*}} name "blocks" idx_name "j" unroll [1] {
# CHECK:           %m = pto.amax %blk, -1 keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
# CHECK-NEXT:      %[[FIRST:.*]] = pto.is_loop_begin %j
# CHECK-NEXT:      %best = scf.if %[[FIRST]] -> (tensor<4x1xf32>) {
# CHECK-NEXT:        scf.yield %m : tensor<4x1xf32>
# CHECK-NEXT:      } else {
# CHECK-NEXT:        %[[OLD:.*]] = pto.view %acc[0, 0] : memref<4x1xf32> -> tensor<4x1xf32>
# CHECK-NEXT:        %[[NEW:.*]] = pto.maximum %[[OLD]], %m : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
# CHECK-NEXT:        scf.yield %[[NEW]] : tensor<4x1xf32>
# CHECK-NEXT:      }
# CHECK-NEXT:      pto.assemble %best into %acc[0, 0] : tensor<4x1xf32>, memref<4x1xf32>
# CHECK-NEXT:      %[[LAST:.*]] = pto.is_loop_end %j
# CHECK-NEXT:      scf.if %[[LAST]] {
# CHECK-NEXT:        pto.assemble %best into %out[0, 0] : tensor<4x1xf32>, memref<4x1xf32>
# CHECK-NEXT:      }
# CHECK-NEXT:    }
@pypto.frontend.jit
def running_max(
    x: pypto.Tensor([ROWS, 32], pypto.DT_FP32),
    out: pypto.Tensor([ROWS, 1], pypto.DT_FP32),
):
    acc = pypto.tensor([ROWS, 1], pypto.DT_FP32, "acc")
    for j in pypto.loop(32 // BLOCK, name="blocks", idx_name="j", unroll_list=[1]):
        blk = pypto.view(x, [ROWS, BLOCK], [0, j * BLOCK])
        m = pypto.amax(blk, -1, keepdim=True)
        if pypto.is_loop_begin(j):
            best = m
        else:
            best = pypto.maximum(acc, m)
        acc[:] = best
        if pypto.is_loop_end(j):
            out[:] = best
