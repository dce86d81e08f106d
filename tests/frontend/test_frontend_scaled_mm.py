"""`pypto.scaled_mm`, the MX matmul (issue 14, PyPTO-Gym's grouped fp8 matmuls), and
`t[i] = v` into a tensor. The kernels are in `data/jit/jit_scaled_mm.py`, written in the
Gym's style; every result is checked against `mx_golden` below, written another way than
tileir's semantics: one float64 dot product per 32-element block of K, scaled by
`ldexp` with the exponents decoded from the e8m0 bytes by hand (bits - 127, 0xFF NaN).

PyPTO 0.2.0 has `scaled_mm` but compiles it only for DAV_3510 (Ascend 950): on the CPU
(DAV_2201) it stops at FC3000, so the numbers' reference is PyPTO's documented formula
`out = (mat_a * scale_a) @ (mat_b * scale_b)`; the `pypto` tests check that 0.2.0's own
shape checks accept what tileir emits and refuse what tileir refuses."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import compile_kernel, run
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes, pto
from tileir.passes import apply_pipeline

DATA = Path(__file__).parent / "data" / "jit"
FILE = DATA / "jit_scaled_mm.py"
E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
E8M0 = ml_dtypes.float8_e8m0fnu
M, K, N = 16, 128, 32


def mx_golden(
    a: np.ndarray,
    b: np.ndarray,
    sa: np.ndarray,
    sb: np.ndarray,
    *,
    a_trans: bool = False,
    b_trans: bool = False,
    sa_trans: bool = False,
    sb_trans: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(value, magnitude): sum over blocks j of ldexp(a_blk . b_blk, ea + eb) in float64,
    and the same sum of |terms| (for the rounding bound)."""
    am = (a.T if a_trans else a).astype(np.float64)
    bm = (b.T if b_trans else b).astype(np.float64)
    bits_a, bits_b = sa.view(np.uint8).astype(np.int64), sb.view(np.uint8).astype(np.int64)
    rows, cols = am.shape[0], bm.shape[1]
    value, magnitude = np.zeros((rows, cols)), np.zeros((rows, cols))
    for j in range(am.shape[1] // 32):
        blk = slice(32 * j, 32 * j + 32)
        ea = bits_a[j // 2, :, j % 2] if sa_trans else bits_a[:, j // 2, j % 2]  # [rows]
        eb = bits_b[:, j // 2, j % 2] if sb_trans else bits_b[j // 2, :, j % 2]  # [cols]
        exp = (ea[:, None] - 127) + (eb[None, :] - 127)
        nan = (ea[:, None] == 255) | (eb[None, :] == 255)
        part = np.where(nan, np.nan, np.ldexp(am[:, blk] @ bm[blk, :], exp))
        value += part
        magnitude += np.ldexp(np.abs(am[:, blk]) @ np.abs(bm[blk, :]), exp)
    return value, magnitude


def f32_bound(golden: np.ndarray, magnitude: np.ndarray, k: int) -> np.ndarray:
    """The accumulator is one float32 rounding of a float64 sum: half a float32 ulp, plus
    what two float64 summation orders can differ by (k terms, 2 k 2^-53 of the sum of
    |terms|)."""
    return 0.5 * np.spacing(np.abs(golden).astype(np.float32)) + 2 * k * 2.0**-53 * magnitude


def fp8(rng: np.random.Generator, shape: tuple[int, ...], dtype, small: bool = False):
    if small:  # integers -4..4: exact in every fp8 kind
        return rng.integers(-4, 5, shape).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype)


def scales(rng: np.random.Generator, shape: tuple[int, ...], lo: int = 118, hi: int = 137):
    """e8m0 scales 2^(bits - 127), bits drawn in [lo, hi)."""
    return rng.integers(lo, hi, shape).astype(np.uint8).view(E8M0)


def _run(kernel: str, inputs: dict[str, np.ndarray], args=None) -> dict[str, np.ndarray]:
    """The kernel specialised to the inputs (and `args`: a config), run on them."""
    module = load_file(FILE, kernel=kernel, args={**inputs, **(args or {})})
    return compile_kernel(module)(inputs)


# ------------------------------------------------------------------------- numbers


def test_small_integers_and_power_of_two_scales_are_exact() -> None:
    """Every sum is an exact float32 here (|x| <= 4, 2^-3..2^3 scales, K = 128), so the
    bf16 output is the golden rounded once, bit for bit."""
    rng = np.random.default_rng(0)
    x, w = fp8(rng, (M, K), E4M3, True), fp8(rng, (K, N), E4M3, True)
    xs, ws = scales(rng, (M, K // 64, 2), 124, 131), scales(rng, (K // 64, N, 2), 124, 131)
    y = _run("mx_linear", {"x": x, "w": w, "x_scale": xs, "w_scale": ws})["y"]
    golden, _ = mx_golden(x, w, xs, ws)
    assert np.array_equal(golden.astype(np.float32).astype(np.float64), golden)
    want = golden.astype(np.float32).astype(ml_dtypes.bfloat16)
    assert y.dtype == want.dtype and np.array_equal(y.view(np.uint16), want.view(np.uint16))
    # the scales matter: without them the result is another one
    plain = x.astype(np.float64) @ w.astype(np.float64)
    assert not np.allclose(plain, golden)


@pytest.mark.parametrize("b_trans", [False, True])
def test_grouped_experts_with_a_config_object(b_trans: bool) -> None:
    """Rows 0..4 use expert 0, rows 5..15 expert 1 (the config's group sizes); random
    fp8 values, f32 out, within one float32 rounding of the golden."""
    rng = np.random.default_rng(1 + b_trans)
    x = fp8(rng, (M, K), E4M3)
    w = fp8(rng, (2, N, K) if b_trans else (2, K, N), E4M3)
    xs = scales(rng, (M, K // 64, 2))
    ws = scales(rng, (2, N, K // 64, 2) if b_trans else (2, K // 64, N, 2))
    y = np.full((M, N), np.nan, np.float32)
    cfg = f"GroupConfig(b_trans={b_trans})"
    out = _run(
        "mx_grouped", {"x": x, "w": w, "x_scale": xs, "w_scale": ws, "y": y}, {"config": cfg}
    )
    for g, rows in enumerate((slice(0, 5), slice(5, 16))):
        golden, mag = mx_golden(x[rows], w[g], xs[rows], ws[g], b_trans=b_trans, sb_trans=b_trans)
        err = np.abs(out["y"][rows].astype(np.float64) - golden)
        assert np.all(err <= f32_bound(golden, mag, K)), err.max()
    # the bound is tight enough to notice a wrong block order: swapping the two scales
    # of each pair of expert 1's left scales gives another result
    swapped = xs[5:16, :, ::-1]
    other, _ = mx_golden(x[5:16], w[1], swapped, ws[1], b_trans=b_trans, sb_trans=b_trans)
    assert np.abs(out["y"][5:16] - other).max() > 1.0


def test_transposed_left_operand_mixed_fp8_and_a_bias() -> None:
    """e5m2 x (stored [K, M], its scales [K / 64, M, 2]) by e4m3 w, plus an f32 bias
    row, f16 out: small integers, so exact."""
    rng = np.random.default_rng(3)
    xt, w = fp8(rng, (K, M), E5M2, True), fp8(rng, (K, N), E4M3, True)
    xs, ws = scales(rng, (K // 64, M, 2), 125, 130), scales(rng, (K // 64, N, 2), 125, 130)
    bias = (rng.integers(-8, 9, (1, N)) / 4).astype(np.float32)
    ins = {"xt": xt, "w": w, "xt_scale": xs, "w_scale": ws, "bias": bias}
    y = _run("mx_trans_bias", ins)["y"]
    golden, _ = mx_golden(xt, w, xs, ws, a_trans=True, sa_trans=True)
    golden = golden + bias.astype(np.float64)
    assert np.array_equal(golden.astype(np.float32).astype(np.float64), golden)
    assert y.dtype == np.float16
    assert np.array_equal(y, golden.astype(np.float32).astype(np.float16))


@pytest.mark.parametrize("rows", [13, 16, 3])
def test_row_tiles_of_a_dynamic_token_count_with_a_tail(rows: int) -> None:
    """8-row tiles over a DYNAMIC row count: the tail tile's rows past the end are
    neither computed into the output nor written."""
    rng = np.random.default_rng(rows)
    x, w = fp8(rng, (rows, K), E4M3), fp8(rng, (N, K), E4M3)
    xs, ws = scales(rng, (rows, K // 64, 2)), scales(rng, (N, K // 64, 2))
    y = np.zeros((rows, N), np.float32)
    out = _run("mx_row_tiles", {"x": x, "w": w, "x_scale": xs, "w_scale": ws, "y": y})["y"]
    golden, mag = mx_golden(x, w, xs, ws, b_trans=True, sb_trans=True)
    assert out.shape == (rows, N)
    assert np.all(np.abs(out - golden) <= f32_bound(golden, mag, K))


def test_a_nan_scale_makes_its_rows_nan_and_no_other() -> None:
    """e8m0 0xFF is NaN: every output of row 3 (its block 1 scale) is NaN, the rest is
    the golden."""
    rng = np.random.default_rng(4)
    x, w = fp8(rng, (M, K), E4M3, True), fp8(rng, (K, N), E4M3, True)
    xs, ws = scales(rng, (M, K // 64, 2), 125, 130), scales(rng, (K // 64, N, 2), 125, 130)
    xs.view(np.uint8)[3, 0, 1] = 0xFF
    y = _run("mx_linear", {"x": x, "w": w, "x_scale": xs, "w_scale": ws})["y"]
    golden, _ = mx_golden(x, w, xs, ws)
    assert np.isnan(golden[3]).all() and np.isnan(y[3].astype(np.float32)).all()
    rest = np.delete(np.arange(M), 3)
    assert np.array_equal(y[rest], golden[rest].astype(np.float32).astype(ml_dtypes.bfloat16))


def _k_split_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": fp8(rng, (M, 2 * K), E4M3, True),
        "w": fp8(rng, (2 * K, N), E5M2, True),
        "x_scale": scales(rng, (M, 2 * K // 64, 2), 125, 130),
        "w_scale": scales(rng, (2 * K // 64, N, 2), 125, 130),
        "y": np.zeros((M, N), np.float32),
        "last": np.zeros((M, N), np.float32),
    }


def test_partial_products_written_at_an_index_of_a_workspace() -> None:
    """`partial[h] = scaled_mm(...)` (a loop index) and `partial[-1] = v`: PyPTO's
    `Tensor.__setitem__` with an integer index (the value reshaped to a size-1 dim there)."""
    ins = _k_split_inputs(5)
    out = _run("mx_k_split", ins)
    halves = [
        mx_golden(
            ins["x"][:, h * K : (h + 1) * K],
            ins["w"][h * K : (h + 1) * K],
            ins["x_scale"][:, 2 * h : 2 * h + 2],
            ins["w_scale"][2 * h : 2 * h + 2],
        )[0]
        for h in (0, 1)
    ]
    assert np.array_equal(out["y"], (halves[0] + halves[1]).astype(np.float32))
    assert np.array_equal(out["last"], (2 * halves[1]).astype(np.float32))
    whole, _ = mx_golden(ins["x"], ins["w"], ins["x_scale"], ins["w_scale"])
    assert np.array_equal(out["y"], whole.astype(np.float32))


# ------------------------------------------------------------------------- IR, passes, emitter


def test_the_op_and_its_flags_in_the_ir() -> None:
    module = load_file(FILE, kernel="mx_grouped", args=_grouped_args(True))
    ops = [op for op in module.walk() if isinstance(op, pto.ScaledMmOp)]
    assert len(ops) == 2
    assert all(op.b_trans is not None and op.scale_b_trans is not None for op in ops)
    assert all(op.a_trans is None and op.scale_a_trans is None for op in ops)
    assert [op.result.type.get_shape() for op in ops] == [(5, N), (11, N)]


def _grouped_args(b_trans: bool) -> dict[str, str]:
    w = f"2x{N}x{K}" if b_trans else f"2x{K}x{N}"
    ws = f"2x{N}x{K // 64}x2" if b_trans else f"2x{K // 64}x{N}x2"
    return {
        "x": f"{M}x{K}xf8E4M3FN",
        "w": f"{w}xf8E4M3FN",
        "x_scale": f"{M}x{K // 64}x2xf8E8M0FNU",
        "w_scale": f"{ws}xf8E8M0FNU",
        "y": f"{M}x{N}xf32",
        "config": f"GroupConfig(b_trans={b_trans})",
    }


def test_default_pipeline_keeps_the_bits_and_labels_the_stage_linear() -> None:
    ins = _k_split_inputs(6)
    module = load_file(FILE, kernel="mx_row_tiles")
    rng = np.random.default_rng(7)
    rows = 13
    feed = {
        "x": fp8(rng, (rows, K), E4M3),
        "w": fp8(rng, (N, K), E4M3),
        "x_scale": scales(rng, (rows, K // 64, 2)),
        "w_scale": scales(rng, (N, K // 64, 2)),
        "y": np.zeros((rows, N), np.float32),
    }
    before = run(module, feed)["y"]
    apply_pipeline(module, "vc-split,semantic-labels")
    stages = [op for op in module.walk() if isinstance(op, pto.StageOp)]
    cube = [s for s in stages if s.unit.data == "cube"]
    assert len(cube) == 1 and cube[0].label.data == "linear"
    assert any(isinstance(op, pto.ScaledMmOp) for op in cube[0].walk())
    module = load_file(FILE, kernel="mx_k_split")
    plain = run(module, ins)
    apply_pipeline(module, "default")
    assert np.array_equal(run(module, ins)["y"], plain["y"])
    assert np.array_equal(run(load_file(FILE, kernel="mx_row_tiles"), feed)["y"], before)


@pytest.mark.parametrize("kernel", ["mx_grouped", "mx_trans_bias", "mx_k_split"])
def test_emitted_kernels_read_back_to_the_same_numbers(kernel: str, tmp_path: Path) -> None:
    args = _grouped_args(True) if kernel == "mx_grouped" else None
    module = load_file(FILE, kernel=kernel, args=args)
    text = emit(module)
    assert "pypto.scaled_mm(" in text
    assert "# tileir: PyPTO 0.2.0 compiles scaled_mm (fp8 operands) for DAV_3510" in text
    if kernel == "mx_trans_bias":
        assert "a_trans=True, scale_a_trans=True" in text
        assert 'extend_params={"bias_tensor": bias}' in text
    again = tmp_path / f"{kernel}_emitted.py"
    again.write_text(text)
    back = load_file(
        again, kernel=kernel, args={k: v for k, v in (args or {}).items() if k != "config"}
    )
    inputs = {}
    rng = np.random.default_rng(8)
    (k_op,) = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    for arg in k_op.body.block.args:
        name = arg.name_hint
        t = arg.type
        shape = tuple(t.get_shape())
        elem = str(t.get_element_type())
        if elem == "f8E8M0FNU":
            inputs[name] = scales(rng, shape, 124, 131)
        elif elem.startswith("f8"):
            inputs[name] = fp8(rng, shape, E4M3 if "E4M3" in elem else E5M2)
        else:
            inputs[name] = rng.standard_normal(shape).astype(
                dtypes.element_type(t.element_type).numpy
            )
    a = run(module, {k: v.copy() for k, v in inputs.items()})
    b = run(back, {k: v.copy() for k, v in inputs.items()})
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name


# ------------------------------------------------------------------------- errors

_HEADER = """
import pypto

@pypto.frontend.jit
def k(
    x: pypto.Tensor([16, {k}], pypto.{xdt}),
    w: pypto.Tensor([{k}, 32], pypto.DT_FP8E4M3),
    xs: pypto.Tensor({xs}, pypto.DT_FP8E8M0),
    ws: pypto.Tensor([{k0}, 32, 2], pypto.DT_FP8E8M0),
    y: pypto.Tensor([16, 32], pypto.DT_FP32),
):
    y[:] = pypto.scaled_mm(x, w, pypto.{out}, xs, ws{extra})
"""


def _source(k=128, xdt="DT_FP8E4M3", xs=None, out="DT_FP32", extra="") -> str:
    xs = xs or [16, k // 64, 2]
    return _HEADER.format(k=k, xdt=xdt, xs=xs, k0=max(k // 64, 1), out=out, extra=extra)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            _source(xs=[2, 16, 2]),
            "scale_a shape [2, 16, 2] should be [16, 2, 2] for M=16, K=128, N=32",
        ),
        (
            _source(extra=", scale_b_trans=True"),
            "scale_b shape [2, 32, 2] should be [32, 2, 2] (scale_b_trans)",
        ),
        (_source(xs=[16, 2, 1]), "scale_a shape [16, 2, 1] should be [16, 2, 2]"),
        (_source(k=96, xs=[16, 1, 2]), "K=96 must be a multiple of 64"),
        (_source(xdt="DT_BF16"), "mat_a has bf16 elements; scaled_mm takes f8E4M3FN, f8E5M2"),
        (_source(out="DT_INT8"), "out element type i8 is not one of f16, bf16, f32"),
        (
            _source(extra=', extend_params={"scale": 2.0}'),
            "extend_params key 'scale' is not supported",
        ),
        (_source(extra=", a_trans=1"), "a_trans must be a bool, got"),
        (_source(extra=", c_matrix_nz=True"), "c_matrix_nz=True is not supported"),
    ],
)
def test_bad_calls_are_located_errors(source: str, message: str) -> None:
    with pytest.raises(TileirError) as info:
        load_source(source, "bad_scaled_mm.py")
    text = str(info.value)
    assert text.startswith("bad_scaled_mm.py:12:"), text
    assert message in text, text


def test_an_element_assignment_is_still_a_located_error() -> None:
    source = """
import pypto

@pypto.frontend.jit
def k(x: pypto.Tensor([4, 4], pypto.DT_FP32), y: pypto.Tensor([2, 4, 4], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 4)
    y[2] = x[:, :]
"""
    with pytest.raises(
        TileirError, match=r"bad_index\.py:7:7: error: index 2 is out of range for dim 0 of size 2"
    ):
        load_source(source, "bad_index.py")
    with pytest.raises(TileirError, match=r"bad_index\.py:7:7: error: assigning one element"):
        load_source(source.replace("y[2] = x[:, :]", "y[1, 2, 3] = x[:, :]"), "bad_index.py")


# ------------------------------------------------------------------------- the real pypto


def _compile(path: Path, kernel: str, args):
    from tileir.backends.pypto.harness import compile_kernel as pypto_compile

    return pypto_compile(path, kernel, args)


@pytest.mark.pypto
def test_pypto_020_takes_the_emitted_call_up_to_its_architecture_check(tmp_path: Path) -> None:
    """0.2.0 runs its Python checks of scaled_mm (dims, scale shapes, K alignment) on the
    emitted kernel and stops only where its Cube checks want DAV_3510: FC3000, what the
    emitted comment says."""
    from tileir.backends.pypto.harness import ArgSpec

    path = tmp_path / "mx_trans_bias_npu.py"
    path.write_text(emit(load_file(FILE, kernel="mx_trans_bias")))
    args = [
        ArgSpec("xt", (K, M), "f8E5M2"),
        ArgSpec("w", (K, N), "f8E4M3FN"),
        ArgSpec("xt_scale", (K // 64, M, 2), "f8E8M0FNU"),
        ArgSpec("w_scale", (K // 64, N, 2), "f8E8M0FNU"),
        ArgSpec("bias", (1, N), "f32"),
        ArgSpec("y", (M, N), "f16"),
    ]
    result = _compile(path, "mx_trans_bias", args)
    assert not result.ok
    assert "FC3000" in result.error and "DAV_3510" in result.error, result.error


@pytest.mark.pypto
def test_pypto_020_refuses_the_scale_shape_tileir_refuses(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec

    source = _source(xs=[2, 16, 2])
    with pytest.raises(TileirError, match="scale_a shape"):
        load_source(source, "bad.py")
    path = tmp_path / "bad_scale.py"
    path.write_text(source)
    args = [
        ArgSpec("x", (16, K), "f8E4M3FN"),
        ArgSpec("w", (K, N), "f8E4M3FN"),
        ArgSpec("xs", (2, 16, 2), "f8E8M0FNU"),
        ArgSpec("ws", (K // 64, N, 2), "f8E8M0FNU"),
        ArgSpec("y", (16, N), "f32"),
    ]
    result = _compile(path, "k", args)
    assert not result.ok
    assert "Kscale0 dimension mismatch" in result.error, result.error
