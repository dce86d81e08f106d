"""Parsing `.mlir` text with locations against plain xDSL parsing, as files grow.

    python benchmarks/parse.py [--sizes 1000,4000,16000,64000] [--repeat N] [--old]

tileir's `parse_module` parses through `LocatedParser`, which stamps a `file:line:col`
location on every op, and verifies op by op (so that an error names its op and place),
with the cyclic garbage collector paused; plain xDSL parses without locations and
verifies the module in one call. The goal (issue 18) is tileir
within 1.5x of plain xDSL at every size, i.e. no cost that grows faster than the file.
`--old` adds a column for stamping locations with xDSL's `Span.get_location`, which
counts newlines from the start of the file for every op (quadratic).

The programs are kernels of `pto.loop`s of eight ops each (view, cast, exp, add, sum,
full, div, assemble), indented, with a comment line per loop. Each figure is the best of
`--repeat` runs (seconds); timings on a loaded machine are noisy, read the ratios.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser

from tileir.diagnostics import LocatedParser, verify_located
from tileir.ir import make_context, parse_module

LOOP = """  // block {i}
  pto.loop %i{i} = %c0 to %c4 step %c1 {{
    %v{i} = pto.view %x[%i{i}, 0] : memref<4x64xbf16> -> tensor<1x64xbf16>
    %f{i} = pto.cast %v{i} : tensor<1x64xbf16> -> tensor<1x64xf32>
    %e{i} = pto.exp %f{i} : tensor<1x64xf32>
    %a{i} = pto.add %e{i}, %f{i} : tensor<1x64xf32>, tensor<1x64xf32> -> tensor<1x64xf32>
    %s{i} = pto.sum %a{i}, -1 keepdim : tensor<1x64xf32> -> tensor<1x1xf32>
    %n{i} = pto.full %c64 : f32 -> tensor<1x1xf32>
    %d{i} = pto.div %s{i}, %n{i} : tensor<1x1xf32>, tensor<1x1xf32> -> tensor<1x1xf32>
    pto.assemble %d{i} into %out[%i{i}, 0] : tensor<1x1xf32>, memref<4x1xf32>
  }}
"""
OPS_PER_LOOP = 9  # the loop and its eight ops


def program(n_ops: int) -> str:
    loops = max(1, n_ops // OPS_PER_LOOP)
    head = (
        "pto.kernel @k(%x: memref<4x64xbf16>, %out: memref<4x1xf32>) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %c1 = arith.constant 1 : index\n"
        "  %c4 = arith.constant 4 : index\n"
        "  %c64 = arith.constant 6.400000e+01 : f32\n"
    )
    return head + "".join(LOOP.format(i=i) for i in range(loops)) + "}\n"


class GetLocationParser(Parser):
    """Locations through xDSL's `Span.get_location` (what tileir did before)."""

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        loc = span.get_location()
        op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))
        return op


def plain_xdsl(text: str) -> None:
    Parser(make_context(), text, "bench.mlir").parse_module().verify()


def tileir(text: str) -> None:
    parse_module(text, "bench.mlir")


def old_tileir(text: str) -> None:
    verify_located(GetLocationParser(make_context(), text, "bench.mlir").parse_module())


def best(fn: Callable[[str], None], text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="1000,4000,16000,64000", help="ops per program")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--old", action="store_true", help="also time Span.get_location stamping")
    args = p.parse_args()
    header = f"{'ops':>8} {'lines':>8} {'MB':>6} {'xDSL s':>8} {'tileir s':>9} {'ratio':>6}"
    print(header + (f" {'old s':>8} {'old ratio':>9}" if args.old else ""))
    for size in (int(s) for s in args.sizes.split(",")):
        text = program(size)
        n_ops = sum(1 for _ in LocatedParser(make_context(), text, "x").parse_module().walk())
        plain = best(plain_xdsl, text, args.repeat)
        ours = best(tileir, text, args.repeat)
        row = (
            f"{n_ops:>8} {text.count(chr(10)):>8} {len(text) / 1e6:>6.2f} "
            f"{plain:>8.2f} {ours:>9.2f} {ours / plain:>6.2f}"
        )
        if args.old:
            old = best(old_tileir, text, args.repeat)
            row += f" {old:>8.2f} {old / plain:>9.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
