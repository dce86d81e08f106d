"""Batched loops (all iterations as whole-array numpy ops) give the bits of the
iteration-by-iteration run, and loops that are not provably independent are not batched.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import compile_kernel
from tileir.ir import parse_module

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.float32, np.float64


def both(text: str, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    module = parse_module(text)
    plan = compile_kernel(module)
    fast = plan(inputs)
    slow = compile_kernel(module, vectorize=False)(inputs)
    for name in fast:
        assert fast[name].tobytes() == slow[name].tobytes(), f"{name}: batched bits differ"
    return fast, plan.batched_runs


# Row-local steps: (IR lines with {t} for the tile type, {c} for the column-tile type,
# numpy of the same step on whole arrays). %v is the running value, %y the other input.
STEPS = {
    "add_scalar": ("%v{n} = pto.add %v{p}, %k : {t}, f32 -> {t}", lambda v, y: v + F32(0.75)),
    "mul_other": ("%v{n} = pto.mul %v{p}, %yt : {t}, {t} -> {t}", lambda v, y: v * y),
    "exp": ("%v{n} = pto.exp %v{p} : {t}", lambda v, y: np.exp(v.astype(F64)).astype(F32)),
    "neg": ("%v{n} = pto.neg %v{p} : {t}", lambda v, y: -v),
    "center": (
        "%s{n} = pto.sum %v{p}, 1 keepdim : {t} -> {c}\n"
        "    %v{n} = pto.sub %v{p}, %s{n} : {t}, {c} -> {t}",
        lambda v, y: v - v.astype(F64).sum(axis=1, keepdims=True).astype(F32),
    ),
    "max_scale": (
        "%s{n} = pto.amax %v{p}, 1 keepdim : {t} -> {c}\n"
        "    %v{n} = pto.div %v{p}, %s{n} : {t}, {c} -> {t}",
        lambda v, y: v / v.max(axis=1, keepdims=True),
    ),
    "swap_halves": (
        "%l{n} = pto.view %v{p}[0, 0] valid [%cur, {h}] : {t} -> {th}\n"
        "    %r{n} = pto.view %v{p}[0, {h}] valid [%cur, {h}] : {t} -> {th}\n"
        "    %v{n} = pto.concat dim 1, %r{n}, %l{n} : {th}, {th} -> {t}",
        lambda v, y: np.concatenate([v[:, v.shape[1] // 2 :], v[:, : v.shape[1] // 2]], 1),
    ),
    "transpose_twice": (
        "%u{n} = pto.transpose %v{p}, 0, 1 : {t} -> {tt}\n"
        "    %e{n} = pto.exp %u{n} : {tt}\n"
        "    %v{n} = pto.transpose %e{n}, 1, 0 : {tt} -> {t}",
        lambda v, y: np.exp(v.astype(F64)).astype(F32),
    ),
    "reshape_sum": (
        "%u{n} = pto.reshape %v{p} valid [%cur, 2, {h}] : {t} -> {t3}\n"
        "    %s{n} = pto.sum %u{n}, 1 : {t3} -> {th}\n"
        "    %v{n} = pto.concat dim 1, %s{n}, %s{n} : {th}, {th} -> {t}",
        lambda v, y: np.tile(v.reshape(len(v), 2, -1).astype(F64).sum(axis=1).astype(F32), 2),
    ),
    "expand_max": (
        "%s{n} = pto.amax %v{p}, 1 keepdim : {t} -> {c}\n"
        "    %e{n} = pto.expand_clone %s{n} : {c} -> {t}\n"
        "    %v{n} = pto.sub %v{p}, %e{n} : {t}, {t} -> {t}",
        lambda v, y: v - v.max(axis=1, keepdims=True),
    ),
    "bf16_round_trip": (
        "%b{n} = pto.cast %v{p} mode rint : {t} -> {tb}\n    %v{n} = pto.cast %b{n} : {tb} -> {t}",
        lambda v, y: v.astype(BF16).astype(F32),
    ),
}


def row_program(rows: int, cols: int, tile: int, steps: list[str]) -> str:
    t, c, tb = f"tensor<{tile}x{cols}xf32>", f"tensor<{tile}x1xf32>", f"tensor<{tile}x{cols}xbf16>"
    h = cols // 2
    th, tt = f"tensor<{tile}x{h}xf32>", f"tensor<{cols}x{tile}xf32>"
    t3 = f"tensor<{tile}x2x{h}xf32>"
    m = f"memref<{rows}x{cols}xf32>"
    lines = []
    for n, name in enumerate(steps, start=1):
        step = STEPS[name][0].format(n=n, p=n - 1, t=t, c=c, tb=tb, h=h, th=th, tt=tt, t3=t3)
        lines.append("    " + step)
    body = "\n".join(lines)
    return f"""
