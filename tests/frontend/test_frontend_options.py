"""Compiler options (`pypto.set_pass_options`, `pypto.experimental.set_operation_options`)
as `pto.set_options`: read from a kernel, ignored by the numpy back end (checked against
a numpy golden), written back by `-t pypto` (PyPTO 0.2.0 keywords only, the rest named
in a comment), with option names and values that cannot inject code."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr

from frontends.pypto import load_file, load_source
from tileir.backends.numpy import run as run_numpy
from tileir.backends.pypto.emitter import emit_module
from tileir.diagnostics import TileirError
from tileir.dialect import pto

DATA = Path(__file__).parent / "data"
KERNEL = DATA / "compiler_options.py"


def _options(module) -> list[tuple[str, dict]]:
    return [
        (op.kind.data, dict(op.options.data))
        for op in module.walk()
        if isinstance(op, pto.SetOptionsOp)
    ]


def test_options_are_read_in_program_order() -> None:
    module = load_file(KERNEL)
    (k1, o1), (k2, o2), (k3, o3) = _options(module)
    assert k1 == "operation_options" and list(o1) == ["combine_axis"]
    assert k2 == k3 == "pass_options"
    assert o2["sg_set_scope"] == IntegerAttr(3, 64)
    nbuf = o2["vec_nbuffer_setting"]
    assert isinstance(nbuf, DictionaryAttr) and set(nbuf.data) == {"-1", "0"}
    assert o3["pg_upper_bound"] == IntegerAttr(1024, 64)
    # the second and third sit in the loop, around the exp / mul
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    names = [op.name for op in loop.body.block.ops]
    assert names.index("pto.set_options") < names.index("pto.exp")
    assert names.index("pto.mul") < len(names) - 1 - names[::-1].index("pto.set_options")


def test_numpy_back_end_ignores_options() -> None:
    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    got = run_numpy(load_file(KERNEL), {"x": x}, "steered")["out"]
    golden = np.exp(x.astype(np.float64)) * 2.0 + x
    np.testing.assert_allclose(got, golden, rtol=1e-6, atol=1e-6)


def test_emitted_options_read_back() -> None:
    text = emit_module(load_file(KERNEL))
    assert "pypto.experimental.set_operation_options(combine_axis=True)" in text
    assert "pypto.set_pass_options(sg_set_scope=3, vec_nbuffer_setting={-1: 2, 0: 1})" in text
    assert "pypto.set_pass_options(sg_set_scope=-1, pg_upper_bound=1024)" in text
    assert _options(load_source(text, "emitted.py")) == _options(load_file(KERNEL))


HEADER = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
"""


def _kernel(body: str) -> str:
    return (
        HEADER + textwrap.indent(body, "    ") + "\n    pypto.assemble(pypto.exp(x), [0, 0], out)\n"
    )


def test_option_name_that_is_not_an_identifier_is_refused() -> None:
    with pytest.raises(TileirError, match=r"option name 'a; import os' is not a Python keyword"):
        load_source(_kernel('pypto.set_pass_options(**{"a; import os": 1})'), "bad.py")


def test_tensor_option_value_is_refused() -> None:
    with pytest.raises(TileirError, match=r"sg_set_scope=\.\.\.\): option values are Python"):
        load_source(_kernel("pypto.set_pass_options(sg_set_scope=pypto.exp(x))"), "bad.py")


def test_verifier_refuses_bad_option_names_and_kinds() -> None:
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match="not a Python keyword name"):
        pto.SetOptionsOp("pass_options", DictionaryAttr({"x=1": IntegerAttr(1, 64)})).verify()
    with pytest.raises(VerifyException, match="kind 'cache' is not one of"):
        pto.SetOptionsOp("cache", DictionaryAttr({})).verify()


@pytest.mark.parametrize(
    "value",
    ['"); import os; ("', "pypto.X; import os", "a\\nimport os", "pypto.RunMode.NPU"],
)
def test_string_values_cannot_inject(value: str) -> None:
    """A string value is written json-quoted (an enum's dotted name only when it is one);
    the emitted module parses to one call with that exact value."""
    source = _kernel(f"pypto.experimental.set_operation_options(combine_axis={value!r})")
    text = emit_module(load_source(source, "s.py"))
    calls = [
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("set_operation_options")
    ]
    (call,) = calls
    (kw,) = call.keywords
    if value == "pypto.RunMode.NPU":
        assert ast.unparse(kw.value) == value
    else:
        assert isinstance(kw.value, ast.Constant) and kw.value.value == value
    assert "import os" not in [ast.unparse(s) for s in ast.parse(text).body]


def test_newer_options_are_left_out_for_020() -> None:
    """Options PyPTO 0.2.0 has not (or not of this type) are left out and named in a
    comment; a call with only those becomes `pass` (valid in any block)."""
    body = (
        "pypto.set_pass_options(sg_set_scope=-1, ooo_sched_mode='HLF', "
        "vec_nbuffer_setting={'DEFAULT': 2})"
    )
    text = emit_module(load_source(_kernel(body), "n.py"))
    assert (
        "pypto.set_pass_options(sg_set_scope=-1)  # tileir: PyPTO 0.2.0 cannot compile "
        "ooo_sched_mode, vec_nbuffer_setting: left out"
    ) in text
    assert '"HLF"' not in text and "DEFAULT" not in text
    body = "for i in pypto.loop(1):\n    pypto.set_pass_options(ooo_sched_mode='HLF')"
    text = emit_module(load_source(_kernel(body), "d.py"))
    assert "pass  # tileir: PyPTO 0.2.0 cannot compile ooo_sched_mode: left out" in text
    ast.parse(text)


