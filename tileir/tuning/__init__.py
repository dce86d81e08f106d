"""Cost-guided tuning: try pass settings on a kernel, keep the fastest that computes
the same thing.

PyPTO's SIM cost model is the judge (`tileir.backends.pypto.harness.compile_kernel`,
one subprocess per candidate, `jobs` at a time); tileir's numpy back end is the
referee: a candidate whose outputs differ from the as-written kernel's by a single bit
on random inputs is dropped before it is compiled.

The search is a coordinate descent over `Settings`, one setting at a time, each
step's candidates varying that setting of the fastest so far (`STEPS`, cut at `budget`
compiled candidates in all):

1. `unroll`: the unroll list [1], [2, 1], [4, 2, 1] (`set-unroll-list`; PyPTO puts HUB
   synchronisation tasks, several µs, around an unrolled graph of more than two tasks);
2. `sink`: loop-invariant tile preparation recomputed in the loop (`sink-invariants`:
   no cross-task dependency wait);
3. `coarsen`: `coarsen{factor=U}` for the trip count U of the kernel's coarsenable row
   loops (the whole loop in one block), also with `scale-tiles=false` (T-row tiles),
   then factors ..., 8, 4, 2 below U (fewer tasks, but fewer cores busy);
4. `unroll` and `sink` again (coarsening changes the trip count; a sink pays only once
   no HUB task hides it);
5. `tiles`: a coarsened loop with its T-row tiles kept;
6. `tail`: `default{max-functions=2}` and `=4` (stitch groups of 2 / 4 functions), and
   `default`, after the rest.

Candidates whose IR equals one already tried are not compiled again.
The result (`TuneResult`) holds one `Trial` per candidate (settings, pipeline, µs,
ratio to as-written, status) and the fastest module. Compile results are cached by the
hash of the emitted source and the call's arguments under `~/.cache/tileir/tune/`
(`$TILEIR_TUNE_CACHE`), so a rerun compiles nothing. The cost model is deterministic,
so the same budget gives the same table.

    >>> result = tune("frontends/kernels/gelu.py", budget=16)  # doctest: +SKIP
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
from dataclasses import dataclass, replace
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, CompileResult, compile_kernel
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.dialect.pto import constant_index
from tileir.passes import apply_pipeline
from tileir.passes.coarsen import analyze
from tileir.testing.check import equal_mask, run_kernel
from tileir.testing.inputs import random_inputs

DEFAULT_BUDGET = 16
"""Candidates compiled by default (besides the as-written kernel): every step of a row
kernel's search; about 2-3 minutes at 12-25 s per compile, two at a time."""

N_INPUTS = 2
"""Random input sets on which a candidate must match the as-written kernel bit for bit."""


def _cost_model() -> str:
    """Part of every cache key: what produced the cached figure (the installed pypto)."""
    from importlib import metadata

    try:
        return f"pypto-{metadata.version('pypto')}-sim"
    except metadata.PackageNotFoundError:
        return "pypto-missing"


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


