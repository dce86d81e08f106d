"""A test file in the PyPTO-Gym style (written for tileir's tests): an int `device`
from the conftest, tensors made with `device=<int>` after `torch.npu.set_device`, a
torch golden, `assert_allclose` with the case's tolerances, a 950-only case."""

import pytest
import torch
import torch_npu  # noqa: F401
from column_stats_impl import column_stats
from numpy.testing import assert_allclose

CASES = [((64, 24, 1), 1e-4), ((40, 8, 3), 1e-4)]


def _check(device, shape, tol):
    torch.npu.set_device(device)
    x = torch.rand(shape, dtype=torch.float32, device=device)
    total, squares = column_stats(x)
    torch.npu.synchronize()
    golden_total = torch.sum(x, dim=(0, 2)).reshape(1, -1, 1, 1)
    golden_squares = torch.sum(x * x, dim=(0, 2)).reshape(1, -1, 1, 1)
    assert_allclose(total.cpu().numpy(), golden_total.numpy(), rtol=tol, atol=tol)
    assert_allclose(squares.cpu().numpy(), golden_squares.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,tol", CASES)
def test_column_stats(device, shape, tol):
    _check(device, shape, tol)


@pytest.mark.soc("950")
def test_column_stats_950(device):
    _check(device, (8, 8, 1), 1e-4)
