"""Where a pipeline's time goes: wall and CPU time per step, reported as
`mlir-opt --mlir-timing` reports it.

`tileir-opt --time-passes` and `apply_pipeline(..., timings=Timings())` fill one
`Timings`: each pass of the pipeline (a composite pass such as `default` step by step)
is a row of its own, and so are the work around the passes, in brackets (a pass name
never has them): `[parse]` (or reading a `.py` kernel), `[nesting check]`,
`[contracts]` (what each pass requires, and with --verify-each establishes),
`[verify]`, `[verify-semantics]`, `[output]`. Rows come in the order of their first
use; a bracketed row that runs more than once (verification after every pass) adds up.
CPU time is the process's user + system time (`time.process_time`), which moves less
than the wall clock on a shared machine. Start-up (the imports before the command line
is read) is not in it: `benchmarks/startup.py` measures that.

`tileir-opt frontends/kernels/gelu.py -p default -t pypto --time-passes` (rows left out
where the dots are):

```text
===-------------------------------------------------------------------------===
                         ... Execution time report ...
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0936 seconds (the sum of the rows)

  ----Wall Time----  ----CPU Time-----  ----Name----
    0.0380 ( 40.6%)    0.0380 ( 40.6%)  [parse]
    0.0002 (  0.2%)    0.0002 (  0.2%)  [contracts]
    0.0001 (  0.1%)    0.0001 (  0.1%)  inplace-reshape
    0.0010 (  1.1%)    0.0010 (  1.1%)  vc-split
    ...
    0.0052 (  5.6%)    0.0052 (  5.6%)  [verify]
    0.0382 ( 40.8%)    0.0382 ( 40.8%)  [output]
    0.0936 (100.0%)    0.0936 (100.0%)  Total
```
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

_RULE = "===" + "-" * 73 + "==="


def step_labels(names: Sequence[str]) -> list[str]:
    """The row of each step of a pipeline: its pass name, with ` (2)`, ` (3)` ... after
    a name that came before (two runs of one pass are two steps, not one row)."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return labels


def clock() -> tuple[float, float]:
    """The wall and CPU clocks now, in seconds."""
    return time.perf_counter(), time.process_time()


def timed(timings: Timings | None, label: str) -> AbstractContextManager[None]:
    """`timings.span(label)`, or nothing to time without `timings`."""
    return timings.span(label) if timings is not None else nullcontext()


@dataclass
class Timings:
    """Wall and CPU seconds per named row, in the order of first use."""

    rows: dict[str, tuple[float, float]] = field(default_factory=dict)

    def add(self, label: str, wall: float, cpu: float) -> None:
        before = self.rows.get(label, (0.0, 0.0))
        self.rows[label] = (before[0] + wall, before[1] + cpu)

    def add_since(self, label: str, start: tuple[float, float]) -> None:
        """Add the time from `start` (a `clock()` reading) until now to the row `label`."""
        wall, cpu = clock()
        self.add(label, wall - start[0], cpu - start[1])

    @contextmanager
    def span(self, label: str) -> Iterator[None]:
        """Time the `with` body into the row `label` (also when it raises)."""
        start = clock()
        try:
            yield
        finally:
            self.add_since(label, start)

    def report(self) -> str:
        """The rows as `mlir-opt --mlir-timing` prints its report, with a CPU column."""
        total_wall = sum(w for w, _ in self.rows.values())
        total_cpu = sum(c for _, c in self.rows.values())

        def cell(part: float, whole: float) -> str:
            share = 100 * part / whole if whole > 0 else 0.0
            return f"{part:8.4f} ({share:5.1f}%)"

        lines = [
            _RULE,
            f"{'... Execution time report ...':^80}".rstrip(),
            _RULE,
            f"  Total Execution Time: {total_wall:.4f} seconds (the sum of the rows)",
            "",
            "  ----Wall Time----  ----CPU Time-----  ----Name----",
        ]
        for label, (wall, cpu) in [*self.rows.items(), ("Total", (total_wall, total_cpu))]:
            lines.append(f"  {cell(wall, total_wall)}  {cell(cpu, total_cpu)}  {label}")
        return "\n".join(lines) + "\n"


__all__ = ["Timings", "clock", "step_labels", "timed"]
