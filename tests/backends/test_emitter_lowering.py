"""The emitter's lowering to PyPTO's flat form and its PyPTO 0.2.0 work-arounds, checked
on small hand-written modules (expected texts written from the rules in the emitter's
docstring, not from its output)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr, UnitAttr, i64

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_source
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.backends.pypto.emitter import emit_module, literal, lower_for_pypto
from tileir.dialect import pto
from tileir.ir import parse_module

REPO = Path(__file__).resolve().parents[2]


def body_lines(source: str, kernel: str) -> list[str]:
    """The stripped statement lines of one kernel's body."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel)
    lines = source.splitlines()[fn.body[0].lineno - 1 : fn.end_lineno]
    return [line.strip() for line in lines]


STAGED = """
pto.kernel @k(%x: memref<4x64xf32>, %out: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  pto.set_vec_tile_shapes [4, 64]
  %a = pto.stage vector label "first" tile [4, 64] {
    %t = pto.view %x[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
    %e = pto.exp %t : tensor<4x64xf32>
    pto.yield %e : tensor<4x64xf32>
  } -> tensor<4x64xf32>
  pto.stage vector label "first" tile [4, 64] {
    %n = pto.neg %a : tensor<4x64xf32>
    pto.assemble %n into %out[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
    pto.yield
  }
  pto.loop %i = %c0 to %c3 step %c1 {
    pto.stage vector label "first" tile [4, 64] {
      %u = pto.view %x[0, 0] : memref<4x64xf32> -> tensor<4x64xf32>
      pto.assemble %u into %out[0, 0] : tensor<4x64xf32>, memref<4x64xf32>
      pto.yield
    }
  }
}
"""


def test_stage_settings_only_where_not_in_force() -> None:
    source = emit_module(parse_module(STAGED))
    assert body_lines(source, "k") == [
        # the user's tile shape is in force: only the label is new
        "pypto.set_vec_tile_shapes(4, 64)",
        'pypto.set_semantic_label("first")',
        "e = pypto.exp(x)",
        # the same settings are still in force for the second stage
        "n = pypto.neg(e)",
        "out[:] = n",
        "for i in pypto.loop(3):",
        # a loop body is traced once per unroll factor: nothing counts as in force
        'pypto.set_semantic_label("first")',
        "pypto.set_vec_tile_shapes(4, 64)",
        # a whole-tensor view read by the next op only is the tensor's name
        "out[:] = x",
    ]


def test_lowering_leaves_no_stage_and_keeps_meaning() -> None:
    module = parse_module(STAGED)
    flat = lower_for_pypto(module)
    assert not any(isinstance(op, pto.StageOp | pto.TransferOp) for op in flat.walk())
    assert any(isinstance(op, pto.StageOp) for op in module.walk()), "input must be untouched"
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    want = {"out": x}  # the loop writes x itself last
    got = run(flat, {"x": x})
    np.testing.assert_array_equal(got["out"], want["out"])


RANKS = """
pto.kernel @ranks(%x: memref<8x64xf32>, %out: memref<1x8x1xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %e = pto.exp %t : tensor<8x64xf32>
  pto.set_vec_tile_shapes [2, 8, 64]
  %u = pto.unsqueeze %e, 0 : tensor<8x64xf32> -> tensor<1x8x64xf32>
  %s = pto.sum %u, -1 keepdim : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
  %r = pto.reshape %s : tensor<1x8x1xf32> -> tensor<8x1xf32>
  %n = pto.neg %r : tensor<8x1xf32>
  %b = pto.reshape %n : tensor<8x1xf32> -> tensor<1x8x1xf32>
  pto.assemble %b into %out[0, 0, 0] : tensor<1x8x1xf32>, memref<1x8x1xf32>
}
"""


def test_tile_shape_of_the_right_rank_before_every_op() -> None:
    lines = body_lines(emit_module(parse_module(RANKS)), "ranks")
    assert lines == [
        "t = pypto.view(x, [8, 64], [0, 0])",
        # no shape set yet: the result shape itself
        "pypto.set_vec_tile_shapes(8, 64)",
        "e = pypto.exp(t)",
        "pypto.set_vec_tile_shapes(2, 8, 64)",
        "u = pypto.unsqueeze(e, 0)",
        "s = pypto.sum(u, dim=-1, keepdim=True)",
        # reshape is exempt; neg of rank 2 gets the user's shape cut to its last dims
        "r = pypto.reshape(s, [8, 1])",
        "pypto.set_vec_tile_shapes(8, 64)",
        "n = pypto.neg(r)",
        "b = pypto.reshape(n, [1, 8, 1])",
        "out[:] = b",
    ]


def test_sigmoid_helper_only_for_tail_tiles() -> None:
    text = """
pto.kernel @sig(%x: memref<6x64xf32>, %out: memref<6x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  pto.set_vec_tile_shapes [4, 64]
  pto.loop %i = %c0 to %c2 step %c1 {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %c6, %row : index
    %rows = arith.minsi %left, %c4 : index
    %t = pto.view %x[%row, 0] valid [%rows, 64] : memref<6x64xf32> -> tensor<4x64xf32>
    %e = pto.exp %t : tensor<4x64xf32>
    %s = pto.sigmoid %e : tensor<4x64xf32>
    pto.assemble %s into %out[%row, 0] : tensor<4x64xf32>, memref<6x64xf32>
  }
  %w = pto.view %x[0, 0] : memref<6x64xf32> -> tensor<4x64xf32>
  %f = pto.sigmoid %w : tensor<4x64xf32>
  pto.assemble %f into %out[0, 0] : tensor<4x64xf32>, memref<6x64xf32>
}
"""
    source = emit_module(parse_module(text))
    assert "s = tileir_sigmoid(e)" in source  # exp of a tail tile is a tail tile
    assert "f = pypto.sigmoid(w)" in source
    # The frontend reads the helper back as the op.
    back = load_source(source, "s.py")
    assert sum(isinstance(op, pto.SigmoidOp) for op in back.walk()) == 2


def test_jit_option_literals() -> None:
    options = DictionaryAttr(
        {
            "runtime_options": DictionaryAttr(
                {"run_mode": StringAttr("pypto.RunMode.SIM"), "n": IntegerAttr(3, i64)}
            ),
            "pass_options": DictionaryAttr({"-1": IntegerAttr(2, i64), "1a": UnitAttr()}),
            "names": ArrayAttr([StringAttr("pypto.x; import os"), StringAttr("a")]),
        }
    )
    assert literal(options) == (
        '{"runtime_options": {"run_mode": pypto.RunMode.SIM, "n": 3}, '
        '"pass_options": {-1: 2, "1a": None}, '
        '"names": ["pypto.x; import os", "a"]}'
    )


def test_output_is_deterministic_and_tidy() -> None:
    for seed in SEED_KERNELS[:6]:
        from frontends.pypto import load_file

        module = load_file(seed.path)
        a, b = emit(module), emit(module)
        assert a == b
        ast.parse(a)
        assert "\n\n\n\n" not in a and not a.endswith("\n\n") and a.endswith("\n")
        assert not re.search(r"[ \t]+$", a, re.M)


def test_cli_emits_a_seed_kernel_after_the_default_pipeline(tmp_path: Path) -> None:
    seed = next(k for k in SEED_KERNELS if k.name == "mean")
    proc = subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", str(seed.path), "-p", "default", "-t", "pypto"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "def mean_kernel(" in proc.stdout and "stitch_function_max_num" in proc.stdout
    ast.parse(proc.stdout)
