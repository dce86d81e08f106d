"""Smaller PyPTO API constructs of the Gym's kernels (issues 14, 15): `pypto.loop(...,
parallel=True)` and `unroll_list` given as a set.

Kernels are in `data/jit/jit_small_api.py`, written in the Gym's style; results are
checked against numpy written here, the written-back PyPTO against the real PyPTO 0.2.0
(marker `pypto`)."""

from __future__ import annotations

import ast
import struct
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto.emitter import emit_module
from tileir.diagnostics import TileirError
from tileir.dialect import pto

FILE = Path(__file__).parent / "data" / "jit" / "jit_small_api.py"


def _loops(module) -> list[tuple[str, str, list[int], bool]]:
    return [
        (op.name, op.loop_name.data, op.factors, op.parallel is not None)
        for op in module.walk()
        if isinstance(op, pto.LoopOp | pto.LoopUnrollOp)
    ]


def _scaled_rows_golden(x: np.ndarray) -> dict[str, np.ndarray]:
    x64 = x.astype(np.float64)
    return {"y": np.exp(x64) / 2.0, "z": x64 + 1.0}


# --------------------------------------------------------------------------- loops


def test_parallel_and_a_set_unroll_list_are_read() -> None:
    """`parallel=True` is kept on the loop; a set of factors is PyPTO's `set(...)`,
    sorted descending with 1 added ({2, 4} -> [4, 2, 1])."""
    assert _loops(load_file(FILE, kernel="scaled_rows")) == [
        ("pto.loop", "LOOP_ROWS", [8, 4, 2, 1], True),
        ("pto.loop_unroll", "LOOP_SHIFT", [4, 2, 1], True),
    ]


def test_parallel_loops_compute_what_numpy_says() -> None:
    x = np.random.default_rng(1).standard_normal((6, 32)).astype(np.float32)
    got = run_numpy(load_file(FILE, kernel="scaled_rows"), {"x": x}, "scaled_rows")
    for name, want in _scaled_rows_golden(x).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)


def test_parallel_is_written_back_and_reads_back() -> None:
    text = emit_module(load_file(FILE, kernel="scaled_rows"))
    loops = [
        n.iter
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Call)
    ]
    assert [ast.unparse(c.func) for c in loops] == ["pypto.loop", "pypto.loop_unroll"]
    for call in loops:
        assert {k.arg: ast.unparse(k.value) for k in call.keywords}["parallel"] == "True"
    assert _loops(load_source(text, "back.py")) == _loops(load_file(FILE, kernel="scaled_rows"))


def test_default_pipeline_keeps_parallel_on_every_loop_it_makes() -> None:
    """`loop-unroll` splits each loop into chunk loops of independent iterations: all
    keep `parallel`; the numbers stay those of numpy."""
    from tileir.ir import make_context
    from tileir.passes.pipeline import DefaultPipelinePass

    module = load_file(FILE, kernel="scaled_rows")
    DefaultPipelinePass().apply(make_context(), module)
    loops = _loops(module)
    assert loops and all(parallel for *_, parallel in loops)
    x = np.random.default_rng(2).standard_normal((6, 32)).astype(np.float32)
    got = run_numpy(module, {"x": x}, "scaled_rows")
    for name, want in _scaled_rows_golden(x).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)


LOOP_KERNEL = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
    for i in pypto.loop(4, {kw}):
        out[i:i + 1, :] = pypto.exp(x[i:i + 1, :])