pto.kernel @rows(%x: {m}, %y: {m}, %out: {m}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ct = arith.constant {tile} : index
  %cr = arith.constant {rows} : index
  %k = arith.constant 0.75 : f32
  %n = arith.ceildivsi %cr, %ct : index
  pto.loop %i = %c0 to %n step %c1 {{
    %row = arith.muli %i, %ct : index
    %left = arith.subi %cr, %row : index
    %cur = arith.minsi %left, %ct : index
    %v0 = pto.view %x[%row, 0] valid [%cur, {cols}] : {m} -> {t}
    %yt = pto.view %y[%row, 0] valid [%cur, {cols}] : {m} -> {t}
{body}
    pto.assemble %v{len(steps)} into %out[%row, 0] : {t}, {m}
  }}
}}
"""


@given(
    rows=st.integers(1, 40),
    cols=st.sampled_from([8, 16, 48]),
    tile=st.integers(1, 8),
    steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_row_programs_batched_equal_sequential_and_numpy(rows, cols, tile, steps, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(F32)
    y = rng.standard_normal((rows, cols)).astype(F32)
    out, batched = both(row_program(rows, cols, tile, steps), {"x": x, "y": y})
    assert batched == (1 if -(-rows // tile) >= 2 else 0)
    expected = x
    with np.errstate(all="ignore"):
        for name in steps:
            expected = STEPS[name][1](expected, y)
    np.testing.assert_array_equal(out["out"], expected)


COLUMN_BLOCKS = """
pto.kernel @cols(%x: memref<6x40xf32>, %g: memref<1x8xf32>, %out: memref<3x40xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %gt = pto.view %g[0, 0] : memref<1x8xf32> -> tensor<1x8xf32>
  pto.loop %j = %c0 to %c5 step %c1 {
    %col = arith.muli %j, %c8 : index
    %t = pto.view %x[0, %col] : memref<6x40xf32> -> tensor<6x8xf32>
    %tt = pto.transpose %t, 0, 1 : tensor<6x8xf32> -> tensor<8x6xf32>
    %r = pto.reshape %tt : tensor<8x6xf32> -> tensor<8x2x3xf32>
    %s = pto.sum %r, 1 : tensor<8x2x3xf32> -> tensor<8x3xf32>
    %u = pto.transpose %s, 0, 1 : tensor<8x3xf32> -> tensor<3x8xf32>
    %w = pto.mul %u, %gt : tensor<3x8xf32>, tensor<1x8xf32> -> tensor<3x8xf32>
    pto.assemble %w into %out[0, %col] : tensor<3x8xf32>, memref<3x40xf32>
  }
}
"""


def test_column_blocks_with_layout_ops_and_an_invariant_tile():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 40)).astype(F32)
    g = rng.standard_normal((1, 8)).astype(F32)
    out, batched = both(COLUMN_BLOCKS, {"x": x, "g": g})
    assert batched == 1
    blocks = []
    for j in range(5):
        t = x[:, 8 * j : 8 * j + 8].T.reshape(8, 2, 3)
        s = t.astype(F64).sum(axis=1).astype(F32).T
        blocks.append(s * g)
    np.testing.assert_array_equal(out["out"], np.concatenate(blocks, axis=1))


def loop(body: str, args: str, n: int = 4) -> str:
    return f"""
