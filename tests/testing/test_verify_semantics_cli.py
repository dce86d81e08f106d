"""`tileir-opt --verify-semantics[=N]`: translation validation of a user's pipeline."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from planted_passes import SwapSubOperands

from tileir.tools.opt import TileirOptMain, main

KERNEL = """pto.kernel @k(%x: memref<4x8xf32>, %y: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %a = pto.view %x[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
  %b = pto.view %y[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
  %d = pto.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %e = pto.sub %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = pto.add %d, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  pto.assemble %s into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
}
"""


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    return path


@pytest.fixture
def with_planted_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registers the wrong pass `planted-swap-sub` in tileir-opt for one test."""
    original = TileirOptMain.register_all_passes

    def register(self: TileirOptMain) -> None:
        original(self)
        self.register_pass(SwapSubOperands.name, lambda: SwapSubOperands)

    monkeypatch.setattr(TileirOptMain, "register_all_passes", register)


def test_a_correct_pipeline_runs_as_without_the_option(kernel_file, capsys):
    assert main([str(kernel_file), "-p", "cse,canonicalize"]) == 0
    plain = capsys.readouterr().out
    # the bare flag before the file must not swallow the file name as N
    assert main(["--verify-semantics", str(kernel_file), "-p", "cse,canonicalize"]) == 0
    captured = capsys.readouterr()
    assert captured.out == plain
    assert captured.err == ""
    # cse merged the two subtractions
    assert plain.count("pto.sub") == 1


def test_a_wrong_pass_stops_the_pipeline_with_a_reproducer(
    kernel_file, capsys, with_planted_pass, tmp_path, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the reproducer goes
    code = main([str(kernel_file), "-p", "cse,planted-swap-sub", "--verify-semantics=2"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert "Traceback" not in captured.err
    err = captured.err
    assert err.startswith("error: --verify-semantics: pass 'planted-swap-sub' changed the meaning")
    assert "output 'out' differs at index" in err
    match = re.search(r"reproducer \(the module before the pass\) written to (\S+)", err)
    assert match is not None
    repro = Path(match.group(1))
    assert repro.parent == tmp_path
    text = repro.read_text()
    # the module *after cse* (one sub), before the wrong pass
    assert text.count("pto.sub") == 1
    assert "// Run: tileir-opt THIS_FILE -p 'planted-swap-sub' --verify-semantics=2" in text
    # running the reproducer's command reproduces the failure; cse alone is fine
    assert main([str(repro), "-p", "planted-swap-sub", "--verify-semantics=2"]) == 1
    assert "planted-swap-sub" in capsys.readouterr().err
    assert main([str(repro), "-p", "cse", "--verify-semantics=2"]) == 0


def test_without_the_option_the_wrong_pass_goes_unnoticed(kernel_file, with_planted_pass, capsys):
    assert main([str(kernel_file), "-p", "planted-swap-sub"]) == 0
    assert "pto.sub %b, %a" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["0", "-1", "many"])
def test_a_bad_input_count_is_a_usage_error(kernel_file, capsys, bad):
    with pytest.raises(SystemExit) as info:
        main([str(kernel_file), f"--verify-semantics={bad}"])
    assert info.value.code == 2
    assert "expected a positive number of inputs" in capsys.readouterr().err


def test_a_kernel_the_back_end_cannot_run_is_skipped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "gather.mlir"
    # random integer indices are out of range for a 1-row input
    path.write_text(
        """pto.kernel @g(%x: memref<1x4xf32>, %i: memref<6xi32>, %out: memref<6x4xf32>) {
  %t = pto.view %x[0, 0] : memref<1x4xf32> -> tensor<1x4xf32>
  %j = pto.view %i[0] : memref<6xi32> -> tensor<6xi32>
  %r = pto.index_select %t, 0, %j : tensor<1x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
  pto.assemble %r into %out[0, 0] : tensor<6x4xf32>, memref<6x4xf32>
}
"""
    )
    assert main([str(path), "-p", "cse", "--verify-semantics=3"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: --verify-semantics: cannot check @g")
    assert "not checking it" in err
    # without passes there is nothing to validate, so nothing runs and nothing warns
    assert main([str(path), "--verify-semantics=3"]) == 0
    assert capsys.readouterr().err == ""


def test_the_installed_command(kernel_file):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tileir.tools.opt",
            str(kernel_file),
            "--verify-semantics",
            "-p",
            "cse",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pto.kernel @k" in proc.stdout
