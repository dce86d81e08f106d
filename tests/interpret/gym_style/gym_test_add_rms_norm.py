"""A test file in the PyPTO-Gym style (written for tileir's tests): NPU device calls,
inputs moved to the device, a torch golden, a compare() with tolerances, test
functions that take `device` and return whether they passed, and a `main()`."""

import os
import sys

import numpy as np
import pypto
import torch
import torch_npu  # noqa: F401  (the NPU back end of torch)
from add_rms_norm_impl import add_rms_norm

ATOL, RTOL = 1e-2, 1e-2


def _device() -> str:
    device_id = int(os.environ.get("TILE_FWK_DEVICE_ID", "0"))
    torch.npu.set_device(device_id)
    return f"npu:{device_id}"


def golden(x, residual, gamma, eps=1e-6):
    s = x.float() + residual.float()
    rstd = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps)
    return (s * rstd * gamma.float()).to(torch.bfloat16), s.to(torch.bfloat16)


def compare(actual, expected, name):
    a, e = actual.cpu().float().numpy(), expected.float().numpy()
    ok = np.allclose(a, e, atol=ATOL, rtol=RTOL)
    print(f"  [{name}] max_abs={np.abs(a - e).max():.3e} {'PASS' if ok else 'FAIL'}")
    return ok


def _run(rows, device):
    torch.manual_seed(rows)
    x = torch.randn(rows, 64).to(torch.bfloat16).to(device)
    residual = torch.randn(rows, 64).to(torch.bfloat16).npu()
    gamma = torch.randn(64, dtype=torch.float32).to(torch.bfloat16).to(device)
    y_ref, s_ref = golden(x.cpu(), residual.cpu(), gamma.cpu())
    y, x_sum = add_rms_norm(x, residual, gamma)
    pypto.runtime._device_synchronize()
    torch.npu.synchronize()
    return compare(y, y_ref, "y") and compare(x_sum, s_ref, "x_sum")


def test_level0(device):
    return _run(13, device)


def test_level1(device):
    return _run(32, device)


def main() -> int:
    device = _device()
    ok = all(runner(device) for runner in (test_level0, test_level1))
    print("[PRECISION_PASS]" if ok else "[PRECISION_FAIL]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