pto.kernel @k({args}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  pto.loop %i = %c0 to %cn step %c1 {{
{body}
  }}
}}
"""


def test_every_iteration_writing_one_window_is_not_batched():
    text = loop(
        """    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    pto.assemble %t into %out[0, 0] : tensor<1x8xf32>, memref<1x8xf32>""",
        "%x: memref<4x8xf32>, %out: memref<1x8xf32>",
    )
    x = np.arange(32, dtype=F32).reshape(4, 8)
    out, batched = both(text, {"x": x})
    assert batched == 0
    np.testing.assert_array_equal(out["out"], x[3:4])  # the last iteration wins


def test_overlapping_windows_are_not_batched():
    # iteration i writes rows [i, i + 2): neighbours overlap
    text = loop(
        """    %t = pto.view %x[%i, 0] : memref<5x8xf32> -> tensor<2x8xf32>
    %e = pto.exp %t : tensor<2x8xf32>
    pto.assemble %e into %out[%i, 0] : tensor<2x8xf32>, memref<5x8xf32>""",
        "%x: memref<5x8xf32>, %out: memref<5x8xf32>",
    )
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(F32)
    out, batched = both(text, {"x": x})
    assert batched == 0
    expected = np.exp(x.astype(F64)).astype(F32)
    np.testing.assert_array_equal(out["out"], expected)


def test_two_assembles_into_disjoint_column_ranges_are_batched():
    text = loop(
        """    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %n = pto.neg %t : tensor<1x8xf32>
    pto.assemble %t into %out[%i, 0] : tensor<1x8xf32>, memref<4x16xf32>
    pto.assemble %n into %out[%i, 8] : tensor<1x8xf32>, memref<4x16xf32>""",
        "%x: memref<4x8xf32>, %out: memref<4x16xf32>",
    )
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(F32)
    out, batched = both(text, {"x": x})
    assert batched == 1
    np.testing.assert_array_equal(out["out"], np.concatenate([x, -x], axis=1))


def test_a_loop_that_reads_what_it_writes_is_not_batched():
    # a running prefix: row i + 1 = row i + x[i + 1], through the output itself
    text = loop(
        """    %j = arith.addi %i, %c1 : index
    %a = pto.view %out[%i, 0] : memref<5x8xf32> -> tensor<1x8xf32>
    %b = pto.view %x[%j, 0] : memref<5x8xf32> -> tensor<1x8xf32>
    %s = pto.add %a, %b : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
    pto.assemble %s into %out[%j, 0] : tensor<1x8xf32>, memref<5x8xf32>""",
        "%x: memref<5x8xf32>, %out: memref<5x8xf32>",
    )
    x = np.random.default_rng(4).standard_normal((5, 8)).astype(F32)
    out, batched = both(text, {"x": x, "out": np.zeros((5, 8), F32)})
    assert batched == 0
    expected = np.zeros((5, 8), F32)
    for i in range(4):
        expected[i + 1] = expected[i] + x[i + 1]
    np.testing.assert_array_equal(out["out"], expected)


def test_strided_offsets_and_a_matmul_free_body_batch():
    # step 2 over rows, tiles of 1 row: offsets 0, 2, 4, ... (not contiguous)
    text = """
pto.kernel @k(%x: memref<9x8xf32>, %out: memref<9x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c9 = arith.constant 9 : index
  pto.loop %i = %c0 to %c9 step %c2 {
    %t = pto.view %x[%i, 0] : memref<9x8xf32> -> tensor<1x8xf32>
    %s = pto.sqrt %t : tensor<1x8xf32>
    pto.assemble %s into %out[%i, 0] : tensor<1x8xf32>, memref<9x8xf32>
  }
}
"""
    x = np.abs(np.random.default_rng(5).standard_normal((9, 8))).astype(F32)
    out, batched = both(text, {"x": x})
    assert batched == 1
    expected = np.zeros((9, 8), F32)
    expected[::2] = np.sqrt(x[::2].astype(F64)).astype(F32)
    np.testing.assert_array_equal(out["out"], expected)


def test_assembles_that_overlap_across_iterations_are_not_batched():
    # iteration i writes out[i] = x[i] and out[i + 1] = -x[i]; the next iteration
    # overwrites out[i + 1], so only the program order gives the right answer
    text = loop(
        """    %j = arith.addi %i, %c1 : index
    %t = pto.view %x[%i, 0] : memref<4x8xf32> -> tensor<1x8xf32>
    %n = pto.neg %t : tensor<1x8xf32>
    pto.assemble %t into %out[%i, 0] : tensor<1x8xf32>, memref<5x8xf32>
    pto.assemble %n into %out[%j, 0] : tensor<1x8xf32>, memref<5x8xf32>""",
        "%x: memref<4x8xf32>, %out: memref<5x8xf32>",
    )
    x = np.random.default_rng(6).standard_normal((4, 8)).astype(F32)
    out, batched = both(text, {"x": x})
    assert batched == 0
    np.testing.assert_array_equal(out["out"], np.concatenate([x, -x[3:]]))


def test_dense_constants_inside_a_batched_loop():
    text = loop(
        """    %t = pto.view %x[%i, 0] : memref<4x4xi32> -> tensor<1x4xi32>
    %d = arith.constant dense<[[1, 2, 3, 4]]> : tensor<1x4xi32>
    %s = pto.add %t, %d : tensor<1x4xi32>, tensor<1x4xi32> -> tensor<1x4xi32>
    pto.assemble %s into %out[%i, 0] : tensor<1x4xi32>, memref<4x4xi32>""",
        "%x: memref<4x4xi32>, %out: memref<4x4xi32>",
    )
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    out, batched = both(text, {"x": x})
    assert batched == 1
    np.testing.assert_array_equal(out["out"], x + np.array([1, 2, 3, 4], np.int32))
