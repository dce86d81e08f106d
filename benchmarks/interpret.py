"""Interpret mode against the real PyPTO's CPU interpreter, on the same seed kernels.

    python benchmarks/interpret.py [--repeat N] [--kernels a,b] [--no-pypto]

Per kernel (torch CPU tensors in, outputs written in place, both checked against the
seed kernel's independent numpy golden with its tolerance):

- `first call`: interpret mode's first call (the frontend builds the IR, the back end
  lowers it, then it runs); `per call`: a later call with the same signature (cached
  specialisation; the median of `--repeat` calls);
- `process`: a whole `python -m tileir.interpret script.py` process making one call
  (start-up, imports, first call), the median of `--repeat` processes;
- `pypto`: one call through the real pypto's pass-verify interpreter
  (`tileir.backends.pypto.harness.run_kernel`: a worker process with the cached
  calculator, PyPTO's only way to compute values without an NPU), median of `--repeat`;
- ratios: `pypto / per call` and `pypto / process` (wall time, and CPU time of the
  child processes, which a loaded machine distorts less).

Timings are wall-clock on whatever else the machine runs: compare the ratios, not the
absolute numbers, and repeat.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from frontends.kernels import SEED_KERNELS, SeedKernel, kernel_by_name  # noqa: E402

DEFAULT = (
    "rope_half_split",
    "rms_norm_rope",
    "mean",
    "gelu_tanh",
    "linear_bias",
    "moe_routing_softmax",
)

SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    import numpy as np, torch
    spec = importlib.util.spec_from_file_location("k", {path!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    arrays = np.load({npz!r})
    args = []
    for name, dtype in {args!r}:
        a = arrays[name]
        t = torch.from_numpy(a)
        if dtype in ("bfloat16",):
            t = t.view(torch.bfloat16)
        args.append(t)
    getattr(module, {kernel!r})(*args)
    """
)


def _torch(a: np.ndarray):
    import torch

    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _numpy(t) -> np.ndarray:
    from tileir.interpret.tensors import to_numpy

    return to_numpy(t, "output")


def _close(k: SeedKernel, actual: dict[str, np.ndarray], golden: dict[str, np.ndarray]) -> bool:
    atol, rtol = k.tolerance
    return all(
        np.allclose(
            actual[n].astype(np.float64), golden[n].astype(np.float64), atol=atol, rtol=rtol
        )
        for n in k.outputs
    )


def _arguments(k: SeedKernel, inputs: dict[str, np.ndarray]):
    from tileir.dialect.dtypes import BY_SHORT

    return [
        _torch(inputs[n]) if n in inputs else _torch(np.zeros(shape, BY_SHORT[dt].numpy))
        for n, shape, dt in k.args
    ]


def interpret_in_process(k: SeedKernel, inputs, golden, repeat: int) -> tuple[float, float, bool]:
    from tileir.interpret import interpret_mode

    with interpret_mode():
        spec = importlib.util.spec_from_file_location(f"bench_{k.name}", k.path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel = getattr(module, k.kernel)
        args = _arguments(k, inputs)
        t0 = time.perf_counter()
        kernel(*args)
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            kernel(*args)
            times.append(time.perf_counter() - t0)
        assert kernel.specialisations == 1
        names = [n for n, _, _ in k.args]
        actual = {n: _numpy(args[names.index(n)]) for n in k.outputs}
    return first, statistics.median(times), _close(k, actual, golden)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def interpret_process(k: SeedKernel, inputs, repeat: int) -> tuple[float, float]:
    from tileir.dialect.dtypes import BY_SHORT

    with tempfile.TemporaryDirectory() as wd:
        arrays = {
            n: (inputs[n] if n in inputs else np.zeros(shape, BY_SHORT[dt].numpy))
            for n, shape, dt in k.args
        }
        npz = os.path.join(wd, "args.npz")
        np.savez(
            npz,
            **{
                n: (a.view(np.int16) if a.dtype.name == "bfloat16" else a)
                for n, a in arrays.items()
            },
        )
        script = os.path.join(wd, "one_call.py")
        spec = [(n, arrays[n].dtype.name) for n, _, _ in k.args]
        Path(script).write_text(
            SCRIPT.format(path=str(k.path), npz=npz, args=spec, kernel=k.kernel)
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        times, cpu = [], []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "tileir.interpret", script], check=True, env=env)
            times.append(time.perf_counter() - t0)
            cpu.append(_children_cpu() - c0)
    return statistics.median(times), statistics.median(cpu)


def pypto_call(k: SeedKernel, inputs, golden, repeat: int) -> tuple[float, float, bool]:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    args = [ArgSpec(n, s, d) for n, s, d in k.args]
    times, cpu, ok = [], [], True
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as wd:
            t0, c0 = time.perf_counter(), _children_cpu()
            out = run_kernel(k.path, k.kernel, args, inputs, outputs=k.outputs, workdir=wd)
            times.append(time.perf_counter() - t0)
            cpu.append(_children_cpu() - c0)
        ok = ok and _close(k, out, golden)
    return statistics.median(times), statistics.median(cpu), ok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--kernels", default=",".join(DEFAULT), help="seed kernel names, or 'all'")
    p.add_argument("--no-pypto", action="store_true", help="skip the real pypto")
    args = p.parse_args()
    names = [k.name for k in SEED_KERNELS] if args.kernels == "all" else args.kernels.split(",")
    rows = []
    for name in names:
        k = kernel_by_name(name)
        inputs = k.make_inputs(np.random.default_rng(0))
        golden = k.golden(inputs)
        first, per_call, ok = interpret_in_process(k, inputs, golden, args.repeat)
        process, process_cpu = interpret_process(k, inputs, args.repeat)
        if args.no_pypto:
            pypto, pypto_cpu, pypto_ok = float("nan"), float("nan"), False
        else:
            pypto, pypto_cpu, pypto_ok = pypto_call(k, inputs, golden, args.repeat)
        rows.append((name, first, per_call, process, process_cpu, pypto, pypto_cpu, ok, pypto_ok))
        print(f"done {name}", file=sys.stderr)
    print(
        "| kernel | first call (s) | per call (ms) | process wall / CPU (s) "
        "| pypto interpreter wall / CPU (s) | pypto / per call | pypto / process (wall, CPU) "
        "| interpret ok | pypto ok |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, first, per_call, process, pcpu, pypto, ycpu, ok, pypto_ok in rows:
        print(
            f"| {name} | {first:.3f} | {per_call * 1e3:.2f} | {process:.1f} / {pcpu:.1f} "
            f"| {pypto:.1f} / {ycpu:.1f} | {pypto / per_call:.0f}x "
            f"| {pypto / process:.1f}x, {ycpu / pcpu:.1f}x | {ok} | {pypto_ok} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
