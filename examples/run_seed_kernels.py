"""The main job (`make run`): every bundled seed kernel goes PyPTO source -> `pto` IR ->
the default pipeline -> the numpy back end and the PyPTO emitter.

For each kernel it prints the flow pattern the pipeline found, the op counts before and
after, whether the numpy back end matches the kernel's independent numpy golden before
and after the pipeline, and where the emitted PyPTO module was written.

Run: `python examples/run_seed_kernels.py [--out DIR] [KERNEL ...]`
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.backends.pypto.emitter import emit_module
from tileir.dialect import pto
from tileir.ir import print_module
from tileir.passes import apply_pipeline


def max_error(
    actual: dict[str, np.ndarray], golden: dict[str, np.ndarray], tol
) -> tuple[float, bool]:
    atol, rtol = tol
    worst, ok = 0.0, True
    for name, want in golden.items():
        got = np.asarray(actual[name], dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        err = np.abs(got - want)
        worst = max(worst, float(err.max(initial=0.0)))
        ok &= bool(np.all(err <= atol + rtol * np.abs(want)))
    return worst, ok


def count_ops(module) -> int:
    return sum(1 for op in module.walk() if op.dialect_name() == "pto")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="where emitted files go")
    parser.add_argument("kernels", nargs="*", help="seed kernel names (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [k for k in SEED_KERNELS if not args.kernels or k.name in args.kernels]
    header = f"{'kernel':32} {'flow':12} {'ops':>11} {'golden (before / after)':>26}  emitted"
    print(header)
    print("-" * len(header))
    failures = 0
    for k in chosen:
        module = load_file(k.path)
        kernel_names = [op.sym_name.data for op in module.walk() if isinstance(op, pto.KernelOp)]
        keep = [
            op
            for op in module.walk()
            if isinstance(op, pto.KernelOp) and op.sym_name.data != k.kernel
        ]
        for op in keep:
            op.detach()
            op.erase()
        assert k.kernel in kernel_names, k.kernel
        inputs = k.make_inputs(np.random.default_rng(0))
        golden = k.golden(inputs)
        before_ops = count_ops(module)
        err0, ok0 = max_error(run(module, inputs, kernel=k.kernel), golden, k.tolerance)
        apply_pipeline(module, "default")
        err1, ok1 = max_error(run(module, inputs, kernel=k.kernel), golden, k.tolerance)
        kernel = next(op for op in module.walk() if isinstance(op, pto.KernelOp))
        flow = kernel.attributes.get("flow_pattern")
        flow_text = flow.data if flow is not None else "-"
        target = args.out / f"{k.name}.py"
        target.write_text(emit_module(module, source=str(k.path)))
        (args.out / f"{k.name}.mlir").write_text(print_module(module))
        status = f"{'ok' if ok0 else 'FAIL'} {err0:.1e} / {'ok' if ok1 else 'FAIL'} {err1:.1e}"
        failures += (not ok0) + (not ok1)
        print(
            f"{k.name:32} {flow_text:12} {before_ops:>4} -> {count_ops(module):<4} {status:>26}  {target}"
        )
    print(f"\n{len(chosen)} kernels, {failures} golden mismatches; IR and PyPTO in {args.out}/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
