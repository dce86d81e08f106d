"""`tileir-tune`: find the pass settings that make a PyPTO kernel fastest in PyPTO's
own cost model, and write the tuned kernel as PyPTO source.

    tileir-tune KERNEL.py [--kernel K] [--budget N] [-j N] [-o TUNED.py]

Every candidate (unroll list, sink-invariants, coarsen factors, tiles, stitch, default;
`tileir.tuning`) is
checked on the numpy back end against the as-written kernel (bit for bit, random
inputs) and compiled by the real pypto 0.2.0 in SIM mode, `-j` at a time. The table of
every candidate goes to stdout, the progress bar to stderr; `-o` receives the whole
file with the tuned kernel (same kernel names and parameters: a drop-in replacement).
Results are cached by source hash under ~/.cache/tileir/tune, so a rerun costs
nothing. A kernel that PyPTO 0.2.0 cannot cost (gathermask: F92001) is an error (exit 1).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tileir.diagnostics import TileirError, format_exception


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tileir-tune", description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a PyPTO kernel file (.py)")
    parser.add_argument("--kernel", help="the kernel to tune (default: the file's only one)")
    parser.add_argument("--budget", type=int, default=None, help="candidates to compile")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="compiles in parallel")
    parser.add_argument("-o", "--output", type=Path, help="write the tuned file here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    ns = parser.parse_args(argv)
    try:
        from frontends.pypto import load_file
        from tileir.backends.pypto.harness import pypto_available
        from tileir.tuning import DEFAULT_BUDGET, tune, tuned_source

        if ns.jobs < 1:
            raise TileirError(f"error: -j {ns.jobs}: must be at least 1")
        module = load_file(ns.file)
        if not pypto_available():
            raise TileirError("error: pypto is not importable: tuning needs pypto==0.2.0")
        budget = DEFAULT_BUDGET if ns.budget is None else ns.budget
        result = tune(module, ns.kernel, budget=budget, jobs=ns.jobs, progress=not ns.no_progress)
        print(f"kernel {result.kernel}: {len(result.trials)} candidates, {result.seconds:.0f} s")
        print(result.table())
        print(
            f"best: {result.best.settings} {result.best.time_us:.3f} µs "
            f"({result.best.ratio:.3f}x of as written)"
        )
        if ns.output is not None:
            text = tuned_source(module, result)
            tmp = ns.output.with_name(ns.output.name + f".tmp{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, ns.output)
    except TileirError as e:
        print(str(e), file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(format_exception(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
