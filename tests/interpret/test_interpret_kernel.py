"""Calling kernels in interpret mode: values against torch goldens, outputs written in
place, one specialisation per call signature, located errors, TILEIR_PIPELINE and
TILEIR_VERIFY_SEMANTICS."""

from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ml_dtypes  # noqa: E402
from conftest import GYM_STYLE  # noqa: E402
from xdsl.passes import ModulePass  # noqa: E402
from xdsl.rewriter import Rewriter  # noqa: E402

import tileir.interpret.kernel as kernel_mod  # noqa: E402
from tileir.dialect import pto  # noqa: E402
from tileir.interpret import Kernel, KernelError  # noqa: E402


def _golden(x, residual, gamma, eps=1e-6):
    """The kernel's math in torch fp32 (not tileir's numpy), rounded to bf16 once."""
    s = x.float() + residual.float()
    rstd = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps)
    return (s * rstd * gamma.float()).to(torch.bfloat16), s.to(torch.bfloat16)


@pytest.fixture
def impl(interpret, import_file):
    return import_file(GYM_STYLE / "add_rms_norm_impl.py", "add_rms_norm_impl")


def _inputs(rows, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 64, generator=g).to(torch.bfloat16)
    residual = torch.randn(rows, 64, generator=g).to(torch.bfloat16)
    gamma = torch.randn(1, 64, generator=g).to(torch.bfloat16)
    return x, residual, gamma


def test_jit_returns_a_kernel_that_writes_outputs_in_place(impl):
    assert isinstance(impl.add_rms_norm_kernel, Kernel)
    x, residual, gamma = _inputs(13)
    y = torch.full((13, 64), float("nan"), dtype=torch.bfloat16)
    x_sum = torch.empty(13, 64, dtype=torch.bfloat16)
    pointers = (y.data_ptr(), x_sum.data_ptr())
    assert impl.add_rms_norm_kernel(x, residual, gamma, y, x_sum, 1e-6) is None
    assert (y.data_ptr(), x_sum.data_ptr()) == pointers
    y_ref, s_ref = _golden(x, residual, gamma)
    assert torch.equal(x_sum, s_ref)  # one bf16 rounding of an exact fp32 sum
    torch.testing.assert_close(y.float(), y_ref.float(), atol=1e-2, rtol=1e-2)


def test_the_host_wrapper_on_the_npu_device(impl):
    """`.npu()` / `device="npu:0"` tensors are CPU tensors in interpret mode."""
    x, residual, gamma = (t.npu() for t in _inputs(9, seed=1))
    y, x_sum = impl.add_rms_norm(x.to("npu:0"), residual, gamma.reshape(-1))
    assert y.device.type == "cpu"
    y_ref, s_ref = _golden(x, residual, gamma)
    assert torch.equal(x_sum, s_ref)
    torch.testing.assert_close(y.float(), y_ref.float(), atol=1e-2, rtol=1e-2)


def test_device_indices_and_the_soc_are_the_cpus(interpret):
    """With torch_npu a bare index is an NPU: `device=0`, `torch.device(0)`, `x.to(0)`
    are the CPU in interpret mode; dtypes in `.to` are left alone; the SoC is a 910B; torch_npu.npu.config takes its switches."""
    import torch_npu

    x = torch.zeros(2, 3, device=0)
    assert x.device.type == "cpu"
    assert torch.ones(2, device=torch.device(0)).device.type == "cpu"
    assert x.to(0).device.type == "cpu" and x.to(0, torch.float16).dtype == torch.float16
    assert x.to(torch.int32).dtype == torch.int32
    assert torch_npu.npu.get_soc_version() == torch.npu.get_soc_version() == 220
    torch_npu.npu.config.allow_internal_format = True  # a layout switch; accepted


