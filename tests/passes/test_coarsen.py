"""`coarsen`: row loops keep their meaning (numpy back end, bit for bit) for any factor,
the rewritten IR has the block sizes a hand calculation gives, and loops outside the
contract are left alone with a reason."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.dialect import pto
from tileir.ir import parse_module
from tileir.passes import apply_pipeline
from tileir.passes.coarsen import CoarsenPass, coarsen_report
from tileir.testing import check_pass, modules
from tileir.testing.strategies import row_loop_modules

# --------------------------------------------------------------------------- by hand

ROWS = """
builtin.module {
  pto.kernel @k(%x: memref<@Rx64xf32>, %out: memref<@Rx64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %ctile = arith.constant @T : index
    %crows = arith.constant @R : index
    %ctrips = arith.constant @U : index
    pto.loop %i = %c0 to %ctrips step %c1 name "rows" {
      %s = arith.muli %i, %ctile : index
      %l = arith.subi %crows, %s : index
      %n = arith.minsi %l, %ctile : index
      pto.set_vec_tile_shapes [@T, 64]
      %t = pto.view %x[%s, 0] valid [%n, 64] : memref<@Rx64xf32> -> tensor<@Tx64xf32>
      %e = pto.exp %t : tensor<@Tx64xf32>
      %m = pto.sum %e, -1 keepdim : tensor<@Tx64xf32> -> tensor<@Tx1xf32>
      %d = pto.div %e, %m : tensor<@Tx64xf32>, tensor<@Tx1xf32> -> tensor<@Tx64xf32>
      pto.assemble %d into %out[%s, 0] : tensor<@Tx64xf32>, memref<@Rx64xf32>
    }
  }
}
"""


def _rows(rows: int, t: int) -> str:
    trips = -(-rows // t)
    return ROWS.replace("@R", str(rows)).replace("@U", str(trips)).replace("@T", str(t))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("rows, t, k", [(20, 4, 2), (20, 4, 3), (20, 4, 8), (7, 1, 4), (16, 2, 4)])
def test_blocks_and_tail_by_hand(rows: int, t: int, k: int) -> None:
    module = parse_module(_rows(rows, t))
    out = check_pass(f"coarsen{{factor={k}}}", module)
    loop = next(o for o in out.walk() if isinstance(o, pto.LoopOp))
    # ceil(ceil(rows / t) / k) iterations of k * t rows.
    trips = -(-rows // t)
    assert pto.constant_index(loop.upper_bound) == -(-trips // k)
    views = [o for o in loop.walk() if isinstance(o, pto.ViewOp)]
    assert [list(v.result.type.get_shape()) for v in views] == [[k * t, 64]]
    tiles = [o for o in loop.walk() if isinstance(o, pto.SetVecTileShapesOp)]
    assert [list(o.shape.get_values()) for o in tiles] == [[k * t, 64]]
    x = np.random.default_rng(0).standard_normal((rows, 64)).astype(np.float32)
    got = run(out, {"x": x}, "k")["out"]
    np.testing.assert_allclose(got, _softmax(x), rtol=1e-5)


def test_tile_shape_capped_by_the_unified_buffer() -> None:
    # 4 buffers of d x 4096 fp32 in 192 KiB: d <= 3.
    text = _rows(64, 1).replace("64xf32", "4096xf32").replace("[1, 64]", "[1, 4096]")
    text = text.replace("valid [%n, 64]", "valid [%n, 4096]")
    out = check_pass("coarsen{factor=8}", parse_module(text), n_inputs=1)
    tiles = [
        list(o.shape.get_values()) for o in out.walk() if isinstance(o, pto.SetVecTileShapesOp)
    ]
    assert tiles == [[3, 4096]]


def test_offset_form_without_tail_count_gets_one() -> None:
    text = """
builtin.module {
  pto.kernel @k(%x: memref<10x8xf32>, %out: memref<10x8xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c10 = arith.constant 10 : index
    pto.loop %i = %c0 to %c10 step %c2 name "rows" {
      %t = pto.view %x[%i, 0] : memref<10x8xf32> -> tensor<2x8xf32>
      %e = pto.neg %t : tensor<2x8xf32>
      pto.assemble %e into %out[%i, 0] : tensor<2x8xf32>, memref<10x8xf32>
    }
  }
}
"""
    out = check_pass("coarsen{factor=4}", parse_module(text))
    loop = next(o for o in out.walk() if isinstance(o, pto.LoopOp))
    assert pto.constant_index(loop.step) == 8
    (view,) = [o for o in loop.walk() if isinstance(o, pto.ViewOp)]
    assert view.mixed_valid_shape is not None  # 10 rows in blocks of 8: a tail of 2


def test_left_alone_with_reason(capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        _rows(20, 4)
        .replace("pto.sum %e, -1", "pto.sum %e, 0")
        .replace("tensor<4x1xf32>", "tensor<1x64xf32>")
    )
    module = parse_module(text)
    before = str(module)
    apply_pipeline(module, "coarsen{factor=2 report=true}")
    assert str(module) == before
    assert "reduces over the rows" in capsys.readouterr().err


def test_loops_option_selects_by_name() -> None:
    module = parse_module(_rows(20, 4))
    apply_pipeline(module, "coarsen{factor=2 loops=other}")
    assert str(module) == str(parse_module(_rows(20, 4)))


def test_bad_factor() -> None:
    with pytest.raises(ValueError, match="factor=0"):
        CoarsenPass(factor=0).apply(None, parse_module(_rows(20, 4)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- seeds

COARSENABLE = [
    k for k in SEED_KERNELS if None in coarsen_report(load_file(k.path, kernel=k.kernel)).values()
]


def test_most_seed_row_loops_are_coarsenable() -> None:
    # Hand count: 6 RoPE-style, 2 GELU, rms_norm_rope, 2 MoE, 2 linear, mean, type_as
    # (gathermask RoPEs included; decode attention has if's, embeddings move rows).
    assert len(COARSENABLE) >= 13


@pytest.mark.parametrize("seed", COARSENABLE, ids=lambda k: k.name)
@pytest.mark.parametrize("k", [2, 3, 16])
def test_seed_kernels_keep_their_meaning(seed, k: int) -> None:
    module = load_file(seed.path, kernel=seed.kernel)
    inputs = seed.make_inputs(np.random.default_rng(1))
    check_pass(f"coarsen{{factor={k}}}", module, inputs=inputs, kernel=seed.kernel)


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_loop_modules(), st.integers(2, 9))
def test_row_loops_keep_their_meaning(module, k: int) -> None:
    check_pass(f"coarsen{{factor={k}}}", module, n_inputs=2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.integers(2, 5))
def test_any_program_keeps_its_meaning(module, k: int) -> None:
    check_pass(f"coarsen{{factor={k}}}", module, n_inputs=1)
