"""Cost-guided tuning: try pass settings on a kernel, keep the fastest that computes
the same thing.

PyPTO's SIM cost model is the judge (`tileir.backends.pypto.harness.compile_kernel`,
one subprocess per candidate, `jobs` at a time); tileir's numpy back end is the
referee: a candidate whose outputs differ from the as-written kernel's by a single bit
on random inputs is dropped before it is compiled.

The search space (`candidates`), in the order it is tried, cut at `budget`:

1. `coarsen{factor=k}` for k = 2, 4, 8, ... up to the trip count of the kernel's
   coarsenable row loops (and the trip count itself: the whole loop in one block),
   each with the loop's own unroll list and with `loop-unroll{factors=1}` (no unroll
   list: PyPTO then compiles one graph, not one per factor);
2. the unroll list alone removed, and `default`;
3. `stitch{max-functions=n}` for n = 2, 4 on the best coarsening.

The result (`TuneResult`) holds one `Trial` per candidate (settings, pipeline, µs,
ratio to as-written, status) and the fastest module. Compile results are cached by the
hash of the emitted source and the call's arguments under `~/.cache/tileir/tune/`
(`$TILEIR_TUNE_CACHE`), so a rerun compiles nothing. The cost model is deterministic,
so the same budget gives the same table.

    >>> result = tune("frontends/kernels/gelu.py", budget=8)   # doctest: +SKIP
    >>> print(result.table())                                   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, CompileResult, compile_kernel
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.passes import apply_pipeline
from tileir.passes.coarsen import analyze
from tileir.testing.check import equal_mask, run_kernel
from tileir.testing.inputs import random_inputs

DEFAULT_BUDGET = 12
"""Candidates compiled by default (besides the as-written kernel): about 2-3 minutes
on 2 cores at ~12 s per compile."""

N_INPUTS = 2
"""Random input sets on which a candidate must match the as-written kernel bit for bit."""

COST_MODEL = "pypto-0.2.0-sim"
"""Part of every cache key: what produced the cached figure."""


@dataclass(frozen=True)
class Trial:
    """One candidate: its settings, the pipeline that makes it, and what it cost."""

    settings: str
    pipeline: str
    status: str
    """`ok`, `differs` (numpy outputs differ from the as-written kernel's),
    `rejected` (a pass or the verifier refused it), or `pypto: <first error line>`."""
    time_us: float | None = None
    tasks: int | None = None
    ratio: float | None = None
    cached: bool = False


@dataclass
class TuneResult:
    kernel: str
    written: Trial
    trials: list[Trial]
    best: Trial
    module: ModuleOp
    """The fastest kernel (as written when nothing beat it), in a module of its own."""
    seconds: float = 0.0

    def table(self) -> str:
        """Every candidate tried: settings, µs, ratio to as-written, status."""
        rows = [f"{'settings':44} {'µs':>9} {'ratio':>7} {'tasks':>6}  status"]
        for t in [self.written, *self.trials]:
            us = f"{t.time_us:9.3f}" if t.time_us is not None else f"{'-':>9}"
            ratio = f"{t.ratio:7.3f}" if t.ratio is not None else f"{'-':>7}"
            tasks = f"{t.tasks:6d}" if t.tasks is not None else f"{'-':>6}"
            mark = " *" if t is self.best else ""
            status = t.status + (" (cached)" if t.cached else "")
            rows.append(f"{t.settings[:44]:44} {us} {ratio} {tasks}  {status}{mark}")
        return "\n".join(rows)


class CannotCost(TileirError):
    """PyPTO 0.2.0 cannot compile or cost the as-written kernel (the message says why)."""


# --------------------------------------------------------------------------- the space


def _row_trips(module: ModuleOp) -> int:
    """The largest trip count among the coarsenable row loops (0: none)."""
    best = 0
    for loop in [o for o in module.walk() if isinstance(o, pto.LoopOp)]:
        try:
            info = analyze(loop)
        except Exception:  # noqa: BLE001 - NotCoarsenable or an unusual loop
            continue
        if info.trips is not None:
            best = max(best, info.trips)
        elif isinstance(info.total_rows, int):
            best = max(best, -(-info.total_rows // info.rows_per_iter))
    return best


def _has_unroll_list(module: ModuleOp) -> bool:
    return any(isinstance(o, pto.LoopOp) and o.unroll_list is not None for o in module.walk())


NO_UNROLL = "loop-unroll{factors=1}"


def candidates(module: ModuleOp) -> list[tuple[str, str]]:
    """(settings label, pipeline) pairs in the order they are tried (see the module
    docstring); deterministic for a given kernel."""
    out: list[tuple[str, str]] = []
    trips = _row_trips(module)
    unroll = _has_unroll_list(module)
    factors = []
    k = 2
    while k < trips:
        factors.append(k)
        k *= 2
    if trips >= 2:
        factors.append(trips)
    # Largest blocks first: the cost model charges per task, so they win most often;
    # with and without the unroll list interleaved so that a small budget sees both.
    for k in sorted(factors, reverse=True):
        coarse = f"coarsen{{factor={k}}}"
        out.append((f"coarsen={k}", coarse))
        if unroll:
            out.append((f"coarsen={k} unroll=none", f"{coarse},{NO_UNROLL}"))
    if unroll:
        out.append(("unroll=none", NO_UNROLL))
    out.append(("default", "default"))
    for n in (2, 4):
        out.append((f"stitch max-functions={n}", f"stitch{{max-functions={n}}}"))
    return out


# --------------------------------------------------------------------------- the judge


def cache_dir() -> Path:
    if env := os.environ.get("TILEIR_TUNE_CACHE"):
        return Path(env).expanduser()
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "tileir" / "tune"


def _key(source: str, kernel: str, args: list[ArgSpec]) -> str:
    h = hashlib.sha256()
    for part in (COST_MODEL, kernel, repr(args), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _first_error(result: CompileResult) -> str:
    lines = (result.error or "failed").splitlines()
    line = next((ln for ln in lines if "rrCode" in ln or "F9" in ln), lines[0])
    return line.strip()[:100]


def cost(
    module: ModuleOp, kernel: str, args: list[ArgSpec], folder: Path
) -> tuple[CompileResult, bool]:
    """The cost model's verdict on `kernel` of `module` (cached); True when cached."""
    source = emit(module)
    key = _key(source, kernel, args)
    entry = cache_dir() / f"{key}.json"
    if entry.exists():
        d = json.loads(entry.read_text())
        return CompileResult(d["ok"], d["error"], d["time_us"], d["cycles"], d["tasks"]), True
    path = folder / f"{kernel}_{key[:16]}.py"
    path.write_text(source)
    result = compile_kernel(path, kernel, args)
    entry.parent.mkdir(parents=True, exist_ok=True)
    d = dict(
        ok=result.ok,
        error=_first_error(result) if not result.ok else None,
        time_us=result.time_us,
        cycles=result.total_cycles,
        tasks=result.tasks,
    )
    tmp = entry.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(d))
    os.replace(tmp, entry)
    return result, False