def test_torch_npu_dtype_cast_converts_and_other_operators_need_an_npu(interpret):
    """`torch_npu.npu_dtype_cast` is a conversion (a test makes its fp8 / bf16 inputs with
    it): round to nearest even, as the bits of a hand-rounded value show; an NPU operator
    says that it needs one."""
    import torch_npu

    from tileir.interpret.standin import InterpretError

    x = torch.tensor([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -3.0])  # ties: to even
    y = torch_npu.npu_dtype_cast(x, torch.bfloat16)
    assert y.dtype == torch.bfloat16
    assert y.float().tolist() == [1.0, 1.0 + 2.0**-6, -3.0]
    with pytest.raises(InterpretError, match="torch_npu.npu_rms_norm needs an NPU"):
        torch_npu.npu_rms_norm(x, x)
    nz = torch_npu.npu_format_cast(x, 29)  # FRACTAL_NZ: a layout, the same values
    assert torch.equal(nz, x) and nz is not x
    assert (torch_npu.get_npu_format(nz), torch_npu.get_npu_format(x)) == (29, 2)
    with pytest.raises(InterpretError, match=r"npu_dtype_cast to torch_npu\.hifloat8: not a torch"):
        torch_npu.npu_dtype_cast(x, torch_npu.hifloat8)  # an NPU-only dtype


def test_an_npu_registration_serves_the_cpu_tensors(impl):
    """A kernel module registers its host wrapper for the NPU dispatch key
    (`torch.library.impl(lib, "op", "NPU")`): in interpret mode it is registered for the
    CPU, where the "NPU" tensors are, so `torch.ops.<ns>.<op>` runs the kernel."""
    lib = torch.library.Library("tileir_interpret_test", "DEF")
    lib.define("add_rms_norm(Tensor x, Tensor residual, Tensor gamma) -> (Tensor, Tensor)")

    @torch.library.impl(lib, "add_rms_norm", "NPU")
    def _on_npu(x, residual, gamma):
        return impl.add_rms_norm(x, residual, gamma)

    x, residual, gamma = (t.npu() for t in _inputs(7, seed=2))
    y, x_sum = torch.ops.tileir_interpret_test.add_rms_norm(x, residual, gamma.reshape(-1))
    y_ref, s_ref = _golden(x, residual, gamma)
    assert torch.equal(x_sum, s_ref)
    torch.testing.assert_close(y.float(), y_ref.float(), atol=1e-2, rtol=1e-2)


def test_npu_registrations_are_torchs_own_outside_interpret_mode():
    from tileir.interpret import disable, enable

    original = torch.library.Library.impl
    enable()
    assert torch.library.Library.impl is not original
    disable()
    assert torch.library.Library.impl is original


