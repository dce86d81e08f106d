"""Pass time as programs grow: each tileir pass against xDSL's own `canonicalize`.

    python benchmarks/passes.py [--sizes 1000,10000,100000] [--repeat N] [--only ROW ...]
    python benchmarks/passes.py --breakdown default [--sizes ...] [--repeat N]

The programs are long kernels in the shape of the seed kernels (SK-03 blocks: a row
view, RMSNorm, a matmul against a weight, an exp, two reshapes, an assemble, with tile
shape and label settings), built with xDSL's `Builder`: loops of eight blocks each, as
many loops as the size asks for. For every row of `ROWS` the script prints the time per
1k ops at each size, the growth from the second-largest to the largest size (10k ->
100k: linear is 10x, the goal is at most 12x), and the pass's time as a fraction of
`canonicalize`'s on the same module (the goal is at most 0.3x).

Some rows change the size of what they work on (loop-unroll{factors=4} writes four
times the ops it reads; stitch here reads loop-unroll's output; `default` adds stage
ops). Three ratios are printed at the largest size:
- `x canonicalize`: the row's time over `canonicalize`'s on the generated module, whole
  times, so that a row that reads a prepared module (stitch: four times the ops) is
  charged for it;
- `x canonicalize, same input`: over `canonicalize`'s on the very module the row reads
  (the prepared one; for an unprepared row the same figure as the first). This is how
  two passes are compared on equal terms. `canonicalize` may cost more per op on a
  prepared module than on the generated one: on loop-unroll's output it erases a few
  dead constants in its first round and so runs a second round, twice the time per op;
- `x canonicalize per op handled`: the first ratio with each time divided by the ops it
  handled (the larger of the ops it read and the ops it wrote, against the generated
  module's count for `canonicalize`): a per-op rate, for comparison, not a replacement.

A row is a pass name and the pipeline that prepares its input (semantic-labels runs on
vc-split's output); other passes are one more `Row(...)` line. The preparation and the
module clone are not timed; each figure is the best of `--repeat` runs, and each row's
`canonicalize` runs alternate with its own, so that its ratio compares runs made under
the same load.

`--breakdown PIPELINE` prints instead where one pipeline's time goes at the largest
size: every step, the contracts checked before the steps, the nesting check and the
one verification at the end, each against `canonicalize` timed in the same run.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    f32,
)
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass, PassPipeline
from xdsl.rewriter import InsertPoint

from tileir.dialect import pto
from tileir.ir import make_context
from tileir.passes import get_all_passes


@dataclass(frozen=True)
class Row:
    name: str
    """The pass, as a pipeline string (`vc-split`, `loop-unroll{max=8}` ...)."""
    prepare: str = ""
    """The pipeline that makes the pass's input from the generated module."""


ROWS: tuple[Row, ...] = (
    Row("vc-split"),
    Row("semantic-labels", prepare="vc-split"),
    Row("inplace-reshape"),
    Row("vc-split,semantic-labels,inplace-reshape"),
    Row("loop-unroll{factors=4}"),
    Row("stitch{max-functions=2}", prepare="loop-unroll{factors=4}"),
    Row("default"),
    Row("default{unroll-factors=4}"),
)
REFERENCE = Row("canonicalize")

BLOCKS_PER_LOOP = 8
ROWS_PER_TILE = 8
HIDDEN = 64


def _tensor(*shape: int) -> TensorType:
    return TensorType(f32, shape)


def _block(b: Builder, i: SSAValue, x: SSAValue, w: SSAValue, out: SSAValue, k: int) -> None:
    """One SK-03 block: 16 ops."""
    c8 = b.insert(arith.ConstantOp(IntegerAttr(ROWS_PER_TILE, IndexType()))).result
    off = b.insert(arith.MuliOp(i, c8)).result
    b.insert(pto.SetVecTileShapesOp([ROWS_PER_TILE, HIDDEN]))
    if k % 2 == 0:
        b.insert(pto.SetSemanticLabelOp("rmsnorm"))
    tile = _tensor(ROWS_PER_TILE, HIDDEN)
    t = b.insert(pto.ViewOp(x, [off, 0], tile)).result
    sq = b.insert(pto.MulOp(t, t, tile)).result
    ss = b.insert(pto.SumOp(sq, -1, True, _tensor(ROWS_PER_TILE, 1))).result
    r = b.insert(pto.RsqrtOp(ss)).result
    y = b.insert(pto.MulOp(t, r, tile)).result
    wt = b.insert(pto.ViewOp(w, [0, 0], _tensor(HIDDEN, HIDDEN))).result
    m = b.insert(pto.MatmulOp(y, wt, tile)).result
    e = b.insert(pto.ExpOp(m)).result
    flat = b.insert(pto.ReshapeOp(e, _tensor(ROWS_PER_TILE * HIDDEN))).result
    half = b.insert(arith.ConstantOp(FloatAttr(0.5, f32))).result
    n = b.insert(pto.MulOp(flat, half, _tensor(ROWS_PER_TILE * HIDDEN))).result
    back = b.insert(pto.ReshapeOp(n, tile)).result
    b.insert(pto.AssembleOp(back, out, [off, 0]))