def kernel_args(kernel: pto.KernelOp) -> list[ArgSpec]:
    """The harness's ArgSpecs of a kernel with static shapes."""
    names = [n.data for n in kernel.arg_names.data]
    out = []
    for name, arg in zip(names, kernel.body.block.args, strict=True):
        t = arg.type
        assert isinstance(t, MemRefType)
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            raise TileirError(
                f"error: kernel @{kernel.sym_name.data}: argument {name} has a dynamic "
                "shape; tuning needs static shapes (write the sizes into the annotation)"
            )
        out.append(ArgSpec(name, shape, element_type(t.get_element_type()).short))
    return out


def _outputs(module: ModuleOp, kernel: str, inputs: list[dict[str, np.ndarray]]) -> list:
    return [run_kernel(module, kernel, i) for i in inputs]


def _same(a: list, b: list) -> bool:
    return all(
        set(x) == set(y) and all(equal_mask(x[n], y[n], None).all() for n in x)
        for x, y in zip(a, b, strict=True)
    )


# --------------------------------------------------------------------------- the search


def _progress(done: int, total: int, label: str) -> None:
    width = 24
    filled = width * done // max(total, 1)
    bar = "#" * filled + "." * (width - filled)
    print(f"\rtune [{bar}] {done}/{total} {label[:40]:40}", end="", file=sys.stderr, flush=True)


