"""Smoke benchmark of the PyPTO harness: calculator build, per-process cost, cost numbers.

    python benchmarks/pypto_harness_smoke.py               # uses the calculator cache
    python benchmarks/pypto_harness_smoke.py --fresh-cache # also times a first build,
                                                           # raced by --jobs processes

Prints, for each sample kernel of tests/pypto/kernels, the cost model's end-to-end time
and cycles (compile_kernel) and the wall time of one compile and one run subprocess.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileir.backends.pypto.harness import (  # noqa: E402
    ArgSpec,
    compile_kernel,
    pypto_available,
    run_kernel,
    worker_timings,
)

KERNELS = ROOT / "tests" / "pypto" / "kernels"

SAMPLES = {
    "expmuladd": (
        "expmuladd.py",
        [("a", (16, 64), "f32"), ("b", (16, 64), "f32"), ("out", (16, 64), "f32")],
    ),
    "cast_bf16": ("cast_bf16.py", [("x", (16, 64), "f32"), ("out", (16, 64), "bf16")]),
    "matmul_f16": (
        "matmul_f16.py",
        [("a", (32, 64), "f16"), ("b", (48, 64), "f16"), ("out", (32, 48), "f32")],
    ),
    "tail_unroll": ("tail_unroll.py", [("x", (10, 32), "f32"), ("out", (10, 32), "f32")]),
    "accumulate": ("accumulate.py", [("x", (32, 64), "f32"), ("out", (4, 64), "f32")]),
}


def sample(name: str) -> tuple[Path, list[ArgSpec], dict[str, np.ndarray]]:
    file, raw = SAMPLES[name]
    args = [ArgSpec(n, s, d) for n, s, d in raw]
    inputs = {a.name: np.ones(a.shape, np.float32) for a in args if a.name != "out"}
    return KERNELS / file, args, inputs


def timed_run(name: str) -> tuple[float, dict]:
    path, args, inputs = sample(name)
    with tempfile.TemporaryDirectory() as wd:
        t0 = time.perf_counter()
        run_kernel(path, name, args, inputs, workdir=wd)
        return time.perf_counter() - t0, worker_timings(wd)


def first_build(jobs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tileir-calc-") as cache:
        os.environ["TILEIR_PYPTO_CACHE"] = cache
        with ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(timed_run, ["expmuladd"] * jobs))
        del os.environ["TILEIR_PYPTO_CACHE"]
    builds = sum(t["calculator_built"] for _, t in results)
    for wall, t in results:
        print(
            f"  first run: wall {wall:6.1f} s, calculator {t['calculator_s']:6.1f} s, "
            f"built here: {t['calculator_built']}"
        )
    print(f"  {jobs} racing processes, {builds} build(s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-cache", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args()
    if not pypto_available():
        sys.exit("pypto is not importable: install the pypto extra")
    if opts.fresh_cache:
        print("calculator, first build:")
        first_build(opts.jobs)
    timed_run("expmuladd")  # make sure the cache is warm
    print(f"{'kernel':12} {'cost µs':>8} {'cycles':>7} {'tasks':>5} {'compile s':>9} {'run s':>6}")
    for name in SAMPLES:
        path, args, _ = sample(name)
        result = compile_kernel(path, name, args).check()
        run_wall, timings = timed_run(name)
        print(
            f"{name:12} {result.time_us:8.2f} {result.total_cycles:7d} {result.tasks:5d} "
            f"{result.wall_s:9.2f} {run_wall:6.2f}   (import {timings['import_s']:.1f} s, "
            f"call {timings['call_s']:.2f} s)"
        )

    def compile_one(name: str):
        path, args, _ = sample(name)
        return compile_kernel(path, name, args).check()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(opts.jobs * 2) as pool:
        results = list(pool.map(compile_one, list(SAMPLES) * 2))
    wall = time.perf_counter() - t0
    rss = max(r.timings["max_rss_mb"] for r in results)
    print(
        f"{len(results)} compiles, {opts.jobs * 2} at a time: {wall:.1f} s; "
        f"peak worker RSS {rss:.0f} MB"
    )


if __name__ == "__main__":
    main()
