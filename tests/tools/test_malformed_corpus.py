"""The malformed-input corpus (issue 18): every case of malformed_cases.py, run through
tileir-opt / tileir-run in a child process with CPU-time and memory bounds, ends with
exit code 1, no traceback, and an error that names the file (with `line:col` wherever
the input has a place).

The cases run in batches (one runner process per batch forks a child per case), so
that the corpus is quick and spreads over xdist workers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from malformed_cases import MLIR, PY, cases

RUNNER = Path(__file__).with_name("malformed_runner.py")
ROOT = Path(__file__).resolve().parents[2]
CASES = list(cases())
BATCH = 12
BATCHES = [CASES[i : i + BATCH] for i in range(0, len(CASES), BATCH)]


def test_the_corpus_is_large_enough() -> None:
    assert len(MLIR) >= 80 and len(PY) >= 50
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize("batch", range(len(BATCHES)), ids=lambda i: f"batch{i}")
def test_malformed_inputs_fail_cleanly(batch: int, tmp_path: Path) -> None:
    todo = []
    for name, suffix, content, tool in BATCHES[batch]:
        path = tmp_path / f"{name}{suffix}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        todo.append((tool, str(path)))
    spec = tmp_path / "batch.json"
    spec.write_text(json.dumps(todo))
    proc = subprocess.run(
        [sys.executable, str(RUNNER), str(spec)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3000,  # a hang guard for the whole batch, not a speed bound
    )
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(todo)
    problems = []
    for (name, *_), r in zip(BATCHES[batch], results, strict=True):
        err: str = r["stderr"]
        first = err.splitlines()[0] if err else ""
        located = re.match(re.escape(r["path"]) + r"(:\d+:\d+)?: error: .", first)
        if r["exit"] != 1 or "Traceback" in err or not located:
            problems.append(f"{name}: exit {r['exit']}: {err[:300]!r}")
    assert not problems, "\n".join(problems)
