"""Differential test: the emitted seed kernels computed by PyPTO 0.2.0's pass-verify
interpreter (the harness's `run_kernel`) against tileir's numpy back end on the same
inputs, within each kernel's tolerance, as written and after `-p default`.

Three implementations meet here: our interpreter, our emitter and PyPTO. The seed
kernels' loop counts are small (at most 3 iterations), which keeps the interpreter's
dumps small. Each call is a subprocess; the harness caches PyPTO's calculator build.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from frontends.kernels import SEED_KERNELS, SeedKernel
from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, run_kernel
from tileir.dialect import pto
from tileir.ir import make_context
from tileir.passes.pipeline import DefaultPipelinePass

pytestmark = pytest.mark.pypto

SEEDS = {k.name: k for k in SEED_KERNELS}


def seed_module(seed: SeedKernel, piped: bool) -> ModuleOp:
    kernel = next(
        op
        for op in load_file(seed.path).walk()
        if isinstance(op, pto.KernelOp) and op.sym_name.data == seed.kernel
    )
    module = ModuleOp([kernel.clone()])
    if piped:
        DefaultPipelinePass().apply(make_context(), module)
    return module


def as_float(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


@pytest.mark.parametrize("piped", [False, True], ids=["as-written", "default-pipeline"])
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_pypto_interpreter_matches_numpy_back_end(name: str, piped: bool, tmp_path: Path) -> None:
    seed = SEEDS[name]
    module = seed_module(seed, piped)
    path = tmp_path / f"{name}.py"
    path.write_text(emit(module))
    inputs = seed.make_inputs(np.random.default_rng(2024))
    args = [ArgSpec(n, shape, dtype) for n, shape, dtype in seed.args]
    ours = run(module, dict(inputs), kernel=seed.kernel)
    theirs = run_kernel(path, seed.kernel, args, inputs, outputs=seed.outputs)
    atol, rtol = seed.tolerance
    for out in seed.outputs:
        np.testing.assert_allclose(
            as_float(theirs[out]),
            as_float(ours[out]),
            atol=atol,
            rtol=rtol,
            err_msg=f"{name} output {out!r}: PyPTO interpreter vs numpy back end",
        )
    # The golden is an independent reference: the numpy back end must meet it too.
    golden = seed.golden(inputs)
    for out in seed.outputs:
        np.testing.assert_allclose(as_float(ours[out]), as_float(golden[out]), atol=atol, rtol=rtol)