"""


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ('parallel="yes"', r"l\.py:6:14: error: pypto\.loop\(\) parallel must be True or False"),
        ("unroll_list={2, 0}", r"l\.py:6:14: error: unroll_list factors must be positive"),
        ('unroll_list={2, "4"}', r"l\.py:6:14: error: unroll_list must be a list of constant"),
    ],
)
def test_bad_loop_keywords_are_located_errors(kw: str, message: str) -> None:
    with pytest.raises(TileirError, match=message):
        load_source(LOOP_KERNEL.format(kw=kw), "l.py")


@pytest.mark.pypto
def test_real_pypto_runs_the_written_back_parallel_loops(tmp_path: Path) -> None:
    """PyPTO 0.2.0's `loop` takes `**kwargs` and ignores `parallel`: the written-back
    kernel compiles there and computes numpy's numbers."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "scaled_rows.py"
    path.write_text(emit_module(load_file(FILE, kernel="scaled_rows")))
    x = np.random.default_rng(3).standard_normal((6, 32)).astype(np.float32)
    args = [ArgSpec(n, (6, 32), "f32") for n in ("x", "y", "z")]
    got = run_kernel(path, "scaled_rows", args, {"x": x}, outputs=["y", "z"])
    for name, want in _scaled_rows_golden(x).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- auto_mix_partition


