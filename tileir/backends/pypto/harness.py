"""Run a PyPTO kernel file with the real `pypto` package, each call in its own subprocess.

Two questions can be asked of a kernel file:

* `compile_kernel` — does PyPTO accept it, and what does its cost model say? PyPTO
  compiles it in SIM run mode (its whole pass pipeline, on the CPU) and simulates the
  NPU: the result holds the end-to-end time in µs and the cycle count.
* `run_kernel` — what does it compute? PyPTO's pass-verify interpreter runs the tensor
  graph on torch and dumps every tensor; the outputs are read back as numpy arrays.

    >>> args = [ArgSpec("a", (16, 64), "f32"), ArgSpec("out", (16, 64), "f32")]
    >>> compile_kernel("exp.py", "kernel", args).time_us   # doctest: +SKIP
    2.56
    >>> run_kernel("exp.py", "kernel", args, {"a": a})["out"]   # doctest: +SKIP

This module imports neither torch nor pypto: the child process (`_worker.py`, run as a
file by `sys.executable` or `$TILEIR_PYPTO_PYTHON`) does. Each call gets a scratch
folder (kept only when `workdir` is given) that receives PyPTO's outputs
(`TILE_FWK_OUTPUT_DIR`), run data (`PYPTO_HOME`) and C++ logs (`ASCEND_PROCESS_LOG_PATH`,
by default `~/ascend/log`). Data crosses as a JSON spec plus raw `.npy` files.

The interpreter needs a calculator library that PyPTO would rebuild with cmake in every
process (about a minute); the worker builds it once into
`$TILEIR_PYPTO_CACHE/<torch version>/pypto-<version>/` (default root
`~/.cache/tileir/pypto-calculator`) under a file lock, and loads it from there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tileir.dialect.dtypes import BY_SHORT, ElementType

WORKER = Path(__file__).with_name("_worker.py")

# Runs the worker file as __main__ from `-c`, so that sys.path starts with the scratch
# folder (the cwd), not this package's folder, whose modules must not shadow anything.
_BOOTSTRAP = (
    "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)

DEFAULT_TIMEOUT = 300.0
"""Seconds one kernel may take, from process start, not counting a calculator build."""

CALCULATOR_BUILD_TIMEOUT = 900.0
"""Seconds the one-off calculator build (or waiting for another process's) may take."""

CLOCK_HZ = 1.8e9
"""The cost model's clock: its cycles divided by 1800 are µs."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class PyptoError(RuntimeError):
    """PyPTO rejected or failed to run a kernel; the message says why."""


@dataclass(frozen=True)
class ArgSpec:
    """One tensor parameter of a kernel, in the kernel's parameter order.

    `shape` is the concrete shape of this call; `dtype` is a tileir short name ('bf16',
    'f16', 'f32', 'i8', 'i32', 'i64', 'i1', 'f8E4M3FN', ...). `dynamic_axes`, when given,
    must match the axes the kernel's annotation declares dynamic (checked by the worker).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    dynamic_axes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dynamic_axes", tuple(int(a) for a in self.dynamic_axes))
        element_type(self.dtype)
        if any(d <= 0 for d in self.shape):
            raise ValueError(f"ArgSpec {self.name}: every dim must be > 0, got {self.shape}")
        if any(not 0 <= a < len(self.shape) for a in self.dynamic_axes):
            raise ValueError(
                f"ArgSpec {self.name}: dynamic axes {self.dynamic_axes} are outside rank {len(self.shape)}"
            )


@dataclass(frozen=True)
class CompileResult:
    """The outcome of `compile_kernel`.

    `time_us` is the cost model's end-to-end time, (max execEnd - min execStart) / 1800
    over the tasks of `_simulate.swim.json`; `total_cycles` is `Total Cycles` of
    `_simulate.stat.report.txt` (it includes set-up, so it is larger); `tasks` counts
    the simulated tasks. `timings` are the worker's own (import_s, call_s, max_rss_mb).
    """

    ok: bool
    error: str | None = None
    time_us: float | None = None
    total_cycles: int | None = None
    tasks: int | None = None
    wall_s: float = 0.0
    workdir: Path | None = None
    timings: Mapping[str, float] = field(default_factory=dict)

    def check(self) -> CompileResult:
        """Return self if the compile succeeded, else raise `PyptoError`."""
        if not self.ok:
            raise PyptoError(self.error or "pypto compile failed")
        return self


def element_type(name: str) -> ElementType:
    try:
        return BY_SHORT[name]
    except KeyError:
        raise ValueError(
            f"unknown dtype {name!r} (supported: {', '.join(sorted(BY_SHORT))})"
        ) from None


def _storage(t: ElementType) -> np.dtype:
    """The numpy dtype that carries `t`'s bytes across the process boundary.

    ml_dtypes types (bf16, fp8) would be saved by np.save as raw void (`|V2`); the
    same bytes travel as unsigned integers of the same width instead.
    """
    if t.numpy.isbuiltin != 1:  # a user-defined numpy type: ml_dtypes
        return np.dtype(f"<u{t.numpy.itemsize}")
    return t.numpy.newbyteorder("<")


def _python() -> str:
    return os.environ.get("TILEIR_PYPTO_PYTHON") or sys.executable


def calculator_cache_root() -> Path:
    """Root of the calculator cache: `$TILEIR_PYPTO_CACHE`, else ~/.cache/tileir/pypto-calculator."""
    if env := os.environ.get("TILEIR_PYPTO_CACHE"):
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tileir" / "pypto-calculator"


@functools.cache
def _importable(python: str) -> bool:
    if python == sys.executable and importlib.util.find_spec("pypto") is None:
        return False
    try:
        done = subprocess.run(
            [python, "-c", "import torch, pypto"],
            cwd=tempfile.gettempdir(),
            capture_output=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def pypto_available() -> bool:
    """True if the worker's interpreter can import torch and pypto (checked once, in a child)."""
    return _importable(_python())


def _child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TILE_FWK_OUTPUT_DIR"] = str(work / "output")
    env["PYPTO_HOME"] = str(work / "pypto_home")
    # PyPTO's C++ log goes to $ASCEND_PROCESS_LOG_PATH/debug/plog (default ~/ascend/log):
    # one folder per call, so that the errors found there are this call's. HOME stays,
    # as user site-packages may hold pypto.
    env["ASCEND_PROCESS_LOG_PATH"] = str(work / "ascend_log")
    # With ASCEND_HOME_PATH set, PyPTO picks the NPU run mode by default.
    env.pop("ASCEND_HOME_PATH", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    for sub in ("output", "pypto_home", "ascend_log"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _wait(
    proc: subprocess.Popen[bytes], work: Path, result: Path, timeout: float, build_timeout: float
) -> str | None:
    """Wait for the worker; return None when it finished, else why it was killed.

    Time spent building the calculator (between the worker's `phase-build` and
    `phase-ready` markers) counts against `build_timeout`, not `timeout`.
    """
    start = time.monotonic()
    build_start = build_end = None
    while True:
        try:
            proc.wait(timeout=0.05)
            return None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if build_start is None and (work / "phase-build").exists():
            build_start = now
        if build_start is not None and build_end is None and (work / "phase-ready").exists():
            build_end = now
        building = 0.0 if build_start is None else (build_end or now) - build_start
        if building > build_timeout:
            _kill_group(proc)
            return f"the calculator build took more than {build_timeout:.0f} s; killed"
        if now - start - building > timeout:
            if result.exists():  # finished, but hanging on exit
                _kill_group(proc)
                return None
            _kill_group(proc)
            return f"timed out after {timeout:.0f} s; killed"


_BACKTRACE = re.compile(r"^\S+\(.*\)\s*\[0x[0-9a-f]+\]")  # "libx.so(fn+0x1) [0x7f..]"
_MATPLOTLIB = re.compile(
    r"Traceback \(most recent call last\):\n(?:[ \t].*\n)*"
    r"ModuleNotFoundError: No module named 'matplotlib'\n"
)


def _clean(text: str) -> list[str]:
    """Non-empty lines without colour codes, C++ backtraces, and the known-harmless
    tracebacks of PyPTO's plotting helpers (they import matplotlib, which is optional)."""
    text = _MATPLOTLIB.sub("", _ANSI.sub("", text))
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not _BACKTRACE.match(ln)]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _plog_errors(work: Path, limit: int = 20) -> list[str]:
    """[ERROR] lines of PyPTO's C++ log: the only place some pass failures say why."""
    found: list[str] = []
    for log in sorted((work / "ascend_log").glob("debug/plog/*.log")):
        found += [ln.strip() for ln in _read(log).splitlines() if "[ERROR]" in ln]
    return found[:limit]


def _error_text(work: Path, worker: dict | None, killed: str | None, returncode: int) -> str:
    """What went wrong, most telling first: the exception, the errors PyPTO logged from
    Python (the first cause of a later C++ error), its C++ log, then the output tails."""
    parts: list[str] = []
    if killed:
        parts.append(f"pypto worker {killed}")
    elif worker is None:
        if returncode < 0:
            sig = signal.Signals(-returncode).name
            parts.append(f"pypto worker died with {sig} (exit code {returncode})")
        else:
            parts.append(f"pypto worker exited with code {returncode} and no result")
    err = (worker or {}).get("error") or {}
    if err:
        head = err["message"] if err["type"] == "setup" else f"{err['type']}: {err['message']}"
        parts.append("\n".join(_clean(head)))
        if err.get("kernel_frames"):
            parts.append("in the kernel file:\n  " + "\n  ".join(err["kernel_frames"]))
    if err.get("type") == "setup":
        return "\n".join(parts)
    stderr = _clean(_read(work / "stderr"))
    if logged := [ln for ln in stderr if ln.startswith("ERROR:")]:
        parts.append("PyPTO reported:\n" + "\n".join(logged[:20]))
    if plog := _plog_errors(work):
        parts.append("PyPTO log (plog):\n" + "\n".join(plog))
    shown = set("\n".join(parts).splitlines())
    for name, lines in (("stderr", stderr), ("stdout", _clean(_read(work / "stdout")))):
        if tail := [ln for ln in lines if ln not in shown and ln.strip() not in shown][-25:]:
            parts.append(f"worker {name} (tail):\n" + "\n".join(tail))
    return "\n".join(parts)


@dataclass
class _Outcome:
    worker: dict | None
    error: str | None
    wall_s: float


def _run_worker(work: Path, spec: dict, timeout: float, build_timeout: float) -> _Outcome:
    result = work / "result.json"
    spec = {**spec, "result": str(result), "markers": str(work)}
    (work / "spec.json").write_text(json.dumps(spec, indent=1))
    env = _child_env(work)
    t0 = time.perf_counter()
    with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
        try:
            proc = subprocess.Popen(
                [_python(), "-c", _BOOTSTRAP, str(WORKER), str(work / "spec.json")],
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise PyptoError(f"cannot start the pypto worker ({_python()}): {exc}") from exc
        try:
            killed = _wait(proc, work, result, timeout, build_timeout)
        except BaseException:
            _kill_group(proc)
            raise
    wall = time.perf_counter() - t0
    worker = json.loads(result.read_text()) if result.exists() else None
    if worker is not None and worker.get("ok") and not killed:
        return _Outcome(worker, None, wall)
    return _Outcome(worker, _error_text(work, worker, killed, proc.returncode), wall)


def _arg_specs(args: Sequence[ArgSpec], outputs: set[str]) -> list[dict]:
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate argument names in {names}")
    return [
        {
            "name": a.name,
            "shape": list(a.shape),
            "pypto_dtype": element_type(a.dtype).pypto,
            "storage": _storage(element_type(a.dtype)).str,
            "dynamic_axes": list(a.dynamic_axes),
            "input": None,
            "output": a.name in outputs,
        }
        for a in args
    ]


# What one call leaves in its scratch folder; a reused `workdir` is cleared of it first,
# so that nothing of an earlier call can pass for this one's result.
_SCRATCH = ("result.json*", "spec.json", "stdout", "stderr", "phase-*", "in_*.npy", "out_*.npy")
_SCRATCH_DIRS = ("output", "verify", "pypto_home", "ascend_log")


class _Workdir:
    """The caller's folder (kept), or a temporary one (removed afterwards)."""

    def __init__(self, workdir: str | os.PathLike[str] | None):
        self._tmp = None if workdir else tempfile.TemporaryDirectory(prefix="tileir-pypto-")
        self.path = Path(self._tmp.name if self._tmp else workdir).resolve()  # type: ignore[arg-type]
        self.kept = self._tmp is None

    def __enter__(self) -> _Workdir:
        self.path.mkdir(parents=True, exist_ok=True)
        if self.kept:
            for pattern in _SCRATCH:
                for f in self.path.glob(pattern):
                    f.unlink()
            for d in _SCRATCH_DIRS:
                shutil.rmtree(self.path / d, ignore_errors=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tmp:
            self._tmp.cleanup()


def _kernel_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path).resolve()
    if not p.is_file():
        raise PyptoError(f"kernel file {p} does not exist")
    return p


def _require_pypto() -> None:
    if not pypto_available():
        raise PyptoError(
            f"pypto is not importable by {_python()}: install the `pypto` extra "
            "(torch==2.13.0 CPU first, then pypto==0.2.0 and sympy)"
        )


def read_cost_model(output_root: Path) -> tuple[float | None, int | None, int | None]:
    """(end-to-end µs, total cycles, task count) from PyPTO's cost-model output files."""
    swims = sorted(output_root.glob("output_*/CostModelSimulationOutput/_simulate.swim.json"))
    if not swims:
        return None, None, None
    cores = json.loads(swims[-1].read_text())
    tasks = [t for core in cores for t in core.get("tasks", [])]
    time_us = None
    if tasks:
        span = max(t["execEnd"] for t in tasks) - min(t["execStart"] for t in tasks)
        time_us = span / (CLOCK_HZ / 1e6)
    cycles = None
    report = swims[-1].with_name("_simulate.stat.report.txt")
    if report.exists() and (m := re.search(r"Total Cycles\.*:\s*(\d+)", report.read_text())):
        cycles = int(m.group(1))
    return time_us, cycles, len(tasks)


def compile_kernel(
    path: str | os.PathLike[str],
    kernel_name: str,
    args: Sequence[ArgSpec],
    *,
    scalars: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    workdir: str | os.PathLike[str] | None = None,
) -> CompileResult:
    """Compile `kernel_name` of the file at `path` in SIM mode and run PyPTO's cost model.

    The kernel is called on zero tensors of the `args` shapes (plus the non-tensor
    `scalars`, JSON values). SIM is forced whatever run mode the file asks for. A kernel
    that PyPTO rejects gives `ok=False` with the error (the Python exception, PyPTO's C++
    log lines and the tail of the worker's output); only harness failures raise.
    """
    kernel = _kernel_file(path)
    _require_pypto()
    with _Workdir(workdir) as wd:
        spec = {
            "mode": "compile",
            "kernel_path": str(kernel),
            "kernel_name": kernel_name,
            "args": _arg_specs(args, set()),
            "scalars": dict(scalars or {}),
        }
        outcome = _run_worker(wd.path, spec, timeout, CALCULATOR_BUILD_TIMEOUT)
        kept = wd.path if wd.kept else None
        if outcome.error is not None:
            return CompileResult(False, outcome.error, wall_s=outcome.wall_s, workdir=kept)
        time_us, cycles, tasks = read_cost_model(wd.path / "output")
        if time_us is None:
            return CompileResult(
                False,
                "PyPTO compiled the kernel but wrote no cost-model tasks "
                "(CostModelSimulationOutput/_simulate.swim.json)",
                wall_s=outcome.wall_s,
                workdir=kept,
            )
        assert outcome.worker is not None
        timings = outcome.worker.get("timings", {})
        return CompileResult(True, None, time_us, cycles, tasks, outcome.wall_s, kept, timings)


def run_kernel(
    path: str | os.PathLike[str],
    kernel_name: str,
    args: Sequence[ArgSpec],
    inputs: Mapping[str, np.ndarray],
    *,
    outputs: Sequence[str] | None = None,
    scalars: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    build_timeout: float = CALCULATOR_BUILD_TIMEOUT,
    workdir: str | os.PathLike[str] | None = None,
) -> dict[str, np.ndarray]:
    """Run the kernel with PyPTO's pass-verify interpreter and return its outputs.

    `inputs` maps argument names to arrays (cast to the argument's dtype; bf16 and fp8
    as `ml_dtypes` arrays). `outputs` names the arguments to read back, by default every
    argument not in `inputs`; an argument in both is in-place. Arguments in neither
    start as zeros. Only the tensor graph is interpreted (`pass_verify_pass_filter=[]`),
    and the cost model is skipped. Raises `PyptoError` on any failure.
    """
    kernel = _kernel_file(path)
    names = [a.name for a in args]
    unknown = sorted(set(inputs) - set(names)) + sorted(set(outputs or ()) - set(names))
    if unknown:
        raise ValueError(f"{unknown} are not arguments of the kernel ({names})")
    wanted = set(outputs) if outputs is not None else set(names) - set(inputs)
    if not wanted:
        raise ValueError("run_kernel needs at least one output argument")
    _require_pypto()
    with _Workdir(workdir) as wd:
        specs = _arg_specs(args, wanted)
        for arg, spec in zip(args, specs, strict=True):
            if arg.name in inputs:
                t = element_type(arg.dtype)
                value = np.asarray(inputs[arg.name])
                if value.shape != arg.shape:
                    raise ValueError(
                        f"input {arg.name} has shape {value.shape}, its ArgSpec {arg.shape}"
                    )
                raw = np.ascontiguousarray(value.astype(t.numpy, copy=False)).view(_storage(t))
                spec["input"] = str(wd.path / f"in_{arg.name}.npy")
                np.save(spec["input"], raw, allow_pickle=False)
        spec_all = {
            "mode": "run",
            "kernel_path": str(kernel),
            "kernel_name": kernel_name,
            "args": specs,
            "scalars": dict(scalars or {}),
            "verify_dir": str(wd.path / "verify"),
            "calculator_root": str(calculator_cache_root()),
        }
        outcome = _run_worker(wd.path, spec_all, timeout, build_timeout)
        if outcome.error is not None:
            raise PyptoError(outcome.error)
        assert outcome.worker is not None
        result: dict[str, np.ndarray] = {}
        for arg in args:
            if arg.name in wanted:
                raw = np.load(outcome.worker["outputs"][arg.name]["file"], allow_pickle=False)
                result[arg.name] = raw.view(element_type(arg.dtype).numpy)
        return result


def worker_timings(workdir: str | os.PathLike[str]) -> dict[str, float]:
    """The worker's own timings (import, calculator, call) of a call run with `workdir`."""
    result = Path(workdir) / "result.json"
    return dict(json.loads(result.read_text()).get("timings", {}))


__all__ = [
    "ArgSpec",
    "CompileResult",
    "PyptoError",
    "calculator_cache_root",
    "compile_kernel",
    "pypto_available",
    "read_cost_model",
    "run_kernel",
    "worker_timings",
]
