"""PyPTO's simulated end-to-end time of every seed kernel, as written and after `-p default`.

    python benchmarks/pypto_cost.py [-j JOBS] [--pipeline PIPELINE] [KERNEL ...]

Each seed kernel is read by tileir's frontend, emitted as written and after the pipeline,
and compiled by the real pypto 0.2.0 in SIM mode (harness `compile_kernel`, one
subprocess per compile). The time is the cost model's end-to-end span of
`_simulate.swim.json` (µs at 1.8 GHz); it is deterministic run to run. The table's last
column is pipeline / written: above 1 means the pipeline made the kernel slower in
PyPTO's model, which the script reports and exits 1 for.

Kernels using `gathermask` have no time: PyPTO 0.2.0's cost model cannot simulate it
(`F92001 ... opcode=GATHER_MASK`).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from xdsl.dialects.builtin import ModuleOp

from frontends.kernels import SEED_KERNELS, SeedKernel
from frontends.pypto import load_file
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, CompileResult, compile_kernel
from tileir.dialect import pto
from tileir.ir import make_context
from tileir.passes.pipeline import DefaultPipelinePass

TOLERANCE = 1e-9
"""Relative slack when calling a kernel slower (the model is deterministic)."""


@dataclass
class Row:
    name: str
    written: CompileResult
    piped: CompileResult

    @property
    def ratio(self) -> float | None:
        if self.written.time_us and self.piped.time_us:
            return self.piped.time_us / self.written.time_us
        return None


def _module(seed: SeedKernel, pipeline: str | None) -> ModuleOp:
    kernel = next(
        op
        for op in load_file(seed.path).walk()
        if isinstance(op, pto.KernelOp) and op.sym_name.data == seed.kernel
    )
    module = ModuleOp([kernel.clone()])
    if pipeline == "default":
        DefaultPipelinePass().apply(make_context(), module)
    elif pipeline:
        from xdsl.passes import PassPipeline

        from tileir.passes import get_all_passes

        PassPipeline.parse_spec(get_all_passes(), pipeline).apply(make_context(), module)
    return module


def _compile(seed: SeedKernel, pipeline: str | None, folder: Path) -> CompileResult:
    path = folder / f"{seed.name}_{'piped' if pipeline else 'written'}.py"
    path.write_text(emit(_module(seed, pipeline)))
    args = [ArgSpec(n, shape, dtype) for n, shape, dtype in seed.args]
    return compile_kernel(path, seed.kernel, args)


def _fmt(result: CompileResult) -> str:
    if result.ok and result.time_us is not None:
        return f"{result.time_us:10.3f}"
    reason = (result.error or "failed").splitlines()
    short = next((line for line in reason if "ErrCode" in line), reason[0])
    return f"{'n/a':>10} [{short.strip()[:70]}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="seed kernel names (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="compiles in parallel")
    parser.add_argument("--pipeline", default="default", help="pass pipeline (default: default)")
    ns = parser.parse_args(argv)
    seeds = [k for k in SEED_KERNELS if not ns.kernels or k.name in ns.kernels]
    unknown = sorted(set(ns.kernels) - {k.name for k in SEED_KERNELS})
    if unknown:
        parser.error(f"unknown seed kernels {unknown}")
    start = time.perf_counter()
    with TemporaryDirectory(prefix="tileir-cost-") as tmp, ThreadPoolExecutor(ns.jobs) as pool:
        folder = Path(tmp)
        written = [pool.submit(_compile, k, None, folder) for k in seeds]
        piped = [pool.submit(_compile, k, ns.pipeline, folder) for k in seeds]
        rows = [Row(k.name, w.result(), p.result()) for k, w, p in zip(seeds, written, piped)]
    print(f"{'kernel':26} {'written µs':>10} {'pipeline µs':>11} {'ratio':>7}")
    slower = []
    for row in rows:
        ratio = row.ratio
        if ratio is None:
            print(f"{row.name:26} {_fmt(row.written)}")
            if row.piped.ok != row.written.ok or not row.piped.ok:
                print(f"{'':26} {_fmt(row.piped)} (after the pipeline)")
            continue
        print(f"{row.name:26} {_fmt(row.written)} {_fmt(row.piped):>11} {ratio:7.3f}")
        if ratio is not None and ratio > 1 + TOLERANCE:
            slower.append(row.name)
    print(f"({len(rows)} kernels, {time.perf_counter() - start:.0f} s)")
    if slower:
        print(f"slower after the pipeline: {', '.join(slower)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
