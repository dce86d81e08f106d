"""Every seed kernel's emitted PyPTO module, as written and after `-p default`, compiles
with the real pypto 0.2.0 in SIM run mode (its whole pass pipeline plus the cost model).

Each compile runs in its own subprocess (the harness); with pytest-xdist the kernels
compile in parallel (`pytest -n auto tests/pypto`).

Known limitation of PyPTO 0.2.0, not of the emitted code: the SIM cost model has no pipe
for `gathermask` (`F92001 ... opcode=GATHER_MASK`); the interleaved-RoPE kernels use it,
so their compile is expected to fail with exactly that error (the same happens to the
hand-written seed file), and test_emitted_numerics checks them through the interpreter,
which computes gathermask.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from frontends.kernels import SEED_KERNELS, SeedKernel
from frontends.pypto import load_file
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, compile_kernel
from tileir.dialect import pto
from tileir.ir import make_context
from tileir.passes.pipeline import DefaultPipelinePass

pytestmark = pytest.mark.pypto

SEEDS = {k.name: k for k in SEED_KERNELS}
GATHERMASK_ERROR = "opcode=GATHER_MASK"


def emitted_file(seed: SeedKernel, piped: bool, folder: Path) -> Path:
    """The seed kernel read by the frontend, optionally through `-p default`, emitted."""
    kernel = next(
        op
        for op in load_file(seed.path).walk()
        if isinstance(op, pto.KernelOp) and op.sym_name.data == seed.kernel
    )
    module = ModuleOp([kernel.clone()])
    if piped:
        DefaultPipelinePass().apply(make_context(), module)
    path = folder / f"{seed.name}_{'default' if piped else 'written'}.py"
    path.write_text(emit(module))
    return path


def uses_gathermask(seed: SeedKernel) -> bool:
    kernel = next(
        op
        for op in load_file(seed.path).walk()
        if isinstance(op, pto.KernelOp) and op.sym_name.data == seed.kernel
    )
    return any(isinstance(op, pto.GathermaskOp) for op in kernel.walk())


@pytest.mark.parametrize("piped", [False, True], ids=["as-written", "default-pipeline"])
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_emitted_seed_kernel_compiles(name: str, piped: bool, tmp_path: Path) -> None:
    seed = SEEDS[name]
    path = emitted_file(seed, piped, tmp_path)
    args = [ArgSpec(n, shape, dtype) for n, shape, dtype in seed.args]
    result = compile_kernel(path, seed.kernel, args)
    if uses_gathermask(seed):
        assert not result.ok and GATHERMASK_ERROR in (result.error or ""), result.error
        return
    assert result.ok, f"{path.name}:\n{result.error}\n--- source\n{path.read_text()}"
    assert result.time_us is not None and result.time_us > 0
    assert result.tasks is not None and result.tasks > 0
