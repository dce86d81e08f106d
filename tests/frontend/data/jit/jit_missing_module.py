"""Imports a module that is not installed."""

import pypto
import tileir_no_such_module  # noqa: F401


@pypto.frontend.jit
def k(a: pypto.Tensor([4, 4], pypto.DT_FP32), b: pypto.Tensor([4, 4], pypto.DT_FP32)):
    b[:] = a
