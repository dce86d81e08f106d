"""Nothing half-written (issue 18, item 4): `tileir-run` and `tileir-opt -o` write all
their outputs or none, leave no temporary file when a write fails or a signal arrives,
exit without a traceback on Ctrl-C even during start-up, and create files with the
user's umask.

The signal tests are deterministic: TILEIR_TEST_PAUSE=POINT:FILE makes the tool create
FILE and sleep at POINT, and the test sends the signal once FILE exists."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

TWO_OUTPUTS = """pto.kernel @two(%x: memref<8x64xf32>, %a: memref<8x64xf32>, %b: memref<8x64xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %e = pto.exp %t : tensor<8x64xf32>
  %n = pto.neg %t : tensor<8x64xf32>
  pto.assemble %e into %a[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
  pto.assemble %n into %b[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
}
"""

RUN = [sys.executable, "-m", "tileir.tools.run"]
OPT = [sys.executable, "-m", "tileir.tools.opt"]


@pytest.fixture
def two(tmp_path: Path) -> Path:
    path = tmp_path / "two.mlir"
    path.write_text(TWO_OUTPUTS)
    return path


def entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def run_with_umask(cmd: list[str], umask: int) -> subprocess.CompletedProcess[str]:
    def preexec() -> None:
        os.umask(umask)

    return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=preexec, timeout=300)


def test_second_output_that_is_a_folder_writes_nothing(two: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "b.npy").mkdir(parents=True)
    p = subprocess.run(
        [*RUN, str(two), "--random-inputs", "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1
    assert p.stderr.strip() == f"error: cannot write {out / 'b.npy'}: it is a directory"
    assert entries(out) == ["b.npy"]  # no a.npy, no temporary folder


def test_a_failed_run_keeps_the_previous_outputs(two: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.npy").write_bytes(b"old")
    (out / "b.npy").mkdir()
    p = subprocess.run(
        [*RUN, str(two), "--random-inputs", "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1
    assert (out / "a.npy").read_bytes() == b"old"


def start_paused(cmd: list[str], point: str, tmp_path: Path) -> subprocess.Popen[str]:
    ready = tmp_path / f"ready-{point}"
    env = {**os.environ, "TILEIR_TEST_PAUSE": f"{point}:{ready}"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    while not ready.exists():  # waits for the tool to reach POINT, however long that takes
        if proc.poll() is not None:
            pytest.fail(f"the tool ended before {point}: {proc.communicate()}")
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_during_the_write_leaves_no_temporary_file(
    two: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.npy").write_bytes(b"old")
    proc = start_paused(
        [*RUN, str(two), "--random-inputs", "--output-dir", str(out)], "write", tmp_path
    )
    # Paused after a.npy is written to the temporary folder, before b.npy.
    hidden = [name for name in entries(out) if name.startswith(".")]
    assert len(hidden) == 1 and entries(out / hidden[0]) == ["a.npy"]
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + sig
    assert "Traceback" not in err
    assert entries(out) == ["a.npy"] and (out / "a.npy").read_bytes() == b"old"


@pytest.mark.parametrize("tool", ["run", "opt"])
def test_ctrl_c_during_start_up_is_not_a_traceback(tool: str, two: Path, tmp_path: Path) -> None:
    cmd = RUN + [str(two), "--random-inputs", "--output-dir", str(tmp_path / "out")]
    if tool == "opt":
        cmd = OPT + [str(two), "-o", str(tmp_path / "out.mlir")]
    proc = start_paused(cmd, "startup", tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.mlir").exists()


def test_start_up_imports_no_xdsl_before_main() -> None:
    # What makes the start-up interruptible: the tools' modules import little.
    code = "import sys, tileir.tools.run, tileir.tools.opt; print(any(m.startswith(('xdsl', 'numpy')) for m in sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "False"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_get_the_users_umask(two: Path, tmp_path: Path, umask: int) -> None:
    out = tmp_path / "out"
    p = run_with_umask([*RUN, str(two), "--random-inputs", "--output-dir", str(out)], umask)
    assert p.returncode == 0, p.stderr
    mlir = tmp_path / "two-out.mlir"
    p = run_with_umask([*OPT, str(two), "-o", str(mlir)], umask)
    assert p.returncode == 0, p.stderr
    for f in (out / "a.npy", out / "b.npy", mlir):
        assert f.stat().st_mode & 0o777 == 0o666 & ~umask, f
    assert entries(out) == ["a.npy", "b.npy"]
    # a = exp(x), b = -x: both files hold the complete arrays.
    np.testing.assert_allclose(np.exp(-np.load(out / "b.npy")), np.load(out / "a.npy"), rtol=1e-6)


def test_opt_leaves_the_output_file_untouched_when_parsing_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("pto.kernel @k( {\n")
    target = tmp_path / "result.mlir"
    target.write_text("precious\n")
    p = subprocess.run([*OPT, str(bad), "-o", str(target)], capture_output=True, text=True)
    assert p.returncode == 1 and f"{bad}:1:" in p.stderr
    assert target.read_text() == "precious\n"
    assert entries(tmp_path) == ["bad.mlir", "result.mlir"]


def test_opt_output_into_a_folder_is_a_clean_error(two: Path, tmp_path: Path) -> None:
    target = tmp_path / "folder"
    target.mkdir()
    p = subprocess.run([*OPT, str(two), "-o", str(target)], capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.strip() == f"error: cannot write {target}: it is a directory"


def test_opt_sigterm_while_running_leaves_the_output_file(two: Path, tmp_path: Path) -> None:
    target = tmp_path / "result.mlir"
    target.write_text("precious\n")
    proc = start_paused([*OPT, str(two), "-o", str(target)], "write", tmp_path)
    # Paused with the new output written to a temporary folder beside the target.
    assert (
        len(entries(tmp_path)) == 4
        and "pto.kernel @two"
        in target.parent.joinpath(
            next(n for n in entries(tmp_path) if n.startswith(".")), "result.mlir"
        ).read_text()
    )
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=300)
    assert proc.returncode == 143
    assert target.read_text() == "precious\n"
    assert entries(tmp_path) == ["ready-write", "result.mlir", "two.mlir"]
