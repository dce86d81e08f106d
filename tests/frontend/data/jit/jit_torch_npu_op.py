"""A kernel file that registers its host wrapper as a torch op for the NPU at import."""

import pypto
import torch

lib = torch.library.Library("tileir_test_npu_op", "FRAGMENT")
lib.define("double(Tensor x) -> Tensor")


@pypto.frontend.jit
def double_kernel(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 8)
    y[:] = x + x


@torch.library.impl(lib, "double", "Meta")
def double_meta(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.impl(lib, "double", "NPU")
def double_npu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    double_kernel(x, y)
    return y
