"""`sink-invariants`: loop-invariant tile preparation recomputed in the loop keeps the
kernel's meaning (numpy back end, bit for bit: by hand, on every seed kernel, on random
programs), and memory the kernel writes is never read later than it was."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from frontends.kernels import SEED_KERNELS, kernel_by_name
from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.dialect import pto
from tileir.ir import parse_module
from tileir.testing import check_pass, modules
from tileir.testing.strategies import row_loop_modules

ACC = """
builtin.module {
  pto.kernel @acc(%x: memref<4x8xf32>, %buf: memref<4x8xf32>, %out: memref<4x8xf32>) {
    pto.set_vec_tile_shapes [4, 8]
    %v = pto.view %buf[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
    %e = pto.exp %v : tensor<4x8xf32>
    %k = pto.view %x[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    pto.loop %i = %c0 to %c3 step %c1 name "acc" {
      %b = pto.view %buf[0, 0] : memref<4x8xf32> -> tensor<4x8xf32>
      %a = pto.add %b, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      %s = pto.add %a, %k : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      pto.assemble %s into %buf[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
    }
    pto.assemble %k into %out[0, 0] : tensor<4x8xf32>, memref<4x8xf32>
  }
}
"""


def _loop(module) -> pto.LoopOp:
    return next(o for o in module.walk() if isinstance(o, pto.LoopOp))


def test_a_view_of_memory_the_loop_writes_stays_before_it() -> None:
    module = check_pass("sink-invariants", parse_module(ACC), n_inputs=2)
    body = [o.name for o in _loop(module).body.block.ops]
    # The exp of the tile read before the loop moves in; the view of %buf stays out (in
    # the loop it would read the loop's own writes); %k is used after the loop: stays.
    assert body.count("pto.exp") == 1 and body.count("pto.view") == 1
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 8
    buf = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    got = run(module, {"x": x, "buf": buf, "out": np.zeros_like(x)}, "acc")
    # By hand: buf <- buf + exp(buf0) + x, three times.
    want = buf.copy()
    for _ in range(3):
        want = (want + np.exp(buf)) + x
    np.testing.assert_allclose(got["buf"], want, rtol=1e-5)  # exp: libm vs numpy
    np.testing.assert_array_equal(got["out"], x)


def test_rms_norm_weight_moves_into_the_loop() -> None:
    seed = kernel_by_name("rms_norm_rope")
    module = load_file(seed.path, kernel=seed.kernel)
    out = check_pass("sink-invariants", module, inputs=seed.make_inputs(np.random.default_rng(3)))
    kernel = next(o for o in out.walk() if isinstance(o, pto.KernelOp))
    outside = [o.name for o in kernel.body.block.ops if o.name.startswith("pto.")]
    assert outside == [
        "pto.set_vec_tile_shapes",
        "pto.set_vec_tile_shapes",
        "pto.loop",
        "pto.yield",
    ]
    names = [o.name for o in _loop(out).body.block.ops]
    # view, reshape, cast, expand_clone of gamma, each under its own tile shape, then
    # the loop's setting again before the body's first op.
    assert names[:7] == [
        "pto.set_vec_tile_shapes",
        "pto.view",
        "pto.reshape",
        "pto.cast",
        "pto.set_vec_tile_shapes",
        "pto.expand_clone",
        "arith.constant",
    ]


@pytest.mark.parametrize("seed", SEED_KERNELS, ids=lambda k: k.name)
def test_seed_kernels_keep_their_meaning(seed) -> None:
    module = load_file(seed.path, kernel=seed.kernel)
    inputs = seed.make_inputs(np.random.default_rng(1))
    check_pass("sink-invariants", module, inputs=inputs, kernel=seed.kernel)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_any_program_keeps_its_meaning(module) -> None:
    check_pass("sink-invariants", module, n_inputs=2)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_loop_modules())
def test_row_loops_keep_their_meaning_sunk_then_coarsened(module) -> None:
    check_pass("sink-invariants,coarsen{factor=3}", module, n_inputs=2)


def test_a_loop_unroll_gets_the_weight_too() -> None:
    seed = kernel_by_name("linear_projection")
    module = load_file(seed.path, kernel=seed.kernel)
    out = check_pass("sink-invariants", module, inputs=seed.make_inputs(np.random.default_rng(4)))
    loop = next(o for o in out.walk() if isinstance(o, pto.LoopUnrollOp))
    names = [o.name for o in loop.body.block.ops]
    # gamma's reshape and cast, under gamma's [1, HIDDEN] tile shape, open the body.
    assert names[:3] == ["pto.set_vec_tile_shapes", "pto.reshape", "pto.cast"] or names[:4] == [
        "pto.set_vec_tile_shapes",
        "pto.view",
        "pto.reshape",
        "pto.cast",
    ]
