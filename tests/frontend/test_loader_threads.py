"""Loading kernel files from several threads at once (the real-pypto tests do): loading
patches `sys.modules` and records the kernels each import makes, so loads are
serialised; each thread must get its own file's kernels."""

from concurrent.futures import ThreadPoolExecutor

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_file
from tileir.dialect import pto


def _kernel_names(path: str, kernel: str) -> list[str]:
    module = load_file(path, kernel=kernel)
    return [op.sym_name.data for op in module.walk() if isinstance(op, pto.KernelOp)]


def test_concurrent_loads_each_get_their_own_kernel() -> None:
    seeds = SEED_KERNELS[:8] * 3
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda s: _kernel_names(s.path, s.kernel), seeds))
    assert got == [[s.kernel] for s in seeds]