def _mixed_golden(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.exp((a.astype(np.float64) @ b.astype(np.float64)) / 8.0)


def _ab(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "a": rng.standard_normal((16, 32)).astype(np.float32) / 4,
        "b": rng.standard_normal((32, 16)).astype(np.float32) / 4,
    }


def test_auto_mix_partition_is_a_compiler_option_in_program_order() -> None:
    """Read in the kernel as `pto.set_options "auto_mix_partition" {value = 1}`, before
    the ops it steers; the call in host code (module level) reads nothing."""
    module = load_file(FILE, kernel="mixed_matmul")
    (kernel,) = [op for op in module.walk() if isinstance(op, pto.KernelOp)]
    ops = list(kernel.body.block.ops)
    (option,) = [op for op in ops if isinstance(op, pto.SetOptionsOp)]
    assert option.kind.data == "auto_mix_partition"
    assert {k: v.value.data for k, v in option.options.data.items()} == {"value": 1}
    assert ops.index(option) < ops.index(next(o for o in ops if isinstance(o, pto.MatmulOp)))


def test_numpy_back_end_ignores_auto_mix_partition() -> None:
    inputs = _ab(4)
    got = run_numpy(load_file(FILE, kernel="mixed_matmul"), inputs, "mixed_matmul")["out"]
    np.testing.assert_allclose(got, _mixed_golden(**inputs), rtol=1e-5)


def test_auto_mix_partition_is_left_out_for_020_with_a_comment() -> None:
    text = emit_module(load_file(FILE, kernel="mixed_matmul"))
    assert "    pass  # tileir: PyPTO 0.2.0 has no experimental.auto_mix_partition: left out" in (
        text.splitlines()
    )
    assert "auto_mix_partition(" not in text


def test_default_pipeline_keeps_auto_mix_partition() -> None:
    from tileir.ir import make_context
    from tileir.passes.pipeline import DefaultPipelinePass

    module = load_file(FILE, kernel="mixed_matmul")
    DefaultPipelinePass().apply(make_context(), module)
    kinds = [op.kind.data for op in module.walk() if isinstance(op, pto.SetOptionsOp)]
    assert kinds == ["auto_mix_partition"]
    inputs = _ab(5)
    got = run_numpy(module, inputs, "mixed_matmul")["out"]
    np.testing.assert_allclose(got, _mixed_golden(**inputs), rtol=1e-5)


MIX_KERNEL = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
    pypto.experimental.auto_mix_partition({value})
    out[:] = pypto.exp(x)
"""


@pytest.mark.parametrize("value", ["2", "True", "1.0", "'1'", "-1"])
def test_auto_mix_partition_takes_0_or_1(value: str) -> None:
    """PyPTO raises ValueError for anything but the ints 0 and 1 (bools too)."""
    with pytest.raises(
        TileirError, match=r"m\.py:6:5: error: pypto\.experimental\.auto_mix_partition takes 0"
    ):
        load_source(MIX_KERNEL.format(value=value), "m.py")


def test_verifier_refuses_a_bad_auto_mix_partition() -> None:
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
    from xdsl.utils.exceptions import VerifyException

    for options in ({"value": IntegerAttr(2, 64)}, {"on": IntegerAttr(1, 64)}):
        with pytest.raises(VerifyException, match="takes {value = 0} or {value = 1}"):
            pto.SetOptionsOp("auto_mix_partition", DictionaryAttr(options)).verify()


@pytest.mark.pypto
def test_real_pypto_runs_the_matmul_written_back_without_auto_mix_partition(
    tmp_path: Path,
) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "mixed_matmul.py"
    path.write_text(emit_module(load_file(FILE, kernel="mixed_matmul")))
    inputs = _ab(6)
    args = [ArgSpec("a", (16, 32), "f32"), ArgSpec("b", (32, 16), "f32")]
    args.append(ArgSpec("out", (16, 16), "f32"))
    got = run_kernel(path, "mixed_matmul", args, inputs, outputs=["out"])["out"]
    np.testing.assert_allclose(got, _mixed_golden(**inputs), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- precision_type


def _softplus_golden(x: np.ndarray) -> np.ndarray:
    sp = np.log1p(np.exp(x.astype(np.float64)))
    return np.sqrt(sp * sp + 1.0)  # sqrt(1 / rsqrt(v)) ** 2 == v ** 0.5


def test_precision_type_is_kept_on_unary_ops_and_pow() -> None:
    module = load_file(FILE, kernel="precise_softplus")
    kept = [
        (op.name, op.precision_type.data if op.precision_type is not None else None)
        for op in module.walk()
        if isinstance(op, pto.PrecisionUnaryOp | pto.PrecisionBinaryOp)
    ]
    assert kept == [
        ("pto.exp", "HIGH_PRECISION"),
        ("pto.log", "INTRINSIC"),
        ("pto.rsqrt", "INTRINSIC"),
        ("pto.reciprocal", "HIGH_PRECISION"),
        ("pto.sqrt", None),
        ("pto.pow", "INTRINSIC"),
    ]


def test_numpy_computes_the_same_whatever_the_precision_type() -> None:
    x = np.random.default_rng(7).standard_normal((6, 32)).astype(np.float32)
    got = run_numpy(load_file(FILE, kernel="precise_softplus"), {"x": x}, "precise_softplus")
    np.testing.assert_allclose(got["out"], _softplus_golden(x), rtol=1e-5)


def test_precision_type_is_left_out_for_020_with_a_comment() -> None:
    text = emit_module(load_file(FILE, kernel="precise_softplus"))
    code = "".join(line.split("#")[0] for line in text.splitlines())
    assert "PrecisionType" not in code and "LogBaseType" not in code
    comments = [line for line in text.splitlines() if "has no PrecisionType" in line]
    assert len(comments) == 5
    assert "pypto.exp(x)  # tileir: PyPTO 0.2.0 has no PrecisionType: precision_type=" in text
    back = load_source(text, "back.py")
    ops = [op for op in back.walk() if isinstance(op, pto.PrecisionUnaryOp | pto.PowOp)]
    assert len(ops) == 6 and all(op.precision_type is None for op in ops)


PRECISION_KERNEL = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
    out[:] = {call}
"""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("pypto.exp(x, pypto.PrecisionType.FAST)", r"pypto\.PrecisionType\.FAST is not a"),
        ("pypto.sqrt(x, 1)", r"pypto\.sqrt\(\) precision_type must be a pypto\.PrecisionType"),
        ("pypto.log(x, pypto.LogBaseType.LOG_2)", r"pypto\.log base .* is not supported"),
        ("pypto.neg(x, pypto.PrecisionType.INTRINSIC)", r"too many positional arguments"),
    ],
)
def test_bad_precision_arguments_are_located_errors(call: str, message: str) -> None:
    with pytest.raises(TileirError, match=r"p\.py:6:\d+: error: .*" + message):
        load_source(PRECISION_KERNEL.format(call=call), "p.py")


def test_verifier_refuses_an_unknown_precision_type() -> None:
    from xdsl.utils.exceptions import VerifyException

    module = load_source(PRECISION_KERNEL.format(call="pypto.exp(x)"), "p.py")
    (op,) = [o for o in module.walk() if isinstance(o, pto.ExpOp)]
    op.precision_type = StringAttr("FAST")
    with pytest.raises(VerifyException, match=r"'pto\.exp' precision_type 'FAST' is not one of"):
        op.verify()