def _loop_trips(module: ModuleOp) -> int:
    """The largest static trip count of any `pto.loop` (0: none static)."""
    best = 0
    for loop in [o for o in module.walk() if isinstance(o, pto.LoopOp)]:
        lb, ub, step = (constant_index(v) for v in (loop.lower_bound, loop.upper_bound, loop.step))
        if lb is not None and ub is not None and step:
            best = max(best, -(-(ub - lb) // step))
    return best


def _has_unroll_list(module: ModuleOp) -> bool:
    return any(isinstance(o, pto.LoopOp) and o.unroll_list is not None for o in module.walk())


@dataclass(frozen=True)
class Settings:
    """One point of the search space; `pipeline()` is the pass pipeline that makes it
    from the as-written kernel."""

    sink: bool = False
    """`sink-invariants`: loop-invariant tile preparation recomputed in the loop."""
    coarsen: int = 1
    """`coarsen{factor=k}`: k row blocks per iteration (1: off)."""
    tiles_t: bool = False
    """With coarsen: keep the T-row tile shapes (`scale-tiles=false`)."""
    unroll: int | None = None
    """`set-unroll-list{factors=f}`: the unroll list [f, ..., 2, 1] (None: as written)."""
    tail: str = ""
    """`stitch2` / `stitch4` (`default{max-functions=N}`) or `default`."""

    def pipeline(self) -> str:
        parts = []
        if self.sink:
            parts.append("sink-invariants")
        if self.coarsen > 1:
            extra = " scale-tiles=false" if self.tiles_t else ""
            parts.append(f"coarsen{{factor={self.coarsen}{extra}}}")
        if self.unroll is not None:
            parts.append(f"set-unroll-list{{factors={self.unroll}}}")
        if self.tail.startswith("stitch"):
            parts.append(f"default{{max-functions={self.tail[6:]}}}")
        elif self.tail:
            parts.append(self.tail)
        return ",".join(parts)

    def label(self) -> str:
        parts = []
        if self.sink:
            parts.append("sink")
        if self.coarsen > 1:
            parts.append(f"coarsen={self.coarsen}" + (" tiles=T" if self.tiles_t else ""))
        if self.unroll is not None:
            parts.append(f"unroll={_unroll_list(self.unroll)}")
        if self.tail.startswith("stitch"):
            parts.append(f"stitch max-functions={self.tail[6:]}")
        elif self.tail:
            parts.append(self.tail)
        return " ".join(parts) or "as written"


def _unroll_list(f: int) -> str:
    out, k = [], f
    while k >= 1:
        out.append(k)
        k //= 2
    return "[" + ",".join(map(str, out)) + "]"


UNROLL_FACTORS = (1, 2, 4)
"""Largest unroll factors tried ([1], [2, 1], [4, 2, 1]): PyPTO 0.2.0 adds HUB tasks
(several µs) around an unrolled graph of more than two tasks, so the small lists win."""

STEPS = ("unroll", "sink", "coarsen", "unroll", "sink", "tiles", "tail")
"""The search: one setting at a time, each step's candidates varying that setting of the
best so far (coordinate descent). `unroll` and `sink` come twice: coarsening changes
the trip count the unroll list applies to, and sinking pays only once no HUB task
hides it (the HUB wait is as long as the dependency wait it removes)."""


def step_candidates(step: str, base: ModuleOp, best: ModuleOp, cur: Settings) -> list[Settings]:
    """The candidates of one step of `STEPS`, from the best settings so far `cur` (whose
    module is `best`), deterministic for a kernel."""
    if step == "sink":
        return [] if cur.sink else [replace(cur, sink=True)]
    if step == "unroll":
        trips = _loop_trips(best)
        return [replace(cur, unroll=f) for f in UNROLL_FACTORS if f <= max(trips, 1)]
    if step == "coarsen":
        trips = _row_trips(base)
        factors = []
        k = 2
        while k < trips:
            factors.append(k)
            k *= 2
        out = []
        for i, k in enumerate(sorted(factors + ([trips] if trips >= 2 else []), reverse=True)):
            out.append(replace(cur, coarsen=k, tiles_t=False))
            if i == 0:
                out.append(replace(cur, coarsen=k, tiles_t=True))
        return out
    if step == "tiles":
        return [replace(cur, tiles_t=True)] if cur.coarsen > 1 and not cur.tiles_t else []
    assert step == "tail", step
    tails = ["stitch2", "stitch4"] if _has_unroll_list(best) else []
    return [replace(cur, tail=t) for t in [*tails, "default"]]


# --------------------------------------------------------------------------- the judge


def cache_dir() -> Path:
    if env := os.environ.get("TILEIR_TUNE_CACHE"):
        return Path(env).expanduser()
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "tileir" / "tune"


def _key(source: str, kernel: str, args: list[ArgSpec]) -> str:
    h = hashlib.sha256()
    for part in (_cost_model(), kernel, repr(args), source):
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
    done = min(done, total)
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
    inputs: list[dict[str, np.ndarray]] | None = None,
) -> TuneResult:
    """Tune `kernel` (or the module's only kernel); see the module docstring.

    Candidates are compared with the as-written kernel on `inputs` (arrays by argument
    name; arguments not given are random), by default `N_INPUTS` random sets. Raises
    `CannotCost` when PyPTO cannot cost the as-written kernel, and `TileirError` when
    the as-written kernel fails on the numpy back end on the inputs (random indices out
    of range, say: pass `inputs`)."""
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
    given = inputs or [{} for _ in range(N_INPUTS)]
    inputs = [{**random_inputs(base, kernel, seed), **g} for seed, g in enumerate(given)]
    try:
        expected = _outputs(base, kernel, inputs)
    except TileirError as e:
        raise TileirError(
            f"{e}\nnote: the as-written kernel fails on the numpy back end on these inputs, "
            "so no candidate can be checked against it"
        ) from None
    seen: dict[str, str] = {str(base): "as written"}
    bar = _Bar(max(budget, 0) + 1, progress)
    with TemporaryDirectory(prefix="tileir-tune-") as tmp, ThreadPoolExecutor(jobs) as pool:
        folder = Path(tmp)
        written_r, written_cached = cost(base, kernel, args, folder)
        bar.step("as written")
        if not written_r.ok or written_r.time_us is None:
            bar.close()
            raise CannotCost(
                f"error: PyPTO 0.2.0 cannot cost kernel {kernel} as written: "
                f"{_first_error(written_r) if written_r.error else 'no time'}"
            )
        w_us = written_r.time_us
        written = Trial("as written", "", "ok", w_us, written_r.tasks, 1.0, written_cached)
        cur, best, best_module = Settings(), written, base
        tried: set[Settings] = {cur}
        trials: list[Trial] = []
        left = max(budget, 0)
        for step in STEPS:
            batch: list[tuple[Settings, _Job]] = []
            for cand in step_candidates(step, base, best_module, cur):
                if left <= 0:
                    break
                if cand in tried:
                    continue
                tried.add(cand)
                spec = cand.pipeline()
                job = _Job(cand.label(), spec, *_build(base, spec, kernel, inputs, expected, seen))
                if job.module is not None:
                    left -= 1
                    job.submit(pool, kernel, args, folder)
                batch.append((cand, job))
            for cand, job in batch:
                t = job.trial(w_us, bar, on_trial)
                trials.append(t)
                if t.status == "ok" and t.time_us is not None and t.time_us < best.time_us - 1e-9:  # type: ignore[operator]
                    cur, best, best_module = cand, t, job.module or base
    bar.close()
    return TuneResult(kernel, written, trials, best, best_module, time.perf_counter() - start)


def _build(
    base: ModuleOp, spec: str, kernel: str, inputs: list, expected: list, seen: dict[str, str]
) -> tuple[ModuleOp | None, str]:
    """The candidate module and its status before costing: `ok`, `differs` (numpy
    outputs), `rejected: ...`, or `same IR as ...` (not compiled again)."""
    m = base.clone()
    try:
        apply_pipeline(m, spec)
    except Exception as e:  # noqa: BLE001 - a pass refusing a kernel is a result
        return None, f"rejected: {str(e).splitlines()[0][:80]}"
    text = str(m)
    if text in seen:
        return None, f"same IR as {seen[text]}"
    try:
        emit(m)  # the PyPTO emitter refuses what 0.2.0 cannot express (an `if` on cmpi)
        same = _same(_outputs(m, kernel, inputs), expected)
    except Exception as e:  # noqa: BLE001
        return None, f"rejected: {str(e).splitlines()[0][:80]}"
    seen[text] = spec
    return (m, "ok") if same else (None, "differs")


class _Bar:
    def __init__(self, total: int, on: bool):
        self.total, self.on, self.done = total, on, 0

    def step(self, label: str) -> None:
        self.done += 1
        if self.on:
            _progress(self.done, self.total, label)

    def close(self) -> None:
        if self.on:
            print(file=sys.stderr)


class _Job:
    def __init__(self, label: str, spec: str, module: ModuleOp | None, status: str):
        self.label, self.spec, self.module, self.status = label, spec, module, status
        self.future = None

    def submit(
        self, pool: ThreadPoolExecutor, kernel: str, args: list[ArgSpec], folder: Path
    ) -> None:
        if self.module is not None:
            self.future = pool.submit(cost, self.module, kernel, args, folder)

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()

    def trial(self, w_us: float, bar: _Bar, on_trial: Callable[[Trial], None] | None) -> Trial:
        if self.future is None:
            t = Trial(self.label, self.spec, self.status)
        else:
            r, cached = self.future.result()
            if r.ok and r.time_us is not None:
                t = Trial(self.label, self.spec, "ok", r.time_us, r.tasks, r.time_us / w_us, cached)
            else:
                t = Trial(self.label, self.spec, f"pypto: {_first_error(r)}", cached=cached)
        bar.step(self.label)
        if on_trial:
            on_trial(t)
        return t


def cost_lines(module: ModuleOp) -> str:
    """One line per kernel of `module`: its cost-model time, or why there is none
    (`tileir-opt --cost`)."""
    lines = []
    with TemporaryDirectory(prefix="tileir-cost-") as tmp:
        for k in [o for o in module.walk() if isinstance(o, pto.KernelOp)]:
            name = k.sym_name.data
            r, _ = cost(ModuleOp([k.clone()]), name, kernel_args(k), Path(tmp))
            if r.ok and r.time_us is not None:
                lines.append(f"{name}: {r.time_us:.3f} us ({r.tasks} tasks)")
            else:
                lines.append(f"{name}: cannot cost: {_first_error(r)}")
    return "\n".join(lines) + "\n"


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
    "STEPS",
    "Settings",
    "cost",
    "cost_lines",
    "kernel_args",
    "step_candidates",
    "tune",
    "tuned_source",
]