OPS_PER_LOOP = 16 * BLOCKS_PER_LOOP + BLOCKS_PER_LOOP // 2 + 2  # blocks, labels, loop, yield


def make_module(n_ops: int) -> ModuleOp:
    """One kernel of about `n_ops` ops: loops of SK-03 blocks."""
    rows = ROWS_PER_TILE * 4
    x_t = MemRefType(f32, [rows, HIDDEN])
    w_t = MemRefType(f32, [HIDDEN, HIDDEN])
    kernel = pto.KernelOp("long", [("x", x_t), ("w", w_t), ("out", x_t)])
    x, w, out = kernel.body.block.args
    b = Builder(InsertPoint.at_end(kernel.body.block))
    lb = b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result
    ub = b.insert(arith.ConstantOp(IntegerAttr(4, IndexType()))).result
    step = b.insert(arith.ConstantOp(IntegerAttr(1, IndexType()))).result
    for _ in range(max(1, round(n_ops / OPS_PER_LOOP))):
        body = Block(arg_types=[IndexType()])
        inner = Builder(InsertPoint.at_end(body))
        for k in range(BLOCKS_PER_LOOP):
            _block(inner, body.args[0], x, w, out, k)
        inner.insert(pto.YieldOp())
        b.insert(pto.LoopOp(lb, ub, step, Region(body)))
    b.insert(pto.YieldOp())
    return ModuleOp([kernel])


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk()) - 1


def _pipeline(spec: str) -> list[ModulePass]:
    if not spec:
        return []
    available = dict(get_all_passes())
    from xdsl.transforms import get_all_passes as xdsl_passes

    for name, factory in xdsl_passes().items():
        available.setdefault(name, factory)
    return list(PassPipeline.parse_spec(available, spec).passes)


@dataclass(frozen=True)
class Timing:
    best: float
    """Best CPU time of the row, in seconds."""
    reference: float
    """Best CPU time of `canonicalize` on the generated module, timed in turn with it."""
    same_input: float
    """Best CPU time of `canonicalize` on the module the row reads (the prepared one),
    timed in turn with it; `reference` for a row without preparation."""
    handled: int
    """The larger of the ops the row read and the ops it wrote."""


def time_row(row: Row, module: ModuleOp, repeat: int) -> Timing:
    """Best CPU time of `row` on (a prepared clone of) `module`, best CPU time of
    `canonicalize` on a clone of `module` and, for a prepared row, on a clone of the
    prepared module, in seconds, all timed in turn (CPU time, not wall time: on a
    shared machine the wall clock measures the other tenants; in turn, so that a
    machine that slows down or speeds up between rows moves all figures of a ratio
    alike)."""
    ctx = make_context()
    prepared = module.clone()
    for p in _pipeline(row.prepare):
        p.apply(ctx, prepared)
    passes = _pipeline(row.name)
    reference = _pipeline(REFERENCE.name)
    best = best_reference = best_same = float("inf")
    handled = count_ops(prepared)
    for _ in range(repeat):
        work = prepared.clone()
        best = min(best, _timed_run(ctx, passes, work))
        best_reference = min(best_reference, _timed_run(ctx, reference, module.clone()))
        if row.prepare:
            best_same = min(best_same, _timed_run(ctx, reference, prepared.clone()))
    same = best_same if row.prepare else best_reference
    return Timing(best, best_reference, same, max(handled, count_ops(work)))


def _timed_run(ctx: Context, passes: Sequence[ModulePass], work: ModuleOp) -> float:
    gc.collect()
    gc.disable()
    start = time.process_time()
    for p in passes:
        p.apply(ctx, work)
    spent = time.process_time() - start
    gc.enable()
    return spent