@pytest.mark.pypto
def test_real_pypto_runs_the_ops_written_back_without_precision_type(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "precise_softplus.py"
    path.write_text(emit_module(load_file(FILE, kernel="precise_softplus")))
    x = np.random.default_rng(8).standard_normal((6, 32)).astype(np.float32)
    args = [ArgSpec("x", (6, 32), "f32"), ArgSpec("out", (6, 32), "f32")]
    got = run_kernel(path, "precise_softplus", args, {"x": x}, outputs=["out"])["out"]
    np.testing.assert_allclose(got, _softplus_golden(x), rtol=1e-4)


# --------------------------------------------------------------------------- matmul extend_params


def _truncated_scale(scale: float) -> float:
    """The fixpipe's scale, by hand: float32 bits with the low 13 mantissa bits cleared."""
    (bits,) = struct.unpack("<I", struct.pack("<f", scale))
    (value,) = struct.unpack("<f", struct.pack("<I", bits & ~0x1FFF))
    return value


def test_fixpipe_scale_keeps_10_mantissa_bits() -> None:
    """0.2 is 0x3E4CCCCD; its top 10 mantissa bits give 0x3E4CC000 = 1.599609375 / 8."""
    from tileir.backends.numpy.semantics import fixpipe_scale

    assert _truncated_scale(0.2) == float(fixpipe_scale(0.2)) == 1.599609375 / 8
    assert _truncated_scale(3.0) == float(fixpipe_scale(3.0)) == 3.0


def _ints(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.int8)


def _dequant_golden(a: np.ndarray, b: np.ndarray, relu: bool) -> np.ndarray:
    acc = a.astype(np.int64) @ b.astype(np.int64)  # exact: |acc| < 2^24
    if relu:
        acc = np.maximum(acc, 0)
    product = np.float32(acc.astype(np.float64) * _truncated_scale(0.05))
    return product.astype(np.float16)


def test_matmul_fixpipe_options_are_read() -> None:
    mms = [
        op
        for k in ("dequant_matmul", "quant_matmul", "tf32_relu_matmul")
        for op in load_file(FILE, kernel=k).walk()
        if isinstance(op, pto.MatmulOp)
    ]
    assert [
        (
            op.scale.value.data if op.scale is not None else None,
            op.relu is not None,
            op.trans_mode.data if op.trans_mode is not None else None,
            op.b_trans is not None,
        )
        for op in mms
    ] == [
        (0.05, False, None, False),  # relu_type=NO_RELU is PyPTO's default
        (0.05, True, None, False),
        (3.0, False, None, True),
        (None, True, "CAST_RINT", False),
    ]


def test_dequant_matmul_computes_what_numpy_says() -> None:
    a, b = _ints(11, (32, 64)), _ints(12, (64, 32))
    got = run_numpy(load_file(FILE, kernel="dequant_matmul"), {"a": a, "b": b}, "dequant_matmul")
    np.testing.assert_array_equal(got["out"], _dequant_golden(a, b, relu=False))
    np.testing.assert_array_equal(got["relu_out"], _dequant_golden(a, b, relu=True))


def test_quant_matmul_rounds_half_even_and_saturates_to_int8() -> None:
    rng = np.random.default_rng(13)
    x1 = (rng.standard_normal((32, 64)) * 2).astype(np.float16)
    x2 = (rng.standard_normal((32, 64)) * 2).astype(np.float16)
    got = run_numpy(load_file(FILE, kernel="quant_matmul"), {"x1": x1, "x2": x2}, "quant_matmul")
    acc = np.float32(x1.astype(np.float64) @ x2.astype(np.float64).T)
    want = np.clip(np.rint(acc.astype(np.float64) * 3.0), -128, 127).astype(np.int8)
    assert got["out"].dtype == np.int8
    assert (want == -128).any() and (want == 127).any()  # saturates both ways
    np.testing.assert_array_equal(got["out"], want)


def _tf32_rint(x: np.ndarray) -> np.ndarray:
    """Round to 11 significant bits, ties to even, by frexp (mantissa in [0.5, 1))."""
    m, e = np.frexp(x.astype(np.float64))
    return np.ldexp(np.round(m * 2.0**11) / 2.0**11, e)


def test_tf32_relu_matmul_rounds_the_inputs_first() -> None:
    rng = np.random.default_rng(14)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    got = run_numpy(
        load_file(FILE, kernel="tf32_relu_matmul"), {"a": a, "b": b}, "tf32_relu_matmul"
    )
    want = np.maximum(_tf32_rint(a) @ _tf32_rint(b), 0.0)
    np.testing.assert_allclose(got["out"], want, rtol=1e-6, atol=1e-6)
    plain = np.maximum(a.astype(np.float64) @ b, 0.0)
    assert np.abs(got["out"] - plain).max() > 1e-4  # TF32 rounding is visible


def test_fixpipe_options_are_written_back_and_read_back() -> None:
    for kernel in ("dequant_matmul", "tf32_relu_matmul"):
        module = load_file(FILE, kernel=kernel)
        text = emit_module(module)
        assert "extend_params={" in text
        back = [op for op in load_source(text, "b.py").walk() if isinstance(op, pto.MatmulOp)]
        mine = [op for op in module.walk() if isinstance(op, pto.MatmulOp)]
        for x, y in zip(mine, back, strict=True):
            assert (x.scale, x.relu, x.trans_mode) == (y.scale, y.relu, y.trans_mode)


def test_int8_matmul_output_cannot_be_written_for_020() -> None:
    """PyPTO 0.2.0 refuses an int8 matmul output (FC3002, measured): a located error."""
    with pytest.raises(
        TileirError, match=r"jit_small_api\.py:\d+:\d+: error: PyPTO 0\.2\.0 has no int8"
    ):
        emit_module(load_file(FILE, kernel="quant_matmul"))


MATMUL_KERNEL = """\
import pypto


@pypto.frontend.jit()
def k(a: pypto.Tensor([16, 32], pypto.{dt}), b: pypto.Tensor([32, 32], pypto.{dt}),
      out: pypto.Tensor([16, 32], pypto.{odt})):
    out[:] = pypto.matmul(a, b, pypto.{odt}, extend_params={params})
"""


@pytest.mark.parametrize(
    ("dt", "odt", "params", "message"),
    [
        ("DT_INT8", "DT_FP16", '{"scale_tensor": a}', r"key 'scale_tensor' is not supported"),
        ("DT_INT8", "DT_FP16", '{"scale": "0.1"}', r"scale must be a Python number"),
        ("DT_INT8", "DT_FP16", '{"scale": 0.1, "relu_type": True}', r"relu_type must be one of"),
        ("DT_FP32", "DT_FP32", '{"trans_mode": pypto.TransMode.FAST}', r"trans_mode must be one"),
        ("DT_INT8", "DT_INT8", "{}", r"i8 inputs cannot produce i8 .*give extend_params"),
        ("DT_INT8", "DT_FP16", "{}", r"i8 inputs cannot produce f16"),
        ("DT_FP16", "DT_FP32", '{"scale": 2.0}', r"f16 inputs cannot produce f32 with a scale"),
    ],
)
def test_bad_extend_params_are_located_errors(dt: str, odt: str, params: str, message: str) -> None:
    source = MATMUL_KERNEL.format(dt=dt, odt=odt, params=params)
    with pytest.raises(TileirError, match=r"m\.py:7:\d+: error: .*" + message):
        load_source(source, "m.py")


@pytest.mark.parametrize("odt", ["DT_BF16", "DT_FP16"])
def test_f32_matmul_to_a_half_type_is_the_f32_product_rounded_once(odt: str) -> None:
    """The docs list only DT_FP32 out for FP32 inputs, but 0.2.0 compiles and runs bf16 /
    f16 out (measured, and the pypto test below): the FP32 product, one rounding. A bias
    stays FP32-only."""
    import ml_dtypes

    source = MATMUL_KERNEL.format(dt="DT_FP32", odt=odt, params="{}")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    got = run_numpy(load_source(source, "m.py"), {"a": a, "b": b})["out"]
    half = ml_dtypes.bfloat16 if odt == "DT_BF16" else np.float16
    # FP32 products summed exactly enough in float64, then f32, then the half type
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(half)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    from tileir.dialect import shapes

    short = "bf16" if odt == "DT_BF16" else "f16"
    shapes.matmul_dtypes("f32", short, "f32")
    with pytest.raises(shapes.ShapeError, match=rf"bias element type {short} is not allowed"):
        shapes.matmul_dtypes("f32", short, short)


@pytest.mark.pypto
@pytest.mark.parametrize("odt", ["DT_BF16", "DT_FP16"])
def test_real_pypto_rounds_an_f32_matmul_to_a_half_type_alike(odt: str, tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    source = MATMUL_KERNEL.format(dt="DT_FP32", odt=odt, params="{}")
    source = source.replace(
        "    out[:]", "    pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])\n    out[:]"
    )
    path = tmp_path / "m.py"
    path.write_text(source)
    rng = np.random.default_rng(8)
    ins = {
        "a": rng.standard_normal((16, 32)).astype(np.float32),
        "b": rng.standard_normal((32, 32)).astype(np.float32),
    }
    short = "bf16" if odt == "DT_BF16" else "f16"
    args = [ArgSpec("a", (16, 32), "f32"), ArgSpec("b", (32, 32), "f32")]
    args.append(ArgSpec("out", (16, 32), short))
    theirs = np.asarray(run_kernel(path, "k", args, ins, outputs=["out"])["out"])
    ours = run_numpy(load_file(path), ins)["out"]
    assert np.array_equal(theirs.view(np.uint16), ours.view(np.uint16))


def test_scale_zero_is_no_scale_and_trans_mode_needs_f32() -> None:
    """PyPTO's default scale is 0.0 (none); the verifier refuses TF32 rounding of f16."""
    from xdsl.utils.exceptions import VerifyException

    source = MATMUL_KERNEL.format(dt="DT_INT8", odt="DT_INT32", params='{"scale": 0.0}')
    (op,) = [o for o in load_source(source, "m.py").walk() if isinstance(o, pto.MatmulOp)]
    assert op.scale is None
    source = MATMUL_KERNEL.format(
        dt="DT_FP16", odt="DT_FP32", params='{"trans_mode": pypto.TransMode.CAST_ROUND}'
    )
    with pytest.raises(TileirError, match=r"trans_mode \(TF32 rounding\) needs f32 inputs"):
        load_source(source, "m.py")
    op.scale = None
    op.trans_mode = StringAttr("CAST_UP")
    with pytest.raises(VerifyException, match=r"trans_mode 'CAST_UP' is not one of"):
        op.verify()


@pytest.mark.pypto
def test_real_pypto_dequantises_bit_exactly_like_numpy(tmp_path: Path) -> None:
    """0.2.0's pass-verify interpreter applies the truncated scale and the ReLU as the
    numpy back end does, to the bit."""
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "dequant_matmul.py"
    path.write_text(emit_module(load_file(FILE, kernel="dequant_matmul")))
    a, b = _ints(15, (32, 64)), _ints(16, (64, 32))
    args = [ArgSpec("a", (32, 64), "i8"), ArgSpec("b", (64, 32), "i8")]
    args += [ArgSpec("out", (32, 32), "f16"), ArgSpec("relu_out", (32, 32), "f16")]
    got = run_kernel(path, "dequant_matmul", args, {"a": a, "b": b})
    np.testing.assert_array_equal(got["out"], _dequant_golden(a, b, relu=False))
    np.testing.assert_array_equal(got["relu_out"], _dequant_golden(a, b, relu=True))


# --------------------------------------------------------------------------- 4-D matmul


def _qk(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal((2, 2, 16, 32)).astype(np.float32) for n in ("q", "k")}


def _qk_golden(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    return np.einsum("bhmk,bhnk->bhmn", q.astype(np.float64), k.astype(np.float64))


def test_4d_matmul_is_read_and_computes_what_numpy_says() -> None:
    module = load_file(FILE, kernel="batched_4d_matmul")
    (mm,) = [op for op in module.walk() if isinstance(op, pto.MatmulOp)]
    assert mm.result.type.get_shape() == (2, 2, 16, 16)
    inputs = _qk(17)
    got = run_numpy(module, inputs, "batched_4d_matmul")["out"]
    np.testing.assert_allclose(got, _qk_golden(**inputs), rtol=1e-5, atol=1e-5)


def test_5d_matmul_is_refused() -> None:
    source = MATMUL_KERNEL.replace("[16, 32]", "[1, 1, 1, 16, 32]").replace(
        "[32, 32]", "[1, 1, 1, 32, 32]"
    )
    source = source.replace("[16, 32], pypto.{odt}", "[1, 1, 1, 16, 32], pypto.{odt}")
    with pytest.raises(TileirError, match=r"operands must be 2-D, 3-D or 4-D"):
        load_source(source.format(dt="DT_FP32", odt="DT_FP32", params="{}"), "m.py")


@pytest.mark.pypto
def test_real_pypto_runs_the_4d_matmul(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "batched_4d_matmul.py"
    path.write_text(emit_module(load_file(FILE, kernel="batched_4d_matmul")))
    inputs = _qk(18)
    args = [ArgSpec("q", (2, 2, 16, 32), "f32"), ArgSpec("k", (2, 2, 16, 32), "f32")]
    args.append(ArgSpec("out", (2, 2, 16, 16), "f32"))
    got = run_kernel(path, "batched_4d_matmul", args, inputs, outputs=["out"])["out"]
    np.testing.assert_allclose(got, _qk_golden(**inputs), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- where of two scalars


def _masked_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, (4, 16)).astype(np.float32)
    labels[rng.random((4, 16)) < 0.3] = -100.0
    return {"labels": labels, "x": rng.random((4, 16)).astype(np.float16)}


def _masked_golden(labels: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    mask = np.array([[0.0 if v == -100.0 else 1.0 for v in row] for row in labels], np.float32)
    halves = np.array([[0.5 if v > 0.5 else -0.25 for v in row] for row in x], np.float16)
    return {"mask": mask, "halves": halves}


def test_where_of_two_scalars_takes_their_dtype() -> None:
    """Plain numbers are FP32 (PyPTO makes them `Element(DT_FP32, v)`); two Elements of
    one dtype give that dtype."""
    module = load_file(FILE, kernel="masked_rows")
    wheres = [op for op in module.walk() if isinstance(op, pto.WhereOp)]
    assert [str(op.result.type) for op in wheres] == ["tensor<4x16xf32>", "tensor<4x16xf16>"]
    inputs = _masked_inputs(19)
    got = run_numpy(module, inputs, "masked_rows")
    for name, want in _masked_golden(**inputs).items():
        assert got[name].dtype == want.dtype
        np.testing.assert_array_equal(got[name], want)


def test_where_of_two_scalars_is_written_back_with_its_dtype() -> None:
    """As PyPTO writes it. (0.2.0 compiles it, but its pass-verify interpreter cannot run
    a where of two scalars, `WHERE_SSOpError`, measured: no real-PyPTO check here.)"""
    module = load_file(FILE, kernel="masked_rows")
    text = emit_module(module)
    assert "pypto.where(is_ignore, 0.0, 1.0)" in text
    assert "pypto.Element(pypto.DT_FP16, 0.5), pypto.Element(pypto.DT_FP16, -0.25))" in text
    back = [op for op in load_source(text, "b.py").walk() if isinstance(op, pto.WhereOp)]
    assert [str(op.result.type) for op in back] == ["tensor<4x16xf32>", "tensor<4x16xf16>"]


def test_where_of_scalars_of_two_dtypes_is_refused() -> None:
    source = PRECISION_KERNEL.format(
        call="pypto.where(x > 0.0, pypto.Element(pypto.DT_FP16, 1.0), 0.0)"
    )
    with pytest.raises(TileirError, match=r"p\.py:6:\d+: error: pypto\.where with two scalars"):
        load_source(source, "p.py")


# --------------------------------------------------------------------------- attribute assignment


def test_attributes_assigned_in_a_kernel_follow_python() -> None:
    """`self.scale = self.scale * 2.0` and `self.steps += 1` run at trace time: after two
    steps the kernel computes exp(x) * 4 + 2."""
    x = np.random.default_rng(21).standard_normal((4, 16)).astype(np.float32)
    got = run_numpy(load_file(FILE, kernel="stateful_scale"), {"x": x}, "stateful_scale")
    np.testing.assert_allclose(got["out"], np.exp(x.astype(np.float64)) * 4 + 2, rtol=1e-6)


ATTR_KERNEL = """\
import dataclasses
import pypto


@dataclasses.dataclass(frozen=True)
class Frozen:
    rows: int = 4


class Box:
    pass


@pypto.frontend.jit()
def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
    box = Box()
    {stmt}
    out[:] = pypto.exp(x)
"""


@pytest.mark.parametrize(
    ("stmt", "message"),
    [
        ("Frozen().rows = 8", r"cannot assign the attribute `rows` of .*: cannot assign"),
        ("pypto.DT_FP32.name = 'x'", r"cannot assign the attribute `name` of"),
        (
            "for i in pypto.loop(2):\n        box.t = pypto.exp(x)",
            r"storing a tile .* in the attribute `t` inside pypto\.loop",
        ),
    ],
)
def test_bad_attribute_assignments_are_located_errors(stmt: str, message: str) -> None:
    with pytest.raises(TileirError, match=r"a\.py:\d+:\d+: error: " + message):
        load_source(ATTR_KERNEL.format(stmt=stmt), "a.py")


# --------------------------------------------------------------------------- softmax


def _softmax_inputs(seed: int) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(seed)
    return {
        "x": (rng.standard_normal((4, 32)) * 3).astype(ml_dtypes.bfloat16),
        "y": (rng.standard_normal((4, 32)) * 3).astype(np.float32),
    }


def _softmax(v: np.ndarray, axis: int) -> np.ndarray:
    w = v.astype(np.float64)
    e = np.exp(w - w.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_is_read_as_pyptos_composition_and_matches_numpy() -> None:
    """PyPTO 0.2.0 builds softmax from cast, amax, sub, exp, sum, div (and a cast back
    for a non-FP32 input); so does tileir, and the numbers are softmax's."""
    module = load_file(FILE, kernel="row_softmax")
    names = [op.name.removeprefix("pto.") for op in module.walk() if op.name.startswith("pto.")]
    body = [n for n in names if n in ("cast", "amax", "sub", "exp", "sum", "div")]
    assert body == ["cast", "amax", "sub", "exp", "sum", "div", "cast"] + [
        "amax",
        "sub",
        "exp",
        "sum",
        "div",
    ]
    inputs = _softmax_inputs(22)
    got = run_numpy(module, inputs, "row_softmax")
    assert got["out_x"].dtype == inputs["x"].dtype
    np.testing.assert_allclose(
        got["out_x"].astype(np.float64), _softmax(inputs["x"], -1), rtol=2**-8, atol=1e-6
    )
    np.testing.assert_allclose(got["out_y"], _softmax(inputs["y"], 0), rtol=1e-6, atol=1e-7)


@pytest.mark.pypto
def test_real_pypto_runs_the_written_back_softmax(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "row_softmax.py"
    path.write_text(emit_module(load_file(FILE, kernel="row_softmax")))
    inputs = _softmax_inputs(23)
    args = [ArgSpec("x", (4, 32), "bf16"), ArgSpec("y", (4, 32), "f32")]
    args += [ArgSpec("out_x", (4, 32), "bf16"), ArgSpec("out_y", (4, 32), "f32")]
    got = run_kernel(path, "row_softmax", args, inputs)
    np.testing.assert_allclose(
        got["out_x"].astype(np.float64), _softmax(inputs["x"], -1), rtol=2**-8, atol=1e-6
    )
    np.testing.assert_allclose(got["out_y"], _softmax(inputs["y"], 0), rtol=1e-5, atol=1e-7)
