"""Emitted constructs the seed kernels do not all cover, checked against the real pypto
0.2.0: each small module below is emitted, compiled in SIM mode, and run through the
pass-verify interpreter, whose outputs must match tileir's numpy back end.

The cases are the emitter's own rules: `scf.if` with results, stage / transfer / stitch
lowering, the tanh / erf / tail-sigmoid helpers with the tile-rank settings, and a
dynamic dim with a tail loop.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, compile_kernel, run_kernel
from tileir.ir import parse_module

pytestmark = pytest.mark.pypto

IF_RESULTS = """
pto.kernel @k(%x: memref<4x64xf32>, %out: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  pto.set_vec_tile_shapes [1, 64]
  pto.loop %i = %c0 to %c4 step %c1 name "L" {
    %t = pto.view %x[%i, 0] : memref<4x64xf32> -> tensor<1x64xf32>
    %b = pto.is_loop_begin %i
    %r = scf.if %b -> (tensor<1x64xf32>) {
      %e = pto.exp %t : tensor<1x64xf32>
      scf.yield %e : tensor<1x64xf32>
    } else {
      %n = pto.neg %t : tensor<1x64xf32>
      scf.yield %n : tensor<1x64xf32>
    }
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<4x64xf32>
  }
}
"""

STAGES = """
pto.kernel @k(%x: memref<16x64xf32>, %w: memref<32x64xf32>, %out: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  pto.loop %i = %c0 to %c2 step %c1 name "L" {
    %row = arith.muli %i, %c8 : index
    %y = pto.stage vector label "pre" tile [8, 64] {
      %a = pto.view %x[%row, 0] : memref<16x64xf32> -> tensor<8x64xf32>
      %e = pto.mul %a, %a : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
      pto.yield %e : tensor<8x64xf32>
    } -> tensor<8x64xf32>
    %z = pto.stage cube label "linear" cube [16, 16, 64, 64, 32, 32] {
      %y2 = pto.transfer %y from vector to cube : tensor<8x64xf32>
      %b = pto.view %w[0, 0] : memref<32x64xf32> -> tensor<32x64xf32>
      %m = pto.matmul %y2, %b b_trans : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
      pto.yield %m : tensor<8x32xf32>
    } -> tensor<8x32xf32>
    pto.stitch size 1 max 4 {
      pto.stage vector label "post" tile [8, 32] {
        %z2 = pto.transfer %z from cube to vector : tensor<8x32xf32>
        %s = pto.sigmoid %z2 : tensor<8x32xf32>
        pto.assemble %s into %out[%row, 0] : tensor<8x32xf32>, memref<16x32xf32>
        pto.yield
      }
      pto.yield
    }
  }
}
"""

HELPERS = """
pto.kernel @k(%x: memref<6x64xf32>, %out: memref<6x64xf32>, %red: memref<1x6x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  pto.loop %i = %c0 to %c2 step %c1 name "L" {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %c6, %row : index
    %rows = arith.minsi %left, %c4 : index
    pto.set_vec_tile_shapes [2, 4, 64]
    %t = pto.view %x[%row, 0] valid [%rows, 64] : memref<6x64xf32> -> tensor<4x64xf32>
    %a = pto.tanh %t : tensor<4x64xf32>
    %b = pto.erf %t : tensor<4x64xf32>
    %s = pto.sigmoid %t : tensor<4x64xf32>
    %ab = pto.add %a, %b : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
    %r = pto.add %ab, %s : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
    pto.assemble %r into %out[%row, 0] : tensor<4x64xf32>, memref<6x64xf32>
  }
  pto.set_vec_tile_shapes [8, 64]
  %w = pto.view %x[0, 0] : memref<6x64xf32> -> tensor<6x64xf32>
  %u = pto.unsqueeze %w, 0 : tensor<6x64xf32> -> tensor<1x6x64xf32>
  %m = pto.amax %u, -1 keepdim : tensor<1x6x64xf32> -> tensor<1x6x1xf32>
  pto.assemble %m into %red[0, 0, 0] : tensor<1x6x1xf32>, memref<1x6x1xf32>
}
"""

DYNAMIC = """
pto.kernel @k(%x: memref<?x64xf32>, %out: memref<?x64xf32>)
    attributes {dynamic_dims = {out = ["S"], x = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %trips = arith.ceildivsi %n, %c4 : index
  pto.set_vec_tile_shapes [4, 64]
  pto.loop %i = %c0 to %trips step %c1 name "rows" idx_name "i" unroll [2, 1] {
    %row = arith.muli %i, %c4 : index
    %left = arith.subi %n, %row : index
    %rows = arith.minsi %left, %c4 : index
    %t = pto.view %x[%row, 0] valid [%rows, 64] : memref<?x64xf32> -> tensor<4x64xf32>
    %h = arith.constant -5.000000e-01 : f32
    %r = pto.mul %t, %h : tensor<4x64xf32>, f32 -> tensor<4x64xf32>
    %e = pto.exp %r : tensor<4x64xf32>
    pto.assemble %e into %out[%row, 0] : tensor<4x64xf32>, memref<?x64xf32>
  }
}
"""

rng = np.random.default_rng(7)
CASES = {
    "if_results": (
        IF_RESULTS,
        [ArgSpec("x", (4, 64), "f32"), ArgSpec("out", (4, 64), "f32")],
        {"x": rng.standard_normal((4, 64)).astype(np.float32)},
        1e-6,
    ),
    "stages": (
        STAGES,
        [
            ArgSpec("x", (16, 64), "f32"),
            ArgSpec("w", (32, 64), "f32"),
            ArgSpec("out", (16, 32), "f32"),
        ],
        {
            "x": rng.standard_normal((16, 64)).astype(np.float32) * 0.3,
            "w": rng.standard_normal((32, 64)).astype(np.float32) * 0.3,
        },
        1e-5,
    ),
    "helpers_and_ranks": (
        HELPERS,
        [
            ArgSpec("x", (6, 64), "f32"),
            ArgSpec("out", (6, 64), "f32"),
            ArgSpec("red", (1, 6, 1), "f32"),
        ],
        {"x": rng.standard_normal((6, 64)).astype(np.float32)},
        1e-6,
    ),
    "dynamic_tail": (
        DYNAMIC,
        [ArgSpec("x", (10, 64), "f32", (0,)), ArgSpec("out", (10, 64), "f32", (0,))],
        {"x": rng.standard_normal((10, 64)).astype(np.float32)},
        1e-6,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_construct_compiles_and_computes(name: str, tmp_path: Path) -> None:
    text, args, inputs, tol = CASES[name]
    module = parse_module(text)
    path = tmp_path / f"{name}.py"
    path.write_text(emit(module))
    compiled = compile_kernel(path, "k", args)
    assert compiled.ok, f"{compiled.error}\n--- source\n{path.read_text()}"
    ours = run(module, dict(inputs))
    theirs = run_kernel(path, "k", args, inputs)
    for out, value in ours.items():
        np.testing.assert_allclose(theirs[out], value, atol=tol, rtol=tol, err_msg=out)
