"""Coarsened seed kernels computed by PyPTO 0.2.0's own pass-verify interpreter meet the
seed's independent numpy golden within its tolerance: the blocks, tails and scaled tile
shapes `coarsen` writes mean the same thing to PyPTO as to tileir's numpy back end.
Factors: 2 (a tail block) and the trip count (the whole loop in one block)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from frontends.kernels import kernel_by_name
from frontends.pypto import load_file
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, run_kernel
from tileir.passes import apply_pipeline

pytestmark = pytest.mark.pypto

CASES = [("gelu_tanh", 2), ("rope_rotate_half", 3), ("linear_bias", 2), ("moe_routing_softmax", 3)]


@pytest.mark.parametrize("name, factor", CASES, ids=[f"{n}-x{k}" for n, k in CASES])
def test_coarsened_seed_meets_golden_in_pypto(name: str, factor: int, tmp_path: Path) -> None:
    seed = kernel_by_name(name)
    module = load_file(seed.path, kernel=seed.kernel)
    apply_pipeline(module, f"coarsen{{factor={factor}}}")
    path = tmp_path / f"{name}.py"
    path.write_text(emit(module))
    inputs = seed.make_inputs(np.random.default_rng(16))
    args = [ArgSpec(n, shape, dtype) for n, shape, dtype in seed.args]
    theirs = run_kernel(path, seed.kernel, args, inputs, outputs=seed.outputs)
    golden = seed.golden(inputs)
    atol, rtol = seed.tolerance
    for out in seed.outputs:
        np.testing.assert_allclose(
            np.asarray(theirs[out]).astype(np.float64),
            np.asarray(golden[out]).astype(np.float64),
            atol=atol,
            rtol=rtol,
            err_msg=f"{name} coarsened x{factor}, output {out!r}: PyPTO interpreter vs golden",
        )