def test_numpy_arguments(impl):
    x, residual, gamma = (t.float().numpy().astype(ml_dtypes.bfloat16) for t in _inputs(5))
    y = np.zeros((5, 64), ml_dtypes.bfloat16)
    x_sum = np.zeros((5, 64), ml_dtypes.bfloat16)
    impl.add_rms_norm_kernel(x, residual, gamma, y, x_sum, eps=1e-6)
    expected = (x.astype(np.float32) + residual.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(x_sum.view(np.int16), expected.view(np.int16))


@pytest.fixture
def count_builds(monkeypatch):
    builds = []
    real = kernel_mod.build_module

    def counting(fn, arguments, options):
        builds.append({n: getattr(v, "shape", v) for n, v in arguments.items()})
        return real(fn, arguments, options)

    monkeypatch.setattr(kernel_mod, "build_module", counting)
    return builds


def _call(k, rows, hidden=64, eps=1e-6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, residual = (torch.randn(rows, hidden, generator=g).to(torch.bfloat16) for _ in range(2))
    gamma = torch.randn(1, hidden, generator=g).to(torch.bfloat16)
    y, x_sum = (torch.empty(rows, hidden, dtype=torch.bfloat16) for _ in range(2))
    k(x, residual, gamma, y, x_sum, eps)
    y_ref, s_ref = _golden(x, residual, gamma, eps)
    assert torch.equal(x_sum, s_ref)
    torch.testing.assert_close(y.float(), y_ref.float(), atol=1e-2, rtol=1e-2)


def test_one_signature_is_specialised_once(impl, count_builds):
    k = impl.add_rms_norm_kernel
    for seed in range(3):  # same shapes, dtypes and scalars, other values
        _call(k, 13, seed=seed)
    assert len(count_builds) == 1 and k.specialisations == 1
    _call(k, 30)  # rows are pypto.DYNAMIC: the same specialisation, as in PyPTO
    assert len(count_builds) == 1
    _call(k, 13, hidden=32)  # the hidden size is pypto.STATIC: a new one
    assert len(count_builds) == 2 and count_builds[1]["x"] == (13, 32)
    _call(k, 13, eps=1e-3)  # a scalar is a constant of the specialisation: a new one
    assert len(count_builds) == 3 and count_builds[2]["eps"] == 1e-3
    _call(k, 7, eps=1e-3)
    assert len(count_builds) == 3 == k.specialisations


BROKEN = """
import pypto

@pypto.frontend.jit
def broken(x: pypto.Tensor([4, 32], pypto.DT_FP32), out: pypto.Tensor([4, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    t = pypto.view(x, [4, 32], [0, 0])
    while True:
        t = pypto.exp(t)
    pypto.assemble(t, [0, 0], out)
"""


def test_a_kernel_tileir_cannot_read_raises_the_located_error(tmp_path, interpret, import_file):
    path = tmp_path / "broken_kernel.py"
    path.write_text(BROKEN)
    module = import_file(path, "broken_kernel")
    with pytest.raises(KernelError) as info:
        module.broken(torch.zeros(4, 32), torch.zeros(4, 32))
    message = str(info.value)
    assert f"{path}:8:" in message  # the `while` line of the kernel
    assert "while" in message and "broken(x: float32[4, 32]" in message


def test_a_wrong_dtype_names_the_argument(impl):
    x, residual, gamma = _inputs(4)
    y, x_sum = torch.zeros(4, 64, dtype=torch.bfloat16), torch.zeros(4, 64, dtype=torch.float32)
    with pytest.raises(KernelError, match="x_sum") as info:
        impl.add_rms_norm_kernel(x, residual, gamma, y, x_sum, 1e-6)
    assert "float32" in str(info.value) and "add_rms_norm_impl.py:" in str(info.value)
    assert not x_sum.any()  # nothing half-written


def test_pipeline_runs_the_passes_and_keeps_the_bits(impl, monkeypatch):
    x, residual, gamma = _inputs(13, seed=5)
    outs = []
    for pipeline in ("", "default"):
        monkeypatch.setenv("TILEIR_PIPELINE", pipeline)
        impl.add_rms_norm_kernel.cache.clear()
        y, x_sum = (
            torch.empty(13, 64, dtype=torch.bfloat16),
            torch.empty(13, 64, dtype=torch.bfloat16),
        )
        impl.add_rms_norm_kernel(x, residual, gamma, y, x_sum, 1e-6)
        (spec,) = impl.add_rms_norm_kernel.cache.values()
        stages = [op for op in spec.module.walk() if isinstance(op, pto.StageOp)]
        assert bool(stages) == (pipeline == "default")  # vc-split ran
        outs.append((y.view(torch.int16).clone(), x_sum.view(torch.int16).clone()))
    assert all(torch.equal(a, b) for a, b in zip(*outs))


@dataclass(frozen=True)
class ExpToNeg(ModulePass):
    """A wrong pass, for the test: exp becomes neg."""

    name = "exp-to-neg"

    def apply(self, ctx, op):
        for e in [o for o in op.walk() if isinstance(o, pto.ExpOp)]:
            Rewriter.replace_op(e, pto.NegOp(e.input))


EXP = """
import pypto

@pypto.frontend.jit
def exp_kernel(x: pypto.Tensor([4, 32], pypto.DT_FP32), out: pypto.Tensor([4, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    pypto.assemble(pypto.exp(pypto.view(x, [4, 32], [0, 0])), [0, 0], out)
"""


def test_verify_semantics_reports_the_pass_and_the_first_difference(
    tmp_path, interpret, import_file, monkeypatch
):
    import tileir.passes

    real = tileir.passes.get_all_passes
    monkeypatch.setattr(
        tileir.passes, "get_all_passes", lambda: {**real(), "exp-to-neg": lambda: ExpToNeg}
    )
    path = tmp_path / "exp_kernel.py"
    path.write_text(EXP)
    module = import_file(path, "exp_kernel")
    x, out = torch.linspace(-1, 1, 128).reshape(4, 32), torch.zeros(4, 32)
    monkeypatch.setenv("TILEIR_PIPELINE", "cse,exp-to-neg")
    module.exp_kernel(x, out)  # without verification the wrong pass goes unnoticed
    assert torch.equal(out, -x)
    monkeypatch.setenv("TILEIR_VERIFY_SEMANTICS", "1")
    module.exp_kernel.cache.clear()
    out.zero_()
    from tileir.testing import SemanticsMismatch

    with pytest.raises(SemanticsMismatch) as info:
        module.exp_kernel(x, out)
    assert info.value.pass_name == "exp-to-neg" and info.value.index == (0, 0)
    assert "differs at index [0, 0]" in str(info.value)
    assert not out.any()


ACCUMULATE = """
import pypto

@pypto.frontend.jit
def accumulate(x: pypto.Tensor([4, 32], pypto.DT_FP32), acc: pypto.Tensor([4, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    a = pypto.view(acc, [4, 32], [0, 0])
    pypto.assemble(pypto.add(pypto.mul(a, 2.0), pypto.view(x, [4, 32], [0, 0])), [0, 0], acc)
"""


@pytest.fixture
def accumulate(tmp_path, interpret, import_file):
    path = tmp_path / "accumulate.py"
    path.write_text(ACCUMULATE)
    return import_file(path, "accumulate").accumulate


def test_outputs_are_written_in_place_contiguous_or_not(accumulate, monkeypatch):
    """An in-out tensor is read and written in place; a transposed (non-contiguous)
    one, or one passed as the input as well, gets the same values through a copy."""
    from tileir.backends.numpy.interpreter import Plan

    calls = []
    real = Plan.__call__

    def spy(self, inputs, *, in_place=()):
        result = real(self, inputs, in_place=in_place)
        calls.append({n: result[n] is inputs[n] for n in result})
        return result

    monkeypatch.setattr(Plan, "__call__", spy)
    x = torch.linspace(-1, 1, 128).reshape(4, 32)
    acc = torch.ones(4, 32)
    accumulate(x, acc)
    assert torch.equal(acc, 2 + x) and calls[-1] == {"acc": True}
    strided = torch.ones(32, 4).t()
    accumulate(x, strided)
    assert torch.equal(strided, 2 + x) and calls[-1] == {"acc": False}
    same = x.clone()
    accumulate(same, same)  # both arguments one tensor: x read as it was, 2x + x
    assert torch.equal(same, 3 * x) and calls[-1] == {"acc": False}


def test_verify_semantics_on_an_in_out_tensor(accumulate, monkeypatch):
    """The unpassed reference runs on the in-out tensor as it was before the call."""
    monkeypatch.setenv("TILEIR_PIPELINE", "default")
    monkeypatch.setenv("TILEIR_VERIFY_SEMANTICS", "1")
    x = torch.linspace(-1, 1, 128).reshape(4, 32)
    acc = torch.full((4, 32), 0.5)
    accumulate(x, acc)
    accumulate(x, acc)
    assert torch.equal(acc, 2 * (1 + x) + x)
