# RUN: not tileir-opt %s 2>&1 | filecheck %s
# An unsupported construct is one located diagnostic, with the source line and a caret.

import pypto


# CHECK: errors.py:16:9: error: pypto.matmul extend_params key 'scale_tensor' is not supported (supported: 'bias_tensor', 'scale', 'relu_type', 'trans_mode')
# CHECK-NEXT: 16 |     y = pypto.matmul(x, w, pypto.DT_FP32, extend_params={"scale_tensor": w})
# CHECK-NEXT:    |         ^
# CHECK-NOT: Traceback
@pypto.frontend.jit
def bad(
    x: pypto.Tensor([16, 16], pypto.DT_BF16),
    w: pypto.Tensor([16, 16], pypto.DT_BF16),
):
    y = pypto.matmul(x, w, pypto.DT_FP32, extend_params={"scale_tensor": w})
