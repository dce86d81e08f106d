"""`tileir-opt --time-passes` (a report on stderr, as `mlir-opt --mlir-timing` prints
it), `--print-between-passes`, `apply_pipeline(..., timings=...)`, and a stdout reader
that goes away."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tileir import parse_module, print_module
from tileir.passes import apply_pipeline
from tileir.timing import Timings, step_labels
from tileir.tools.opt import main

KERNEL = """pto.kernel @k(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  pto.loop %i = %c0 to %c4 step %c1 unroll [2, 1] {
    %r = arith.muli %i, %c8 : index
    %t = pto.view %x[%r, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    %s = pto.sum %e, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    %d = pto.div %e, %s : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
    pto.assemble %d into %out[%r, 0] : tensor<8x64xf32>, memref<32x64xf32>
  }
}
"""

DEFAULT_STEPS = [
    "inplace-reshape",
    "vc-split",
    "semantic-labels",
    "loop-unroll",
    "stitch",
    "canonicalize",
    "cse",
]

_ROW = re.compile(r"^\s+(\d+\.\d{4}) \(\s*(\d+\.\d)%\)\s+(\d+\.\d{4}) \(\s*(\d+\.\d)%\)  (.+)$")


def _rows(report: str) -> list[tuple[str, float, float, float, float]]:
    """(name, wall, wall %, cpu, cpu %) of each row of a report, Total last."""
    rows = []
    for line in report.splitlines():
        m = _ROW.match(line)
        if m:
            wall, wall_pct, cpu, cpu_pct, name = m.groups()
            rows.append((name, float(wall), float(wall_pct), float(cpu), float(cpu_pct)))
    return rows


def _opt(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    text: str = KERNEL,
    exit_code: int = 0,
) -> tuple[str, str]:
    """stdout and stderr of `tileir-opt` on a file holding `text`, which must exit with
    `exit_code`."""
    path = tmp_path / "k.mlir"
    path.write_text(text)
    assert main([str(path), *args]) == exit_code
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_time_passes_reports_each_step_on_stderr_and_leaves_stdout_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, err = _opt(tmp_path, capsys, "-p", "default")
    assert err == ""
    timed, report = _opt(tmp_path, capsys, "-p", "default", "--time-passes")
    assert timed == plain
    assert "... Execution time report ..." in report
    rows = _rows(report)
    names = [r[0] for r in rows]
    # every step of `default`, in the order it runs, between parsing and the output
    assert names == ["[parse]", "[contracts]", *DEFAULT_STEPS, "[verify]", "[output]", "Total"]
    *steps, total = rows
    # the Total row is the sum of the rows (each printed to 4 places)
    assert total[1] == pytest.approx(sum(r[1] for r in steps), abs=1e-4 * len(steps))
    assert total[3] == pytest.approx(sum(r[3] for r in steps), abs=1e-4 * len(steps))
    assert total[2] == total[4] == 100.0
    assert sum(r[2] for r in steps) == pytest.approx(100.0, abs=0.1 * len(steps))
    assert f"Total Execution Time: {total[1]:.4f} seconds" in report


def test_time_passes_with_verify_each_adds_up_verification_in_one_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _opt(
        tmp_path,
        capsys,
        "-p",
        "vc-split,canonicalize,canonicalize",
        "--time-passes",
        "--verify-each",
    )
    names = [r[0] for r in _rows(report)]
    assert names == [
        "[parse]",
        "[contracts]",
        "vc-split",
        "[verify]",
        "canonicalize",
        "canonicalize (2)",
        "[output]",
        "Total",
    ]


def test_time_passes_sums_the_chunks_of_a_split_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = KERNEL + "// -----\n" + KERNEL.replace("@k(", "@k2(")
    out, err = _opt(
        tmp_path, capsys, "--split-input-file", "-p", "vc-split", "--time-passes", text=two
    )
    assert out.count("pto.kernel @") == 2
    names = [r[0] for r in _rows(err)]
    assert names == ["[parse]", "[contracts]", "vc-split", "[verify]", "[output]", "Total"]


def test_print_between_passes_prints_the_ir_after_each_pass_but_the_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = _opt(tmp_path, capsys, "-p", "vc-split,semantic-labels", "--print-between-passes")
    assert out.count("IR after ") == 1
    between, final = out.split("IR after vc-split:\n", 1)[1].split("\n\n\n\n", 1)
    # what vc-split alone makes of the kernel, independently of the flag
    alone = apply_pipeline(parse_module(KERNEL, "k.mlir"), "vc-split")
    assert print_module(parse_module(between, "between.mlir")) == print_module(alone)
    labelled = apply_pipeline(parse_module(KERNEL, "k.mlir"), "vc-split,semantic-labels")
    assert print_module(parse_module(final, "final.mlir")) == print_module(labelled)


def test_a_reader_that_goes_away_ends_the_tool_quietly(tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tileir.tools.opt", str(path), "-p", "default"]
        + ["--print-between-passes", "--print-op-generic"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # then the reader goes away, as `| head -c 10` does
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err  # 128 + SIGPIPE, as a tool SIGPIPE kills
    assert err == ""


def test_apply_pipeline_fills_timings_step_by_step() -> None:
    timings = Timings()
    apply_pipeline(parse_module(KERNEL, "k.mlir"), "default", timings=timings)
    assert list(timings.rows) == ["[nesting check]", "[contracts]", *DEFAULT_STEPS, "[verify]"]
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in timings.rows.values())


def test_step_labels_number_the_repeats_of_a_pass() -> None:
    assert step_labels(["a", "b", "a", "a", "c"]) == ["a", "b", "a (2)", "a (3)", "c"]


def test_report_shares_and_total_by_hand() -> None:
    timings = Timings()
    timings.add("[parse]", 1.0, 0.5)
    timings.add("x", 2.0, 1.0)
    timings.add("[parse]", 1.0, 0.5)  # a row that runs twice adds up
    lines = timings.report().splitlines()
    assert lines[3] == "  Total Execution Time: 4.0000 seconds (the sum of the rows)"
    assert lines[5] == "  ----Wall Time----  ----CPU Time-----  ----Name----"
    assert lines[6:] == [
        "    2.0000 ( 50.0%)    1.0000 ( 50.0%)  [parse]",
        "    2.0000 ( 50.0%)    1.0000 ( 50.0%)  x",
        "    4.0000 (100.0%)    2.0000 (100.0%)  Total",
    ]


def test_parsing_diagnostics_prints_a_syntax_error_and_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    syntax_error = KERNEL.replace("pto.exp %t", "pto.expo %t")
    out, _ = _opt(tmp_path, capsys, "--parsing-diagnostics", text=syntax_error)
    assert f"{tmp_path / 'k.mlir'}:9:19: error: Operation pto.expo is not registered" in out
    # a verifier error is no syntax error: it still fails
    verifier_error = KERNEL.replace("%x[%r, 0]", "%x[%r, 0, 0]")
    _opt(tmp_path, capsys, "--parsing-diagnostics", text=verifier_error, exit_code=1)