def tune(
    module: ModuleOp,
    kernel: str | None = None,
    *,
    budget: int = DEFAULT_BUDGET,
    jobs: int = 2,
    progress: bool = True,
    on_trial: Callable[[Trial], None] | None = None,
) -> TuneResult:
    """Tune `kernel` (or the module's only kernel); see the module docstring.

    Raises `CannotCost` when PyPTO cannot cost the as-written kernel."""
    start = time.perf_counter()
    kernels = [o for o in module.walk() if isinstance(o, pto.KernelOp)]
    if kernel is None:
        if len(kernels) != 1:
            names = ", ".join(k.sym_name.data for k in kernels)
            raise TileirError(
                f"error: the file has several kernels ({names}); pick one with --kernel"
            )
        kernel = kernels[0].sym_name.data
    found = [k for k in kernels if k.sym_name.data == kernel]
    if not found:
        names = ", ".join(k.sym_name.data for k in kernels) or "none"
        raise TileirError(f"error: no kernel {kernel} in the file (kernels: {names})")
    base = ModuleOp([found[0].clone()])
    args = kernel_args(found[0])
    inputs = [random_inputs(base, kernel, seed) for seed in range(N_INPUTS)]
    expected = _outputs(base, kernel, inputs)
    space = candidates(base)[: max(budget, 0)]
    total = len(space) + 1

    built: list[tuple[str, str, ModuleOp | None, str]] = []
    seen: dict[str, str] = {}
    for label, spec in space:
        m = base.clone()
        try:
            apply_pipeline(m, spec)
        except Exception as e:  # noqa: BLE001 - a pass refusing a kernel is a result
            built.append((label, spec, None, f"rejected: {str(e).splitlines()[0][:80]}"))
            continue
        text = str(m)
        if text == str(base):
            built.append((label, spec, None, "no change"))
            continue
        if text in seen:
            built.append((label, spec, None, f"same IR as {seen[text]}"))
            continue
        seen[text] = label
        try:
            same = _same(_outputs(m, kernel, inputs), expected)
        except Exception as e:  # noqa: BLE001
            built.append((label, spec, None, f"rejected: {str(e).splitlines()[0][:80]}"))
            continue
        built.append((label, spec, m, "ok" if same else "differs"))

    done = 0
    with TemporaryDirectory(prefix="tileir-tune-") as tmp, ThreadPoolExecutor(jobs) as pool:
        folder = Path(tmp)
        written_f = pool.submit(cost, base, kernel, args, folder)
        futures = {
            i: pool.submit(cost, m, kernel, args, folder)
            for i, (_, _, m, status) in enumerate(built)
            if m is not None and status == "ok"
        }
        if progress:
            _progress(0, total, "as written")
        written_r, written_cached = written_f.result()
        done += 1
        if not written_r.ok or written_r.time_us is None:
            if progress:
                print(file=sys.stderr)
            raise CannotCost(
                f"error: PyPTO 0.2.0 cannot cost kernel {kernel} as written: "
                f"{_first_error(written_r) if written_r.error else 'no time'}"
            )
        w_us = written_r.time_us
        written = Trial("as written", "", "ok", w_us, written_r.tasks, 1.0, written_cached)
        trials: list[Trial] = []
        for i, (label, spec, m, status) in enumerate(built):
            if i in futures:
                r, cached = futures[i].result()
                if r.ok and r.time_us is not None:
                    trial = Trial(label, spec, "ok", r.time_us, r.tasks, r.time_us / w_us, cached)
                else:
                    trial = Trial(label, spec, f"pypto: {_first_error(r)}", cached=cached)
            else:
                trial = Trial(label, spec, status)
            trials.append(trial)
            done += 1
            if progress:
                _progress(done, total, label)
            if on_trial:
                on_trial(trial)
    if progress:
        print(file=sys.stderr)
    best, best_module = written, base
    by_label = {t.settings: (t, b[2]) for t, b in zip(trials, built, strict=True)}
    for t in trials:
        if t.status == "ok" and t.time_us is not None and t.time_us < best.time_us - 1e-9:  # type: ignore[operator]
            best, best_module = t, by_label[t.settings][1] or base
    return TuneResult(kernel, written, trials, best, best_module, time.perf_counter() - start)


def tuned_source(original: ModuleOp, result: TuneResult) -> str:
    """PyPTO source of `original` with the tuned kernel in place of the as-written one
    (the other kernels as written): same kernel names and parameters."""
    out = original.clone()
    for k in [o for o in out.walk() if isinstance(o, pto.KernelOp)]:
        if k.sym_name.data == result.kernel:
            tuned = next(o for o in result.module.walk() if isinstance(o, pto.KernelOp))
            k.parent_block().insert_op_before(tuned.clone(), k)  # type: ignore[union-attr]
            k.detach()
            k.erase()
    return emit(out)


__all__ = [
    "CannotCost",
    "DEFAULT_BUDGET",
    "Trial",
    "TuneResult",
    "cache_dir",
    "candidates",
    "cost",
    "kernel_args",
    "tune",
    "tuned_source",
]
