"""`tileir-opt` on bad input: a located diagnostic on stderr, a non-zero exit, and no
Python traceback, for many kinds of malformed files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tileir.tools.opt import main

GOOD = """pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %e = pto.exp %t : tensor<8x64xf32>
  pto.assemble %e into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
}
"""

# name -> (file text, line of the error, words the message must contain)
MALFORMED: dict[str, tuple[str, int, str]] = {
    "syntax-missing-brace": (GOOD.replace("}\n", ""), 5, "error"),
    "unknown-op": (GOOD.replace("pto.exp", "pto.expo"), 3, "pto.expo is not registered"),
    "unknown-type": (GOOD.replace("tensor<8x64xf32>", "tile<8x64xf32>", 1), 2, "error"),
    # xDSL reports an undefined value at the end of the enclosing region.
    "undefined-value": (GOOD.replace("pto.exp %t", "pto.exp %q"), 6, "not defined: [%q]"),
    "type-mismatch-operand": (
        GOOD.replace("%e = pto.exp %t : tensor<8x64xf32>", "%e = pto.exp %t : tensor<8x32xf32>"),
        3,
        "error",
    ),
    "view-out-of-bounds": (GOOD.replace("%x[0, 0]", "%x[4, 0]"), 2, "outside the source"),
    "assemble-dtype": (
        GOOD.replace("memref<8x64xf32>) {", "memref<8x64xf16>) {").replace(
            "tensor<8x64xf32>, memref<8x64xf32>", "tensor<8x64xf32>, memref<8x64xf16>"
        ),
        4,
        "writes a f32 tile into a f16 tensor",
    ),
    "bad-cast-mode": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            '%e = pto.cast %t mode "up" : tensor<8x64xf32> -> tensor<8x64xf32>',
        ),
        3,
        # the cast mode is an enum: the parser lists its members
        "Expected `none`, `rint`, `round`, `floor`, `ceil`, `trunc`, or `odd`",
    ),
    "reduce-dim": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            "%e = pto.sum %t, 3 : tensor<8x64xf32> -> tensor<8x64xf32>",
        ),
        3,
        "dim 3 is out of range",
    ),
    "matmul-contraction": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            "%e = pto.matmul %t, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>",
        ),
        3,
        "contraction dims differ",
    ),
    "broadcast": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            "%s = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<4x64xf32>\n"
            "  %e = pto.add %t, %s : tensor<8x64xf32>, tensor<4x64xf32> -> tensor<8x64xf32>",
        ),
        4,
        "cannot broadcast",
    ),
    "unroll-list": (
        GOOD.replace(
            "  %e = pto.exp %t : tensor<8x64xf32>\n",
            "  %c0 = arith.constant 0 : index\n"
            "  pto.loop %i = %c0 to %c0 step %c0 unroll [1, 2] {\n  }\n"
            "  %e = pto.exp %t : tensor<8x64xf32>\n",
        ),
        4,
        "strictly descending",
    ),
    "tile-rank": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            "%r = pto.reshape %t : tensor<8x64xf32> -> tensor<2x2x2x2x32xf32>\n"
            "  %e = pto.exp %t : tensor<8x64xf32>",
        ),
        3,
        "1 to 4 dims",
    ),
    "kernel-arg-tensor": (
        GOOD.replace("%x: memref<8x64xf32>", "%x: tensor<8x64xf32>"),
        2,
        "previously used or defined with type tensor<8x64xf32>",
    ),
    "duplicate-arg-name": (GOOD.replace("%out: memref", "%x: memref"), 1, "error"),
    "non-pypto-dtype": (
        GOOD.replace("f32", "f64"),
        1,
        "which PyPTO does not have",
    ),
    "empty-label": (
        GOOD.replace("  %e = ", '  pto.set_semantic_label ""\n  %e = '),
        3,
        "must not be empty",
    ),
    "bad-attribute": (
        GOOD.replace(
            "%e = pto.exp %t : tensor<8x64xf32>",
            '%e = pto.transpose %t, "a", 1 : tensor<8x64xf32> -> tensor<64x8xf32>',
        ),
        3,
        "error",
    ),
    "not-utf8-garbage": ("\x00\x01 ??? %%%", 1, "error"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_input_gives_a_located_diagnostic(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, line, words = MALFORMED[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(text)
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:" in err, err
    assert words in err
    assert "Traceback" not in err


def test_missing_file_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.mlir")]) == 1
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err


def test_unknown_pass_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    assert main([str(path), "-p", "no-such-pass"]) == 1
    assert "no-such-pass" in capsys.readouterr().err


def test_malformed_pipeline_options_are_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Options separated by a comma: xDSL's parser raises a BaseException there, which
    once got past the driver as a traceback; the Python API says the same."""
    from tileir.diagnostics import TileirError
    from tileir.passes import parse_pipeline

    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    spec = "default{unroll-factors=4,max-functions=2}"
    assert main([str(path), "-p", spec]) == 1
    err = capsys.readouterr().err
    assert "error: the pass pipeline does not parse" in err and "pass-pipeline:1:39" in err
    assert "Traceback" not in err
    with pytest.raises(TileirError, match="expected either a space"):
        parse_pipeline(spec)


def test_good_input_round_trips_through_cse_and_dce(tmp_path: Path) -> None:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    out = subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", str(path), "-p", "cse,dce,canonicalize"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The assemble writes memory: no cleanup pass may remove it, nor what feeds it.
    assert "pto.assemble %e into %out[0, 0]" in out
    assert "pto.exp %t" in out


def test_cli_process_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(GOOD.replace("%x[0, 0]", "%x[4, 0]"))
    proc = subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"{path}:2:" in proc.stderr and "Traceback" not in proc.stderr


def test_help_lists_the_pto_dialect_tools() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "tileir" in proc.stdout
