"""Start-up time of `tileir-run`, whole process, against its floors and the real pypto.

    python benchmarks/startup.py [--repeat N] [--pypto-repeat N] [--no-pypto]

The kernel is a 13-row RoPE: the seed kernel `frontends/kernels/rope_half_split.py` with
`SEQ = 13` (two row tiles of 8, the second a tail of 5), once as that PyPTO `.py` file and
once as the `.mlir` text tileir's frontend makes of it. Every row is a whole process
(`python -m tileir.tools.run FILE --random-inputs --output-dir DIR`), best and median of
`--repeat` runs, wall time and CPU time (user + system; on a shared machine the CPU time
moves less). The rows run interleaved (one of each per round), so that a busy machine
slows them alike. The floors: a bare interpreter, `import numpy`, numpy + ml_dtypes, then
xDSL's core (`xdsl.ir`, `xdsl.irdl`, the builtin dialect), then all the xDSL modules a
`.mlir` run imports (measured, not listed by hand), then tileir's own modules on top.
A `.mlir` run is timed twice: lowered (`--no-cache`, as a first run) and with its plan
read from the plan cache (`tileir.backends.numpy.plan_cache`, a private cache folder
warmed by one run), which imports neither xDSL nor tileir's compiler; its floor is numpy,
ml_dtypes and cloudpickle.
A probe then times the `@irdl_op_definition`s of those imports and the assembly-format
parsing xDSL does inside each (CPU, best run). The last row is the
real pypto's CPU interpreter on the same `.py` kernel (`harness.run_kernel`: one process
importing torch and pypto, building nothing: the calculator library is cached).

Bytecode: where PYTHONDONTWRITEBYTECODE is set (as in this project's sandbox) Python
compiles tileir's sources on every start, which an installed tool does not do. The runs
therefore get a private, warmed PYTHONPYCACHEPREFIX (nothing is written into the source
tree); the row "no bytecode cache" shows the other case.

Then the imports of the two `.mlir` runs: `-X importtime` self times summed by package
(each module's best over the runs).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "frontends" / "kernels" / "rope_half_split.py"
KERNEL = "rope_half_split_kernel"
ROWS = 13


def _write_kernels(folder: Path) -> tuple[Path, Path]:
    text = SEED.read_text()
    if "SEQ = 20\n" not in text:
        raise SystemExit(f"{SEED}: expected a line 'SEQ = 20' to change to {ROWS} rows")
    py = folder / "rope13.py"
    py.write_text(text.replace("SEQ = 20\n", f"SEQ = {ROWS}\n"))
    from frontends.pypto import load_file
    from tileir.ir import print_module

    mlir = folder / "rope13.mlir"
    mlir.write_text(print_module(load_file(py, KERNEL)))
    return py, mlir


def _timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (children's user + system) seconds of each call."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = _once(fn)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus


def _once(fn: Callable[[], object]) -> tuple[float, float]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def _interleaved(
    fns: Sequence[Callable[[], object]], repeat: int
) -> list[tuple[list[float], list[float]]]:
    """`_timed` of each function, the runs interleaved (one of each per round), so that
    a busy machine slows every row alike."""
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in fns]
    for _ in range(repeat):
        for fn, (walls, cpus) in zip(fns, times):
            wall, cpu = _once(fn)
            walls.append(wall)
            cpus.append(cpu)
    return times


OP_DEFINITIONS = """
import time
import xdsl.irdl, xdsl.irdl.operations as ops
from xdsl.irdl import declarative_assembly_format as daf

spent = {"defs": 0.0, "formats": 0.0, "ops": 0}
clock = time.process_time
define, parse_format = ops.irdl_op_definition, daf.FormatProgram.from_str


def timed_definition(cls):
    t = clock()
    try:
        return define(cls)
    finally:
        spent["defs"] += clock() - t
        spent["ops"] += 1


def timed_format(*args, **kwargs):
    t = clock()
    try:
        return parse_format(*args, **kwargs)
    finally:
        spent["formats"] += clock() - t


