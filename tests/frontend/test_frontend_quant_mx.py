"""`pypto.quant_mx`, the MX quantisation of PyPTO-Gym's fp8 MLA prolog (issue 14): the
kernels are in `data/jit/jit_quant_mx.py`, written in the Gym's style; every result is
checked against `mx_quant_golden` below, written another way than tileir's semantics: per
block a Python `math.log2` for the exponent, and each element rounded by a search of the
table of all finite e4m3 values (ties to the even code, saturating at 448), not by a cast.

The reference is PyPTO's docs (hicann/pypto docs/zh/api/operation/pypto-quant_mx.md:
DT_FP8E4M3 elements, DT_FP8E8M0 scales `[..., n / 64, 2]`, ROUND_DOWN) and the OCP MX rule
they name: `e = floor(log2(amax)) - 8`. PyPTO 0.2.0 has no `quant_mx` (newer PyPTO, Ascend
950 only), so there is no real-pypto test; `-t pypto` writes the call with a comment."""

from __future__ import annotations

import bisect
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import compile_kernel, run
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto

DATA = Path(__file__).parent / "data" / "jit"
FILE = DATA / "jit_quant_mx.py"
E4M3, E8M0 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu
T, H, N = 8, 128, 32

_E4M3_VALUES = np.arange(127, dtype=np.uint8).view(E4M3).astype(np.float64).tolist()
"""Every finite non-negative e4m3 value, by code (0x7F is NaN): increasing."""


def round_e4m3(v: float) -> float:
    """v to the nearest e4m3 value, a tie to the even code, beyond 448 saturated."""
    a = abs(v)
    if a >= 448.0:
        return math.copysign(448.0, v)
    i = bisect.bisect_right(_E4M3_VALUES, a) - 1  # table[i] <= a < table[i + 1]
    lo, hi = _E4M3_VALUES[i], _E4M3_VALUES[i + 1]
    pick = i if a - lo < hi - a else i + 1 if a - lo > hi - a else i + (i % 2)
    return math.copysign(_E4M3_VALUES[pick], v)


