"""Every seed kernel, read by the PyPTO frontend, run on the numpy back end: equal to its
independent numpy golden within the kernel's tolerance, and batched loops give the bits
of the iteration-by-iteration run."""

from __future__ import annotations

import numpy as np
import pytest

import frontends.kernels as kernels
import frontends.pypto as frontend
from tileir.backends.numpy import compile_kernel


@pytest.mark.parametrize("seed_kernel", kernels.SEED_KERNELS, ids=lambda k: k.name)
def test_seed_kernel_matches_golden(seed_kernel):
    module = frontend.load_file(seed_kernel.path)
    inputs = seed_kernel.make_inputs(np.random.default_rng(0))
    expected = seed_kernel.golden(inputs)
    got = compile_kernel(module, seed_kernel.kernel)(inputs)
    sequential = compile_kernel(module, seed_kernel.kernel, vectorize=False)(inputs)
    atol, rtol = seed_kernel.tolerance
    for name, want in expected.items():
        assert got[name].dtype == want.dtype
        assert got[name].tobytes() == sequential[name].tobytes()
        np.testing.assert_allclose(
            got[name].astype(np.float64), want.astype(np.float64), atol=atol, rtol=rtol
        )