ops.irdl_op_definition = xdsl.irdl.irdl_op_definition = timed_definition
daf.FormatProgram.from_str = staticmethod(timed_format)
import tileir.ir, tileir.backends.numpy, tileir.bindings
print(spent["ops"], spent["defs"], spent["formats"])
"""
"""A probe: the CPU time of the `@irdl_op_definition`s run while a `.mlir` run imports its
dialects (those defined once `xdsl.irdl` is in, i.e. all but builtin's few), and of the
assembly-format parsing inside them (xDSL parses each op's `assembly_format` when the
class is defined)."""


def _op_definitions(env: dict[str, str], repeat: int) -> tuple[int, float, float]:
    best: tuple[int, float, float] | None = None
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", OP_DEFINITIONS],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        n, defs, formats = done.stdout.split()
        run = (int(n), float(defs), float(formats))
        if best is None or run[1] < best[1]:
            best = run
    assert best is not None
    return best


def _process(cmd: Sequence[str], env: dict[str, str]) -> Callable[[], object]:
    return lambda: subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def _row(label: str, walls: list[float], cpus: list[float]) -> None:
    print(
        f"{label:<54} {min(walls):7.3f} {statistics.median(walls):7.3f} "
        f"{min(cpus):7.3f} {statistics.median(cpus):7.3f}"
    )


def _run_cmd(path: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tileir.tools.run",
        str(path),
        "--kernel",
        KERNEL,
        "--random-inputs",
        "--output-dir",
        str(out),
    ]


def _xdsl_modules(mlir: Path, out: Path, env: dict[str, str]) -> list[str]:
    probe = (
        "import sys\nfrom tileir.tools.run import main\n"
        f"assert main({[*_run_cmd(mlir, out)[3:], '--no-cache']!r}) == 0\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.split()


_CORE = "import numpy, ml_dtypes, xdsl.ir, xdsl.irdl, xdsl.dialects.builtin"
_TILEIR = "import tileir.ir, tileir.backends.numpy, tileir.bindings"

GROUPS = ("tileir.dialect", "tileir.backends", "tileir", "frontends", "xdsl", "numpy", "ml_dtypes")


def _group(module: str) -> str:
    for g in GROUPS:
        if module == g or module.startswith(g + "."):
            return g if g != "tileir" else "tileir (other)"
    return "python stdlib and the rest"


def _imports(cmd: Sequence[str], env: dict[str, str], repeat: int) -> Counter[str]:
    best: dict[str, int] = {}
    for _ in range(repeat):
        err = subprocess.run(
            [cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True
        ).stderr
        run: Counter[str] = Counter()
        for line in err.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                self_us, _, name = line[len("import time:") :].split("|")
                run[name.strip()] += int(self_us)
        for name, us in run.items():
            best[name] = min(best.get(name, us), us)
    groups: Counter[str] = Counter()
    for name, us in best.items():
        groups[_group(name)] += us
    return groups


def _pypto_call(py: Path, mlir: Path) -> Callable[[], object] | None:
    from tileir.backends.numpy import compile_kernel, random_inputs
    from tileir.backends.pypto.harness import ArgSpec, pypto_available, run_kernel
    from tileir.dialect.dtypes import BY_NUMPY
    from tileir.ir import parse_module

    if not pypto_available():
        return None
    module = parse_module(mlir.read_text())
    plan = compile_kernel(module, KERNEL)
    inputs = random_inputs(module, KERNEL)
    args = [ArgSpec(n, plan.shape(n), BY_NUMPY[plan.dtype(n)].short) for n in plan.arg_names]
    return lambda: run_kernel(py, KERNEL, args, inputs)


LOWERED = f"tileir-run rope{ROWS}.mlir, lowered (--no-cache)"
CACHED = f"tileir-run rope{ROWS}.mlir, plan from the cache"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pypto-repeat", type=int, default=2)
    parser.add_argument("--no-pypto", action="store_true", help="skip the real pypto's row")
    ns = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tileir-startup-") as tmp:
        folder = Path(tmp)
        py, mlir = _write_kernels(folder)
        out = folder / "out"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        env["TILEIR_CACHE_DIR"] = str(folder / "plans")
        env.pop("TILEIR_NO_CACHE", None)
        bare = dict(env, PYTHONDONTWRITEBYTECODE="1")
        del bare["PYTHONPYCACHEPREFIX"]
        run_mlir, run_py = _run_cmd(mlir, out), _run_cmd(py, out)
        lower_mlir = [*run_mlir, "--no-cache"]
        for cmd in (run_mlir, run_py):  # warm the bytecode cache and the plan cache
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        floor = "import numpy, ml_dtypes; " + "; ".join(
            f"import {m}" for m in _xdsl_modules(mlir, out, env)
        )
        cached_floor = "import numpy, ml_dtypes, cloudpickle"
        py_c = [sys.executable, "-c"]
        rows: list[tuple[str, Sequence[str], dict[str, str]]] = [
            ("python -c pass", [*py_c, "pass"], env),
            ("python -c 'import numpy'", [*py_c, "import numpy"], env),
            ("import numpy, ml_dtypes", [*py_c, "import numpy, ml_dtypes"], env),
            ("  + xDSL core (xdsl.ir, xdsl.irdl, builtin)", [*py_c, _CORE], env),
            ("floor: numpy + ml_dtypes + xDSL modules used", [*py_c, floor], env),
            ("  + tileir's dialect, bindings, back end", [*py_c, f"{floor}; {_TILEIR}"], env),
            (LOWERED, lower_mlir, env),
            ("floor of a cached run: numpy, ml_dtypes, cloudpickle", [*py_c, cached_floor], env),
            (CACHED, run_mlir, env),
            (f"tileir-run {py.name}", run_py, env),
            (f"tileir-run {mlir.name}, no bytecode cache (lowered)", lower_mlir, bare),
        ]
        print(
            f"13-row RoPE ({SEED.name} with SEQ = {ROWS}); seconds, {ns.repeat} runs each, "
            "interleaved"
        )
        print(f"{'':<54} {'wall':>7} {'median':>7} {'cpu':>7} {'median':>7}")
        best: dict[str, float] = {}
        timings = _interleaved([_process(cmd, e) for _, cmd, e in rows], ns.repeat)
        for (label, _, _), (walls, cpus) in zip(rows, timings):
            best[label] = min(walls)
            _row(label, walls, cpus)
        n_ops, defs, formats = _op_definitions(env, ns.repeat)
        print(
            f"of which {n_ops} @irdl_op_definition (xDSL's dialects and tileir's): "
            f"{defs:.3f} s cpu, {formats:.3f} s of it parsing assembly formats (best run)"
        )
        call = None if ns.no_pypto else _pypto_call(py, mlir)
        if call is not None:
            walls, cpus = _timed(call, ns.pypto_repeat)
            _row("real pypto CPU interpreter (run_kernel)", walls, cpus)
            for label in (LOWERED, CACHED):
                ratio = min(walls) / best[label]
                print(f"pypto / {label.strip()}: {ratio:.1f}x (best wall times)")
        elif not ns.no_pypto:
            print("real pypto: not installed (issue 17 measured 2.73 s on this kernel)")
        versions = ", ".join(f"{d} {version(d)}" for d in ("xdsl", "numpy", "ml_dtypes"))
        for label, cmd in ((LOWERED, lower_mlir), (CACHED, run_mlir)):
            print(
                f"\nimports of {label.strip()} (-X importtime self times, best of "
                f"{ns.repeat}; {versions}, Python {platform.python_version()})"
            )
            groups = _imports(cmd, env, ns.repeat)
            total = sum(groups.values())
            for name, us in groups.most_common():
                print(f"  {name:<42} {us / 1e6:7.3f} s {100 * us / total:5.1f} %")
            print(f"  {'total':<42} {total / 1e6:7.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
