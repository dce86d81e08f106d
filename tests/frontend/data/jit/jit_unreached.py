"""A kernel made only when a wrapper runs: nothing to read at import."""

import pypto


def run_scaled(x, out):
    @pypto.frontend.jit
    def scaled(a: pypto.Tensor([4, 4], pypto.DT_FP32), b: pypto.Tensor([4, 4], pypto.DT_FP32)):
        b[:] = a * 2.0

    scaled(x, out)
