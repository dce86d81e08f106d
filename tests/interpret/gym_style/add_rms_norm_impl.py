"""A kernel file in the PyPTO-Gym style (written for tileir's tests): a jit kernel that
writes its outputs into tensors the caller allocates, and a host wrapper that allocates
them on the input's device and calls it.

`y = (x + residual) * rsqrt(mean((x + residual)^2) + eps) * gamma`, and `x + residual`
itself, both bf16; rows `T` at a time, the last tile a tail. The row count is
`pypto.DYNAMIC` (bound at run time), the hidden size `pypto.STATIC` (from the call), and
`eps` a scalar parameter without a default.
"""

import pypto
import torch

T = 4


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def add_rms_norm_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_BF16),
    residual: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_BF16),
    gamma: pypto.Tensor([1, pypto.STATIC], pypto.DT_BF16),
    y: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_BF16),
    x_sum: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_BF16),
    eps: float,
):
    rows = x.shape[0]
    H = x.shape[1]
    pypto.set_vec_tile_shapes(1, H)
    g = pypto.cast(pypto.view(gamma, [1, H], [0, 0]), pypto.DT_FP32)
    for i in pypto.loop((rows + T - 1) // T, name="rows", idx_name="i"):
        cur = pypto.min(rows, (i + 1) * T) - i * T
        pypto.set_vec_tile_shapes(T, H)
        a = pypto.cast(pypto.view(x, [T, H], [i * T, 0], valid_shape=[cur, H]), pypto.DT_FP32)
        b = pypto.cast(
            pypto.view(residual, [T, H], [i * T, 0], valid_shape=[cur, H]), pypto.DT_FP32
        )
        s = pypto.add(a, b)
        ms = pypto.mul(pypto.sum(pypto.mul(s, s), dim=-1, keepdim=True), 1.0 / H)
        r = pypto.rsqrt(pypto.add(ms, eps))
        out = pypto.mul(pypto.mul(s, r), g)
        pypto.assemble(pypto.cast(out, pypto.DT_BF16, mode=pypto.CastMode.CAST_RINT), [i * T, 0], y)
        pypto.assemble(
            pypto.cast(s, pypto.DT_BF16, mode=pypto.CastMode.CAST_RINT), [i * T, 0], x_sum
        )


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, gamma: torch.Tensor, eps=1e-6):
    """The host wrapper: outputs allocated on the inputs' device, written by the kernel."""
    y = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    x_sum = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    add_rms_norm_kernel(x, residual, gamma.reshape(1, -1), y, x_sum, eps)
    return y, x_sum