def run(sizes: Sequence[int], repeat: int, only: Sequence[str] = ()) -> list[str]:
    """The table: per row, ms per 1k ops at each size, the growth between the two
    largest sizes, and the ratio to the `canonicalize` runs timed in turn with it; the
    `canonicalize` row is the best of all its runs."""
    known = {r.name: r for r in ROWS}
    # A name that is not a row of the table is a pipeline to time on the raw module.
    rows = [known.get(name, Row(name)) for name in only] if only else list(ROWS)
    modules = {n: make_module(n) for n in sizes}
    counts = {n: count_ops(m) for n, m in modules.items()}
    times: dict[str, dict[int, float]] = {}
    paired: dict[str, dict[int, float]] = {}
    same: dict[str, float] = {}
    handled: dict[str, int] = {}
    last = sizes[-1]
    for row in rows:
        timings = {n: time_row(row, modules[n], repeat) for n in sizes}
        times[row.name] = {n: t.best for n, t in timings.items()}
        paired[row.name] = {n: t.reference for n, t in timings.items()}
        handled[row.name] = timings[last].handled
        same[row.name] = timings[last].same_input
    times[REFERENCE.name] = {n: min(p[n] for p in paired.values()) for n in sizes}
    paired[REFERENCE.name] = times[REFERENCE.name]
    same[REFERENCE.name] = times[REFERENCE.name][last]
    handled[REFERENCE.name] = counts[last]
    head = " | ".join(f"ms/1k @{counts[n]:,}" for n in sizes)
    lines = [
        f"| pass | {head} | growth {sizes[-2]:,}->{last:,} | x canonicalize @{last:,} "
        f"| x canonicalize, same input | ops handled @{last:,} "
        "| x canonicalize per op handled |",
        "|" + "---|" * (len(sizes) + 6),
    ]
    for row in [*rows, REFERENCE]:
        t = times[row.name]
        per_k = " | ".join(f"{1000 * t[n] / counts[n] * 1000:.2f}" for n in sizes)
        growth = t[last] / t[sizes[-2]] if len(sizes) > 1 else float("nan")
        ratio = t[last] / paired[row.name][last]
        per_op = ratio * counts[last] / handled[row.name]
        lines.append(
            f"| {row.name} | {per_k} | {growth:.1f}x | {ratio:.2f}x "
            f"| {t[last] / same[row.name]:.2f}x | {handled[row.name]:,} | {per_op:.2f}x |"
        )
    return lines


def breakdown(n_ops: int, spec: str, repeat: int) -> list[str]:
    """Where the time of the pipeline `spec` goes: each step's CPU time (and the
    nesting check, the contracts and the final verification) against `canonicalize`
    on the same module, medians of `repeat` interleaved runs."""
    from tileir.diagnostics import verify_located
    from tileir.passes.contracts import check_requires, expand
    from tileir.passes.pipeline import _check_nesting

    module = make_module(n_ops)
    ctx = make_context()
    runs: list[dict[str, float]] = []
    for _ in range(repeat):
        run: dict[str, float] = {}

        def timed(label: str, fn: Callable[[], object], run: dict[str, float] = run) -> None:
            start = time.process_time()
            fn()
            run[label] = run.get(label, 0.0) + time.process_time() - start

        work, reference = module.clone(), module.clone()
        canonicalize = _pipeline("canonicalize")[0]
        gc.collect()
        gc.disable()
        timed("nesting check", lambda w=work: _check_nesting(w))
        for p in expand(_pipeline(spec)):
            timed("contracts (requires)", lambda p=p, w=work: check_requires(p, w))
            timed(p.name, lambda p=p, w=work: p.apply(ctx, w))
        timed("verify (once, at the end)", lambda w=work: verify_located(w))
        timed("reference", lambda c=canonicalize, r=reference: c.apply(ctx, r))
        gc.enable()
        runs.append(run)
    ref = statistics.median(r.pop("reference") for r in runs)
    lines = [
        f"| step of {spec} @{count_ops(module):,} ops | ms | x canonicalize |",
        "|---|---|---|",
    ]
    for label in runs[0]:
        t = statistics.median(r[label] for r in runs)
        lines.append(f"| {label} | {1000 * t:.0f} | {t / ref:.2f}x |")
    total = statistics.median(sum(r.values()) for r in runs)
    lines.append(f"| total | {1000 * total:.0f} | {total / ref:.2f}x |")
    lines.append(f"| canonicalize alone (reference) | {1000 * ref:.0f} | 1.00x |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="a row of ROWS, or any pipeline, to time (repeatable); default: all of ROWS",
    )
    parser.add_argument(
        "--breakdown",
        metavar="PIPELINE",
        help="instead of the table: where PIPELINE's time goes, step by step, at the "
        "largest size (e.g. --breakdown default)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.breakdown:
        for line in breakdown(sizes[-1], args.breakdown, args.repeat):
            print(line)
        return
    if len(sizes) < 2:
        parser.error("give at least two sizes")
    for line in run(sizes, args.repeat, args.only):
        print(line)


if __name__ == "__main__":
    main()
