# RUN: tileir-opt %s | filecheck %s
# RUN: tileir-opt %s -t pypto | filecheck %s --check-prefix=PY
# `t.valid_shape` is read into the values PyPTO's valid shape stands for (a view's own
# valid operands, a clamp of a window, a workspace's sizes), and `pypto.tensor` with
# run-time sizes is `pto.tensor ... sizes(...)` with a `?` per run-time size.

import pypto

L = 4


# CHECK-LABEL: pto.kernel @tail_rows
# CHECK:         %[[N:.*]] = memref.dim %x, %{{.*}} : memref<?x16xf32>
# CHECK:         %rows = pto.tensor "rows" sizes(%[[N]]) : memref<?x16xf32>
# CHECK:         pto.loop %i = %{{.*}} to %[[N]] step %{{.*}} name "L" idx_name "i" {
# CHECK:           %cur = arith.minsi %{{.*}}, %{{.*}} : index
# CHECK:           %v = pto.view %x[%i, 0] valid [%cur, 16] : memref<?x16xf32> -> tensor<4x16xf32>
# CHECK-NEXT:      %e = pto.exp %v : tensor<4x16xf32>
# CHECK:           %[[LAST:.*]] = arith.subi %cur, %{{.*}} : index
# CHECK-NEXT:      %{{.*}} = pto.view %e[%[[LAST]], 0] : tensor<4x16xf32> -> tensor<1x16xf32>
# CHECK:           pto.assemble %{{.*}} into %rows[%i, 0] : tensor<4x16xf32>, memref<?x16xf32>
# CHECK:           %[[REST:.*]] = arith.subi %[[N]], %i : index
# CHECK-NEXT:      %[[IN:.*]] = arith.minsi %[[REST]], %{{.*}} : index
# CHECK-NEXT:      %whole = arith.maxsi %[[IN]], %{{.*}} : index
# PY:            rows = pypto.tensor([x.shape[0], 16], pypto.DT_FP32, "rows")
# PY:            last = pypto.view(e, [1, 16], [{{.*}}, 0])
@pypto.frontend.jit
def tail_rows(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
):
    n = x.shape[0]
    rows = pypto.tensor([n, 16], pypto.DT_FP32, "rows")
    for i in pypto.loop(0, n, L, name="L", idx_name="i"):
        cur = (n - i).min(L)
        pypto.set_vec_tile_shapes(L, 16)
        v = pypto.view(x, [L, 16], [i, 0], valid_shape=[cur, 16])
        e = v.exp()
        k = e.valid_shape[0]
        last = e[k - 1 : k, :]
        rows[i:, 0:] = e - last
        whole = x[i : i + L, :].valid_shape[0]
        out[i:, 0:] = pypto.view(rows, [L, 16], [i, 0], valid_shape=[whole.min(cur), 16])
