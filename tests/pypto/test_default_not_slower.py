"""`-p default` never makes a seed kernel slower in the real pypto 0.2.0's SIM cost
model (issue 16): every seed kernel that 0.2.0 can cost, as written and after the
pipeline. All compiles run once per session, two at a time, through the tuner's result
cache (keyed by the emitted source and the installed pypto version, so a cached figure
is the cost model's for exactly this source); the parametrized tests read them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from frontends.kernels import SEED_KERNELS, SeedKernel
from frontends.pypto import load_file
from tileir.backends.pypto.harness import CompileResult
from tileir.dialect import pto
from tileir.passes import apply_pipeline
from tileir.tuning import cost, kernel_args

pytestmark = pytest.mark.pypto

SEEDS = {k.name: k for k in SEED_KERNELS}


def _module(seed: SeedKernel, piped: bool) -> ModuleOp:
    module = load_file(seed.path, kernel=seed.kernel)
    if piped:
        apply_pipeline(module, "default")
    return module


@pytest.fixture(scope="module")
def costs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, bool], CompileResult]:
    folder = tmp_path_factory.mktemp("cost")

    def one(key: tuple[str, bool]) -> CompileResult:
        seed = SEEDS[key[0]]
        module = _module(seed, key[1])
        kernel = next(o for o in module.walk() if isinstance(o, pto.KernelOp))
        return cost(module, seed.kernel, kernel_args(kernel), Path(folder))[0]

    keys = [(name, piped) for name in sorted(SEEDS) for piped in (False, True)]
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(keys, pool.map(one, keys), strict=True))


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_default_is_not_slower(name: str, costs: dict[tuple[str, bool], CompileResult]) -> None:
    written, piped = costs[(name, False)], costs[(name, True)]
    if not written.ok:
        assert "GATHER_MASK" in (written.error or ""), written.error
        pytest.skip(f"pypto 0.2.0 cannot cost {name}: {written.error}")
    assert piped.ok, piped.error
    assert written.time_us is not None and piped.time_us is not None
    assert piped.time_us <= written.time_us * (1 + 1e-9), (
        f"{name}: {piped.time_us:.3f} us after -p default, {written.time_us:.3f} us as written"
    )