def mx_quant_golden(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(elements as float64, scale exponents as e8m0 bytes [..., n / 64, 2])."""
    rows = x.astype(np.float64).reshape(-1, x.shape[-1])
    q = np.zeros_like(rows)
    codes = np.zeros((rows.shape[0], rows.shape[1] // 32), np.uint8)
    for r, row in enumerate(rows):
        for j in range(row.size // 32):
            block = row[32 * j : 32 * j + 32]
            amax = float(np.abs(block).max())
            e = -127 if amax == 0 else max(-127, math.floor(math.log2(amax)) - 8)
            codes[r, j] = e + 127
            q[r, 32 * j : 32 * j + 32] = [round_e4m3(v / 2.0**e) for v in block]
    return q.reshape(x.shape), codes.reshape(*x.shape[:-1], x.shape[-1] // 64, 2)


QUANT = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([2, 64], pypto.DT_FP32),
    q: pypto.Tensor([2, 64], pypto.DT_FP8E4M3),
    s: pypto.Tensor([2, 1, 2], pypto.DT_FP8E8M0),
):
    pypto.set_vec_tile_shapes(2, 64)
    a, b = pypto.quant_mx(x, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, True)
    q[:] = a
    s[:] = b
"""


def _quant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = run(load_source(QUANT, "quant.py"), {"x": x})
    return out["q"].astype(np.float64), out["s"].view(np.uint8)


def test_hand_computed_blocks() -> None:
    """Worked by hand: [0] amax 448 * 2^-3, every element an e4m3 value times 2^-3 (scale
    2^-3, code 124, elements back exactly); [1] amax 480 (scale 2^0: 480 saturates to 448,
    17 ties to 16 (even), 19 to 20 (even), 0.0009 to 0 and
    0.0011 to 2^-9, either side of half the smallest subnormal); [2] all zeros (code 0); [3] amax
    1.0 (scale 2^-8: 1.0 is 256, 0.75 is 192)."""
    x = np.zeros((2, 64), np.float32)
    exact = [448, -256, 96, -1.5, 0.25, -0.015625, 3.5, 0]
    x[0, :8] = np.array(exact) / 8
    x[0, 32:37] = [480, 17, -19, 0.0009, 0.0011]
    x[1, 32:34] = [1.0, -0.75]
    q, s = _quant(x)
    np.testing.assert_array_equal(s, [[[124, 127]], [[0, 119]]])
    np.testing.assert_array_equal(q[0, :8], exact)
    np.testing.assert_array_equal(q[0, 32:37], [448, 16, -20, 0, 2**-9])
    np.testing.assert_array_equal(q[1, :32], 0)
    np.testing.assert_array_equal(q[1, 32:34], [256, -192])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_rows_match_the_table_golden(seed: int) -> None:
    """Magnitudes over 2^-130 .. 2^100 per block (subnormal f32 included), signs mixed."""
    rng = np.random.default_rng(seed)
    exps = rng.integers(-130, 100, size=(2, 2, 1))
    x = (rng.standard_normal((2, 2, 32)) * np.exp2(exps)).reshape(2, 64).astype(np.float32)
    q, s = _quant(x)
    want_q, want_s = mx_quant_golden(x)
    np.testing.assert_array_equal(s, want_s)
    np.testing.assert_array_equal(q, want_q)


def test_a_nan_block_has_a_nan_scale_and_no_other() -> None:
    x = np.ones((2, 64), np.float32)
    x[1, 40] = np.nan
    q, s = _quant(x)
    np.testing.assert_array_equal(s, [[[119, 119]], [[119, 255]]])
    assert np.isnan(q[1, 32:]).all() and not np.isnan(q[:, :32]).any()


def test_row_tiles_in_a_loop() -> None:
    module = load_file(FILE, kernel="mx_quantize_rows")
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((T, H)) * 5).astype(ml_dtypes.bfloat16)
    x[3, 64:96] = 0
    out = compile_kernel(module)(
        {"x": x, "x_q": np.zeros((T, H), E4M3), "x_scale": np.zeros((T, H // 64, 2), E8M0)}
    )
    want_q, want_s = mx_quant_golden(x)
    np.testing.assert_array_equal(out["x_q"].astype(np.float64), want_q)
    np.testing.assert_array_equal(out["x_scale"].view(np.uint8), want_s)


def test_quantised_rms_norm_into_scaled_mm() -> None:
    """The Gym's pattern (quant_mx of a normalised activation, then scaled_mm): against
    the golden quantisation of numpy's rms_norm, dequantised, times the dequantised
    weight in float64; bf16 output, so within 2^-8 relative."""
    module = load_file(FILE, kernel="mx_norm_project")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, H)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, H).astype(np.float32)
    w = rng.uniform(-8, 8, (H, N)).astype(E4M3)
    w_codes = rng.integers(120, 130, (H // 64, N, 2)).astype(np.uint8)
    out = compile_kernel(module)(
        {
            "x": x,
            "gamma": gamma,
            "w": w,
            "w_scale": w_codes.view(E8M0),
            "y": np.zeros((T, N), ml_dtypes.bfloat16),
        }
    )
    x64 = x.astype(np.float64)
    normed = (x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + 1e-6) * gamma).astype(np.float32)
    q, codes = mx_quant_golden(normed)
    xs = np.repeat(codes.reshape(T, H // 32).astype(np.int64) - 127, 32, axis=1)
    ws = np.repeat(
        w_codes.transpose(1, 0, 2).reshape(N, H // 32).astype(np.int64) - 127, 32, axis=1
    ).T
    want = np.ldexp(q, xs) @ np.ldexp(w.astype(np.float64), ws)
    np.testing.assert_allclose(out["y"].astype(np.float64), want, rtol=2**-8, atol=1e-6)


def test_the_op_in_the_ir_and_written_back() -> None:
    module = load_file(FILE, kernel="mx_quantize_rows")
    (op,) = [o for o in module.walk() if isinstance(o, pto.QuantMxOp)]
    assert op.performance_mode is not None
    assert str(op.scale.type) == "tensor<4x2x2xf8E8M0FNU>"
    text = emit(module)
    line = "q, s = pypto.quant_mx(tile, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, True)"
    assert line in text and "# tileir: not in PyPTO 0.2.0" in text, text


@pytest.mark.parametrize("kernel", ["mx_quantize_rows", "mx_norm_project"])
def test_emitted_kernels_read_back_to_the_same_numbers(kernel: str) -> None:
    module = load_file(FILE, kernel=kernel)
    back = load_source(emit(module), f"{kernel}_emitted.py")
    rng = np.random.default_rng(5)
    if kernel == "mx_quantize_rows":
        inputs = {"x": rng.standard_normal((T, H)).astype(ml_dtypes.bfloat16)}
    else:
        inputs = {
            "x": rng.standard_normal((T, H)).astype(np.float32),
            "gamma": np.ones(H, np.float32),
            "w": rng.uniform(-4, 4, (H, N)).astype(E4M3),
            "w_scale": np.full((H // 64, N, 2), 127, np.uint8).view(E8M0),
        }
    a, b = run(module, inputs), run(back, inputs)
    for name in a:
        np.testing.assert_array_equal(a[name].view(np.uint8), b[name].view(np.uint8))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "pypto.quant_mx(x, pypto.DT_FP8E5M2)",
            "quant_dtype must be pypto.DT_FP8E4M3, got DT_FP8E5M2",
        ),
        ("pypto.quant_mx(x, mode=pypto.ROUND_UP)", "mode must be pypto.ROUND_DOWN"),
        ("pypto.quant_mx(x, axis=0)", r"the last dim only \(axis -1\), got axis 0"),
        ("pypto.quant_mx(x, performance_mode=1)", "performance_mode must be a bool"),
        ("pypto.quant_mx(pypto.view(x, [2, 32], [0, 0]))", "static multiple of 64 \\(256 bytes\\)"),
        ("pypto.quant_mx(pypto.cast(x, pypto.DT_INT32))", "quant_mx takes f16, bf16, f32"),
    ],
)
def test_bad_calls_are_located_errors(call: str, message: str) -> None:
    source = QUANT.replace("pypto.quant_mx(x, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, True)", call)
    with pytest.raises(TileirError, match=rf"quant\.py:11:\d+: error: pypto\.quant_mx .*{message}"):
        load_source(source, "quant.py")
