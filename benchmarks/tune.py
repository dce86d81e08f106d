"""Tuned vs as-written time of every seed kernel in PyPTO 0.2.0's cost model, at the
seed size and at a realistic size (>= 64 rows or tokens: the same file with larger
module-level constants).

    python benchmarks/tune.py [-j JOBS] [--budget N] [--sizes seed,real] [KERNEL ...]

For each kernel `tileir.tuning.tune` tries its candidates (each bit-identical to the
as-written kernel on the numpy back end, or dropped) and keeps the fastest. Printed per
row: as-written µs, tuned µs, ratio, tasks before -> after, the tuning time (noisy: the
machine is shared; the µs are deterministic), the interpreter check (the tuned kernel in
PyPTO's own pass-verify interpreter against the as-written kernel on the numpy back end,
within the seed's tolerance, or `ok=w`: equal to the as-written kernel's own PyPTO output
where the back ends differ; `--no-check` skips it) and the chosen settings. Then the geometric
mean of the ratios per size. Results are cached (~/.cache/tileir/tune), so a rerun only
prints. Kernels PyPTO 0.2.0 cannot cost (gathermask) are listed as such.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from frontends.kernels import SEED_KERNELS, SeedKernel
from frontends.pypto import load_source
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import run_kernel as pypto_run
from tileir.dialect import pto
from tileir.testing.check import run_kernel as numpy_run
from tileir.testing.inputs import random_inputs
from tileir.tuning import DEFAULT_BUDGET, CannotCost, kernel_args, tune

REALISTIC = {
    "rope_half_split.py": {"SEQ": 64},
    "rope_interleave.py": {"SEQ": 64},
    "rope_rotate_half.py": {"SEQ": 64},
    "rms_norm_rope.py": {"SEQ": 64},
    "gelu.py": {"ROWS": 64},
    "mean.py": {"ROWS": 64},
    "moe_routing.py": {"TOKENS": 64},
    "linear.py": {"M": 64},
    "linear_projection.py": {"TOKENS": 64},
    "embedding.py": {"TOKENS": 64, "SEQ": 64},
    "repeat_kv.py": {"SEQ": 64},
    "type_as.py": {"BATCH": 8},
    "decode_attention.py": {"S2": 256},
}
"""Per kernel file: the module-level constants set for the realistic size."""


def source(seed: SeedKernel, size: str) -> str:
    text = seed.path.read_text(encoding="utf-8")
    if size == "real":
        for name, value in REALISTIC.get(seed.path.name, {}).items():
            text, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, flags=re.M)
            assert n == 1, f"{seed.path.name}: no constant {name}"
    return text


def seed_inputs(seed: SeedKernel, module, i: int) -> dict:
    """Random inputs at the module's shapes; i32 / i64 inputs (the embedding ids) are
    row indices, drawn in [0, rows of the smallest float input)."""
    kernel = next(k for k in module.walk() if isinstance(k, pto.KernelOp))
    args = kernel_args(kernel)
    rng = np.random.default_rng(i)
    floats = [a.shape[0] for a in args if a.dtype in ("f32", "f16", "bf16") and a.shape]
    out = {}
    for a in args:
        if a.name in seed.inputs and a.dtype in ("i32", "i64") and floats:
            out[a.name] = rng.integers(0, min(floats), a.shape).astype(f"int{a.dtype[1:]}")
    return out


def interpreter_check(seed: SeedKernel, module, result) -> str:
    """The tuned kernel in PyPTO 0.2.0's own pass-verify interpreter against the
    as-written kernel on tileir's numpy back end, within the seed's tolerance: `ok`;
    else `ok=w` when it equals the as-written kernel's own PyPTO output (within
    tolerance: the two back ends differ on these inputs, tuning did not change that;
    topk on tied bf16 logits, say), else the largest error. `-` when nothing beat the
    as-written kernel."""
    if result.best is result.written:
        return "-"
    kernel = next(k for k in result.module.walk() if isinstance(k, pto.KernelOp))
    args = kernel_args(kernel)
    full = {**random_inputs(module, seed.kernel, 5), **seed_inputs(seed, module, 5)}
    inputs = {a.name: full[a.name] for a in args if a.name in seed.inputs}
    ours = numpy_run(module, seed.kernel, inputs)
    with TemporaryDirectory(prefix="tileir-bench-") as tmp:

        def pypto(m, tag: str) -> dict:
            path = Path(tmp) / f"{seed.name}_{tag}.py"
            path.write_text(emit(m))
            return pypto_run(path, seed.kernel, args, inputs, outputs=seed.outputs)

        theirs = pypto(result.module, "tuned")
        worst = _excess(seed, theirs, ours)
        if worst <= 0:
            return "ok"
        if _excess(seed, theirs, pypto(module, "written")) <= 0:
            return "ok=w"
    return f"off by {worst:.2g}"


def _excess(seed: SeedKernel, got: dict, want: dict) -> float:
    """Largest |got - want| beyond the seed's tolerance (<= 0: within it)."""
    atol, rtol = seed.tolerance
    worst = -1.0
    for name in seed.outputs:
        a = np.asarray(got[name]).astype(np.float64)
        b = np.asarray(want[name]).astype(np.float64)
        worst = max(worst, float((np.abs(a - b) - (atol + rtol * np.abs(b))).max()))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="seed kernel names (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--sizes", default="seed,real")
    parser.add_argument("--no-check", action="store_true", help="skip the PyPTO interpreter check")
    ns = parser.parse_args(argv)
    seeds = [k for k in SEED_KERNELS if not ns.kernels or k.name in ns.kernels]
    sizes = ns.sizes.split(",")
    head = (
        f"{'kernel':26} {'size':4} {'written':>8} {'tuned':>8} {'ratio':>6} {'tasks':>9} "
        f"{'tune s':>6} {'interp':>6}  settings"
    )
    print(head, flush=True)
    ratios: dict[str, list[float]] = {s: [] for s in sizes}
    for size in sizes:
        for seed in seeds:
            t0 = time.perf_counter()
            module = load_source(source(seed, size), str(seed.path), seed.kernel)
            try:
                # The seed's own inputs: in-range indices for the gather kernels.
                inputs = [seed_inputs(seed, module, i) for i in range(2)]
                r = tune(
                    module,
                    seed.kernel,
                    budget=ns.budget,
                    jobs=ns.jobs,
                    progress=False,
                    inputs=inputs,
                )
            except CannotCost as e:
                print(f"{seed.name:26} {size:4} cannot cost: {str(e).split(': ', 2)[-1][:70]}")
                continue
            dt = time.perf_counter() - t0
            w, b = r.written, r.best
            assert w.time_us is not None and b.time_us is not None and b.ratio is not None
            ratios[size].append(b.ratio)
            tasks = f"{w.tasks}->{b.tasks}"
            check = "skip" if ns.no_check else interpreter_check(seed, module, r)
            print(
                f"{seed.name:26} {size:4} {w.time_us:8.3f} {b.time_us:8.3f} {b.ratio:6.3f} "
                f"{tasks:>9} {dt:6.0f} {check:>6}  {b.settings}",
                flush=True,
            )
    for size, rs in ratios.items():
        if rs:
            geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"geometric mean ({size}, {len(rs)} kernels): {geo:.3f}; worst {max(rs):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