def test_list_values_are_kept() -> None:
    module = load_source(_kernel("pypto.set_pass_options(sg_set_scope=(1, True, False))"), "l.py")
    ((_, opts),) = _options(module)
    assert isinstance(opts["sg_set_scope"], ArrayAttr) and len(opts["sg_set_scope"].data) == 3


@pytest.mark.pypto
def test_real_pypto_compiles_and_matches_numpy(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "steered_emitted.py"
    path.write_text(emit_module(load_file(KERNEL)))
    x = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    args = [ArgSpec("x", (8, 16), "f32"), ArgSpec("out", (8, 16), "f32")]
    got = run_kernel(path, "steered", args, {"x": x}, outputs=["out"])["out"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)) * 2.0 + x, rtol=1e-5, atol=1e-5)


def test_default_pipeline_keeps_options_in_place() -> None:
    """`-p default` (vc-split, stitch, fusion ...) keeps every option statement, in order,
    with the pass options still around the exp / mul; values match the numpy golden."""
    from tileir.backends.pypto.legalize import lower_for_pypto
    from tileir.ir import make_context
    from tileir.passes.pipeline import DefaultPipelinePass

    module = load_file(KERNEL)
    before = _options(module)
    DefaultPipelinePass().apply(make_context(), module)
    assert _options(module) == before
    flat = [op.name for op in lower_for_pypto(module).walk()]
    scoped = flat[flat.index("pto.loop") :]
    first = scoped.index("pto.set_options")
    last = len(scoped) - 1 - scoped[::-1].index("pto.set_options")
    assert first < scoped.index("pto.exp") < scoped.index("pto.mul") < last
    x = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    got = run_numpy(module, {"x": x}, "steered")["out"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)) * 2.0 + x, rtol=1e-6, atol=1e-6)
    ast.parse(emit_module(module))


# --------------------------------------------------------------------------- precision_type

DIV_KERNEL = """\
import pypto


@pypto.frontend.jit()
def softmax_rows(
    x: pypto.Tensor([4, 8], pypto.DT_FP32),
    out: pypto.Tensor([4, 8], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(4, 8)
    e = pypto.exp(x)
    total = pypto.sum(e, -1, keepdim=True)
    p = pypto.div(e, total, precision_type=pypto.PrecisionType.INTRINSIC)
    out[:] = pypto.div(p, 0.5, pypto.PrecisionType.HIGH_PRECISION)
"""


def _softmax_golden(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64))
    return e / e.sum(axis=1, keepdims=True) * 2.0


def test_precision_type_is_kept_on_div() -> None:
    divs = [op for op in load_source(DIV_KERNEL, "d.py").walk() if isinstance(op, pto.DivOp)]
    assert [d.precision_type.data for d in divs] == ["INTRINSIC", "HIGH_PRECISION"]


def test_numpy_divides_ieee_whatever_the_precision_type() -> None:
    x = np.random.default_rng(6).standard_normal((4, 8)).astype(np.float32)
    got = run_numpy(load_source(DIV_KERNEL, "d.py"), {"x": x}, "softmax_rows")["out"]
    np.testing.assert_allclose(got, _softmax_golden(x), rtol=1e-6)


def test_precision_type_is_left_out_for_020_with_a_comment() -> None:
    text = emit_module(load_source(DIV_KERNEL, "d.py"))
    assert "PrecisionType" not in "".join(line.split("#")[0] for line in text.splitlines())
    assert "# tileir: PyPTO 0.2.0 has no PrecisionType: precision_type=PrecisionType." in text
    back = [op for op in load_source(text, "e.py").walk() if isinstance(op, pto.DivOp)]
    assert len(back) == 2 and all(d.precision_type is None for d in back)


def test_unknown_precision_type_is_refused() -> None:
    bad = DIV_KERNEL.replace("INTRINSIC", "FASTEST")
    with pytest.raises(TileirError, match=r"d\.py:12:\d+: error: pypto\.PrecisionType\.FASTEST"):
        load_source(bad, "d.py")


@pytest.mark.pypto
def test_real_pypto_runs_div_emitted_without_precision_type(tmp_path: Path) -> None:
    from tileir.backends.pypto.harness import ArgSpec, run_kernel

    path = tmp_path / "softmax_rows.py"
    path.write_text(emit_module(load_source(DIV_KERNEL, "d.py")))
    x = np.random.default_rng(8).standard_normal((4, 8)).astype(np.float32)
    args = [ArgSpec("x", (4, 8), "f32"), ArgSpec("out", (4, 8), "f32")]
    got = run_kernel(path, "softmax_rows", args, {"x": x}, outputs=["out"])["out"]
    np.testing.assert_allclose(got, _softmax_golden(x), rtol=1e-5, atol=1e-6)


def test_codegen_options_round_trip() -> None:
    """`pypto.set_codegen_options` (PyPTO-Gym's mla_prolog): kept, written back with the
    0.2.0 keyword (`support_dynamic_aligned`), a newer keyword named in a comment."""
    body = "pypto.set_codegen_options(support_dynamic_aligned=True, newer_knob=2)"
    module = load_source(_kernel(body), "c.py")
    assert _options(module)[0][0] == "codegen_options"
    text = emit_module(module)
    assert (
        "pypto.set_codegen_options(support_dynamic_aligned=True)  # tileir: PyPTO 0.2.0 "
        "cannot compile newer_knob: left out"
    ) in text
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    got = run_numpy(module, {"x": x})["out"]
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=1e-6)
