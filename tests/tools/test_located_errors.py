"""Errors that used to come without a location (issue 18, items 6 and 7), each now
`file:line:col: error:` (or at least the file) with tileir's wording, and the nesting
limits stated in the message. The corpus (test_malformed_corpus.py) runs many more
malformed files; these pin the exact place and words."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from malformed_cases import DYNAMIC, GOOD, PY_GOOD, Y, nested, swap

from tileir.backends.pypto.emitter import emit_module
from tileir.diagnostics import MAX_NESTING, TileirError
from tileir.ir import parse_module
from tileir.tools.opt import main as opt_main
from tileir.tools.run import main as run_main

# name -> (file suffix, content, extra args, line:col, words)
CASES: dict[str, tuple[str, str | bytes, list[str], str, str]] = {
    "mlir-not-utf8": (
        ".mlir",
        GOOD.encode().replace(b"%e = ", b"%e = \xe9"),
        [],
        "3:8",
        "not UTF-8 text (byte 0xe9",
    ),
    "py-not-utf8": (
        ".py",
        PY_GOOD.encode().replace(b"rows = ", b"rows\xff = "),
        [],
        "15:13",
        "not UTF-8 text (byte 0xff",
    ),
    "exp-on-memref": (
        ".mlir",
        swap("%e = pto.exp %x : memref<8x64xf32>"),
        [],
        "3:3",
        "memref<8x64xf32> should be of base attribute tensor",
    ),
    "unroll-2-pow-70": (
        ".mlir",
        GOOD.replace(
            "  %e = ",
            "  %c0 = arith.constant 0 : index\n"
            f"  pto.loop %i = %c0 to %c0 step %c0 unroll [{2**70}, 1] {{\n  }}\n  %e = ",
        ),
        [],
        "4:3",
        "out of range",
    ),
    "label-hex-escapes": (
        ".mlir",
        swap('pto.set_semantic_label "a\\22b\\00c\\ff"\n  %e = pto.exp %t : tensor<8x64xf32>'),
        [],
        "3:3",
        "should be of base attribute string",
    ),
    "two-kernels-k": (".mlir", GOOD + GOOD, [], "6:1", "@k is defined twice (first at "),
    "py-plus-100000": (
        ".py",
        PY_GOOD.replace(Y, "y = pypto.add(t, 1.0" + " + 1.0" * 100_000 + ")"),
        [],
        "",
        "nests too deeply for Python's parser (tileir's limit is 200",
    ),
    "py-plus-400": (
        ".py",
        PY_GOOD.replace(Y, "y = t" + " + t" * 400),
        [],
        "17:817",  # the right operand at depth 201: the 202nd `t`, at 13 + 4 * 201
        "nests more than 200 deep, tileir's limit",
    ),
    "option-keys-collide": (
        ".mlir",
        GOOD.replace(") {", ') attributes {jit_options = {"a-b" = {}, "a_b" = {}}} {', 1),
        ["-t", "pypto"],
        "1:1",
        "jit options 'a-b' and 'a_b' would both be the keyword `a_b`",
    ),
    "nested-65-loops": (
        ".mlir",
        nested(65, "pto.loop %i{d} = %c0 to %c1 step %c1 {{"),
        [],
        "70:131",
        f"more than {MAX_NESTING} nested regions, tileir's limit",
    ),
    "nested-1000-ifs": (
        ".mlir",
        nested(1000, "scf.if %b {{"),
        [],
        "70:131",
        f"more than {MAX_NESTING} nested regions",
    ),
    "nested-21-loops": (
        ".mlir",
        nested(21, "pto.loop %i{d} = %c0 to %c8 step %c1 {{"),
        ["-p", "default", "-t", "pypto"],
        "26:43",
        "at most 20 nested loops (Python's limit on nested blocks)",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_is_located(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suffix, content, extra, where, words = CASES[name]
    path = tmp_path / f"{name}{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert opt_main([str(path), *extra]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{where}: error: " if where else f"{path}: error: "), err
    assert words in err.splitlines()[0], err
    assert "Traceback" not in err


def test_nesting_at_the_limit_parses() -> None:
    # 63 loops in the kernel: the innermost ops are inside 64 regions.
    module = parse_module(nested(MAX_NESTING - 1, "pto.loop %i{d} = %c0 to %c1 step %c1 {{"))
    assert sum(op.name == "pto.loop" for op in module.walk()) == MAX_NESTING - 1
    with pytest.raises(TileirError, match="nested regions"):
        parse_module(nested(MAX_NESTING, "pto.loop %i{d} = %c0 to %c1 step %c1 {{"))


def test_an_argument_named_debug_is_renamed_in_python() -> None:
    text = GOOD.replace("%x", "%__debug__")
    source = emit_module(parse_module(text))
    (fn,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    assert [a.arg for a in fn.args.args] == ["__debug___", "out"]
    compile(source, "<emitted>", "exec")


def test_numpy_errors_get_tileirs_wording(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "dyn.mlir"
    path.write_text(
        DYNAMIC.replace(
            "%m = memref.dim %y, %c0 : memref<?x64xf32>",
            "%c2 = arith.constant 2 : index\n  %m = arith.divui %n, %c2 : index",
        )
    )
    assert run_main([str(path), "--random-inputs", "--output-dir", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"{path}:8:3: error: 'pto.add': operand shapes [16, 64] and [8, 64] do not broadcast "
        "at run time\n"
    )
    big = tmp_path / "big.mlir"
    # Each dim within the verifier's limit (2**31 - 1), the whole beyond numpy's.
    big.write_text(GOOD.replace("8x64", "2147483647x2147483647"))
    assert run_main([str(big), "--random-inputs", "--output-dir", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"{big}:1:1: error: cannot make random inputs for @k: an array is too big"
    )
