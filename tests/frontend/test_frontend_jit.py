"""The JIT model: a kernel file is imported (with tileir's stand-in `pypto`), its kernels
are found wherever they are made, and each is specialised to a call's shapes and scalars.

The kernels are in `data/jit/`, written in PyPTO-Gym's styles (a factory bound to
module-level names, a helper module next to the kernel file, a config object as a
defaulted parameter, STATIC / DYNAMIC / `...` / `[]` dims, scalars without defaults); each
runs on the numpy back end against numpy written here, independently of the kernel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX

from frontends.pypto import ArgShape, load_file, load_function, load_source
from frontends.pypto.loader import load_module
from tileir.backends.numpy import compile_kernel
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes, pto

DATA = Path(__file__).parent / "data" / "jit"
BF16 = np.dtype(ml_dtypes.bfloat16)


def kernels(module) -> dict[str, pto.KernelOp]:
    return {k.sym_name.data: k for k in module.ops if isinstance(k, pto.KernelOp)}


def run(module, name: str, **inputs: np.ndarray) -> dict[str, np.ndarray]:
    return compile_kernel(module, name)(inputs)


# --------------------------------------------------------------------------- factories


def test_factory_kernels_are_found_and_named_by_their_module_level_names() -> None:
    module = load_file(DATA / "jit_factory.py")
    ks = kernels(module)
    assert sorted(ks) == ["affine_16", "affine_32"]
    x16 = ks["affine_16"].body.block.args[0].type
    assert list(x16.get_shape()) == [DYNAMIC_INDEX, 16]  # DYNAMIC stays dynamic
    assert ks["affine_16"].jit_options.data["runtime_options"].data["run_mode"].data == (
        "pypto.RunMode.NPU"
    )


def test_factory_kernel_computes_with_its_closure_and_a_sibling_helper() -> None:
    module = load_file(DATA / "jit_factory.py", kernel="affine_32")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 32)).astype(np.float32)  # a 2-row tail tile
    out = run(module, "affine_32", x=x, out=np.zeros_like(x))["out"]
    np.testing.assert_allclose(out, x * 2.0 - 0.5, rtol=1e-6)


def test_a_kernel_is_selected_by_its_function_name_only_when_unique() -> None:
    with pytest.raises(TileirError, match=r"'kernel' names 2 kernels; select one of affine_16"):
        load_file(DATA / "jit_factory.py", kernel="kernel")


def test_load_function_specialises_a_factory_result() -> None:
    loaded = load_module((DATA / "jit_factory.py").read_text(), str(DATA / "jit_factory.py"))
    fn = loaded.module.affine_16
    x = np.ones((5, 16), np.float32)
    module = load_function(fn, x, np.zeros_like(x), scale=3.0)
    (k,) = kernels(module).values()
    assert list(k.body.block.args[0].type.get_shape()) == [DYNAMIC_INDEX, 16]
    out = run(module, k.sym_name.data, x=x, out=np.zeros_like(x))["out"]
    np.testing.assert_allclose(out, np.full((5, 16), 4.0, np.float32))


def test_loading_restores_the_interpreter_state() -> None:
    path_before = list(sys.path)
    load_file(DATA / "jit_factory.py")
    assert sys.path == path_before
    assert "jit_helpers" not in sys.modules  # the sibling module does not outlive the load
    real = sys.modules.get("pypto")
    assert real is None or not hasattr(real, "__tileir_standin_path__")


HOST_CALLS = """\
import pypto
from pypto import runtime

pypto.set_pass_options(vec_nbuffer_setting={-1: 2})
pypto.set_verify_options(enable_pass_verify=False)
pypto.reset_options()


@pypto.frontend.jit
def neg(x: pypto.Tensor([4, 16], pypto.DT_FP32), out: pypto.Tensor([4, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 16)
    out[:] = pypto.neg(x)


runtime._device_synchronize()
pypto.runtime._device_init()
"""


def test_host_side_settings_and_device_calls_at_import_do_nothing() -> None:
    """Module-level `set_*_options`, `reset_options` and `pypto.runtime._device_*`
    calls (PyPTO scripts make them around their kernels) are no-ops of the stand-in."""
    module = load_source(HOST_CALLS, "host_calls.py")
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    np.testing.assert_array_equal(run(module, "neg", x=x)["out"], -x)


def test_other_host_side_pypto_calls_still_say_they_are_only_read_in_kernels() -> None:
    with pytest.raises(TileirError, match=r"pypto\.add\(\) is only read inside a kernel"):
        load_source("import pypto\npypto.add(1, 2)\n", "host_add.py")


def test_the_standin_takes_the_jit_of_whoever_runs_kernels() -> None:
    """`standin.modules(jit=...)`: interpret mode's hook; `@jit`, `@jit()` and
    `@jit(**options)` reach the given callable, and the submodules are attributes."""
    from frontends.pypto import standin

    seen = []

    def jit(fn=None, **options):
        seen.append(options)
        return fn if fn is not None else (lambda f: f)

    mods = standin.modules(jit=jit, doc="test")
    pypto = mods["pypto"]
    assert pypto.frontend is mods["pypto.frontend"] and pypto.frontend.jit is jit
    assert pypto.__doc__ == "test"
    assert pypto.runtime._device_synchronize() is None
    assert pypto.frontend.jit(len) is len and pypto.frontend.jit(x=1)(len) is len
    assert seen == [{}, {"x": 1}]
    assert standin.modules()["pypto.frontend"].__dict__.get("jit") is None


# --------------------------------------------------------------------------- the call


def _norm_golden(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    rms = np.sqrt((x64**2).mean(axis=1, keepdims=True) + eps)
    return (x64 / rms * gamma.astype(np.float64)).astype(np.float32)


def test_static_dims_and_scalars_come_from_the_call() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 24)).astype(np.float32)
    gamma = rng.standard_normal(24).astype(np.float32)
    args = {"x": x, "gamma": gamma, "out": np.zeros_like(x), "eps": 1e-3}
    module = load_file(DATA / "jit_config.py", args=args)
    (k,) = kernels(module).values()
    assert [list(a.type.get_shape()) for a in k.body.block.args] == [[6, 24], [24], [6, 24]]
    written = k.attributes["shape_annotations"]
    assert [t.data for t in written.data["x"].data] == ["pypto.STATIC", "pypto.STATIC"]
    out = run(module, "rms_norm", x=x, gamma=gamma, out=np.zeros_like(x))["out"]
    np.testing.assert_allclose(out, _norm_golden(x, gamma, 1e-3), rtol=2e-5, atol=1e-6)


def test_a_config_object_given_in_the_call_replaces_the_default() -> None:
    loaded = load_module((DATA / "jit_config.py").read_text(), str(DATA / "jit_config.py"))
    cfg = loaded.module.NormConfig(row_tile=3, use_gamma=False)
    x = np.arange(6 * 8, dtype=np.float32).reshape(6, 8) / 10
    module = load_function(
        loaded.module.rms_norm, x, ArgShape((8,), dtypes.BY_SHORT["f32"]), x, 0.5, config=cfg
    )
    out = run(module, "rms_norm", x=x, gamma=np.ones(8, np.float32), out=np.zeros_like(x))
    np.testing.assert_allclose(out["out"], _norm_golden(x, np.ones(8), 0.5), rtol=2e-5)
    assert len([op for op in module.walk() if isinstance(op, pto.AssembleOp)]) == 2  # 2 tiles


def test_python_failing_at_trace_time_is_located_in_the_kernel() -> None:
    args = {"x": "5x4xf32", "gamma": "4xf32", "out": "5x4xf32", "eps": 1e-6}
    with pytest.raises(
        TileirError, match=r"jit_config\.py:\d+:\d+: error: assertion failed: rows 5"
    ):
        load_file(DATA / "jit_config.py", args=args)


def test_without_the_call_static_dims_are_symbolic_until_python_needs_them() -> None:
    with pytest.raises(TileirError) as info:
        load_file(DATA / "jit_config.py", args={"eps": 1e-6})
    first = str(info.value).splitlines()[0]
    assert "jit_config.py:" in first and "--arg x=AxBx<dtype>" in first


def test_a_missing_scalar_names_the_parameter_to_give() -> None:
    args = {"x": "4x4xf32", "gamma": "4xf32", "out": "4x4xf32"}
    with pytest.raises(TileirError, match=r"kernel parameter `eps` has no value.*--arg eps="):
        load_file(DATA / "jit_config.py", args=args)


def test_ellipsis_and_empty_shapes_take_the_call_and_round_trip_through_pypto() -> None:
    x = np.linspace(-2, 2, 3 * 8).reshape(3, 8).astype(BF16)
    module = load_file(DATA / "jit_from_call.py", args={"x": x, "out": x})
    (k,) = kernels(module).values()
    assert [list(a.type.get_shape()) for a in k.body.block.args] == [[DYNAMIC_INDEX, 8], [3, 8]]
    out = run(module, "exp_rows", x=x, out=np.zeros_like(x))["out"]
    golden = np.exp(x.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(out.astype(np.float32), golden.astype(np.float32))
    source = emit(module)
    assert "x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16)" in source
    assert "out: pypto.Tensor([], pypto.DT_BF16)" in source
    again = load_source(source, "emitted.py", args={"x": "3x8xbf16", "out": "3x8xbf16"})
    (k2,) = kernels(again).values()
    assert [a.type for a in k2.body.block.args] == [a.type for a in k.body.block.args]
    assert k2.attributes["shape_annotations"] == k.attributes["shape_annotations"]


def test_shapes_from_the_call_need_the_call() -> None:
    with pytest.raises(
        TileirError, match=r"`x`'s shape ends in `...`: its rank comes from the call"
    ):
        load_file(DATA / "jit_from_call.py")


def test_call_disagreeing_with_the_annotation() -> None:
    with pytest.raises(TileirError, match=r"`x` is annotated pypto.DT_BF16 but the call gives"):
        load_file(DATA / "jit_from_call.py", args={"x": "3x8xf32", "out": "3x8xbf16"})
    with pytest.raises(TileirError, match=r"no kernel has a parameter `y`"):
        load_file(DATA / "jit_from_call.py", args={"y": "3x8xbf16"})


# --------------------------------------------------------------------------- diagnostics


def test_a_kernel_made_only_by_an_uncalled_wrapper_names_the_factory_parameters() -> None:
    with pytest.raises(
        TileirError,
        match=r"jit_unreached\.py:6:1: error: the kernel `scaled` is made when "
        r"`run_scaled\(x, out\)` is called .*give `x`, `out` with --arg x=VALUE --arg out=VALUE",
    ):
        load_file(DATA / "jit_unreached.py")


def test_a_wrapper_calling_its_kernel_gives_the_call() -> None:
    """The wrapper's own call of the kernel (`scaled(x, out)`) is the specialisation."""
    module = load_file(
        DATA / "jit_unreached.py", kernel="scaled", args={"x": "4x4xf32", "out": "4x4xf32"}
    )
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = run(module, "scaled", a=x, b=np.zeros_like(x))["b"]
    np.testing.assert_array_equal(out, x * 2.0)


def test_a_runtime_factory_is_called_with_its_parameters_from_the_call() -> None:
    path = DATA / "jit_runtime_factory.py"
    args = {"cols": 16, "x": "3x16xf32", "out": "3x16xf32"}
    for name in ("scaled_rows", "_make_rows_kernel", "_make_rows_kernel.<locals>.scaled_rows"):
        module = load_file(path, kernel=name, args=args)
        (k,) = kernels(module).values()
        assert [list(a.type.get_shape()) for a in k.body.block.args] == [[3, 16], [3, 16]]
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(3, 16)
    out = run(module, "scaled_rows", x=x, out=np.zeros_like(x))["out"]
    np.testing.assert_allclose(out, 2 * x + 0.5, rtol=1e-6)  # shift keeps its default 0.5
    module = load_file(path, kernel="scaled_rows", args={**args, "shift": -1.0})
    out = run(module, "scaled_rows", x=x, out=np.zeros_like(x))["out"]
    np.testing.assert_allclose(out, 2 * x - 1.0, rtol=1e-6)


def test_a_missing_factory_parameter_is_named_at_the_factory() -> None:
    with pytest.raises(
        TileirError,
        match=r"jit_runtime_factory\.py:17:1: error: the kernel `scaled_rows` is made when "
        r"`_make_rows_kernel\(cols, shift=0\.5\)` is called .* give `cols` with --arg cols=",
    ):
        load_file(DATA / "jit_runtime_factory.py", kernel="scaled_rows")


def test_a_config_object_for_a_factory_is_written_as_the_wrapper_writes_it() -> None:
    module = load_file(
        DATA / "jit_runtime_factory.py",
        kernel="config_scaled",
        args={"cfg": "ScaleConfig(scale=-3.0, rows=2)"},
    )
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    out = run(module, "config_scaled", x=x, out=np.zeros_like(x))["out"]
    np.testing.assert_array_equal(out, -3.0 * x)


def test_without_a_kernel_name_every_callable_factory_is_called(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text(
        "import pypto\n\n\ndef make(n=4):\n    @pypto.frontend.jit\n"
        "    def k(x: pypto.Tensor([n], pypto.DT_FP32), y: pypto.Tensor([n], pypto.DT_FP32)):\n"
        "        pypto.set_vec_tile_shapes(n)\n        y[:] = x + 1.0\n\n    return k\n"
    )
    (k,) = kernels(load_file(f)).values()
    assert list(k.body.block.args[0].type.get_shape()) == [4]


def test_cli_calls_a_runtime_factory() -> None:
    exe = Path(sys.executable).parent
    proc = subprocess.run(
        [
            str(exe / "tileir-opt"), str(DATA / "jit_runtime_factory.py"),
            "--kernel", "scaled_rows", "--arg", "cols=8", "--arg", "x=2x8xf32",
            "--arg", "out=2x8xf32",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pto.kernel @scaled_rows(%x: memref<2x8xf32>, %out: memref<2x8xf32>)" in proc.stdout


def test_a_missing_module_names_what_to_install() -> None:
    with pytest.raises(
        TileirError,
        match=r"jit_missing_module\.py:4:\d+: error: the kernel file imports "
        r"`tileir_no_such_module`, which is not installed",
    ):
        load_file(DATA / "jit_missing_module.py")


def test_import_time_exceptions_are_located(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text("import pypto\nTILE = 64\nCOLS = TILE // 0\n")
    with pytest.raises(TileirError, match=r"k\.py:3:\d+: error: importing the kernel file raised "):
        load_file(f)


def test_cli_takes_the_call_from_arg_and_input(tmp_path: Path) -> None:
    x = np.ones((3, 8), BF16)
    np.save(tmp_path / "x.npy", x)
    exe = Path(sys.executable).parent
    proc = subprocess.run(
        [
            str(exe / "tileir-opt"),
            str(DATA / "jit_from_call.py"),
            "--input",
            f"x={tmp_path / 'x.npy'}",
            "--arg",
            "out=3x8xbf16",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "%x: memref<?x8xbf16>, %out: memref<3x8xbf16>" in proc.stdout
    run_proc = subprocess.run(
        [
            str(exe / "tileir-run"),
            str(DATA / "jit_config.py"),
            "--arg", "x=4x8xf32", "--arg", "gamma=8xf32", "--arg", "out=4x8xf32",
            "--arg", "eps=0.25", "--random-inputs", "--output-dir", str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert run_proc.returncode == 0, run_proc.stderr
    assert (tmp_path / "o" / "out.npy").exists()


def test_dim_is_the_rank_as_a_property_and_as_a_method() -> None:
    source = (
        "import pypto\n\n\n@pypto.frontend.jit\n"
        "def k(x: pypto.Tensor([], pypto.DT_FP32), out: pypto.Tensor([], pypto.DT_FP32)):\n"
        "    tiles = [2 for _ in range(x.dim)]\n"
        "    tiles[-1] = 8\n"
        "    assert x.dim() == 3\n"
        "    pypto.set_vec_tile_shapes(*tiles)\n"
        "    out[:] = pypto.exp(x)\n"
    )
    module = load_source(source, "dim.py", args={"x": "2x4x8xf32", "out": "2x4x8xf32"})
    (k,) = kernels(module).values()
    (tiles,) = [op for op in k.walk() if isinstance(op, pto.SetVecTileShapesOp)]
    assert "[2, 2, 8]" in str(tiles)
    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8) / 64
    np.testing.assert_allclose(run(module, "k", x=x, out=x)["out"], np.exp(x), rtol=1e-6)


def test_npu_op_registrations_at_import_are_host_side_no_ops() -> None:
    torch = pytest.importorskip("torch")
    impl = torch.library.Library.impl
    module = load_file(DATA / "jit_torch_npu_op.py")
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = run(module, "double_kernel", x=x, y=np.zeros_like(x))["y"]
    np.testing.assert_array_equal(out, 2 * x)
    assert torch.library.Library.impl is impl  # restored after the load
    meta = torch.ops.tileir_test_npu_op.double(torch.empty(2, 3, device="meta"))
    assert meta.shape == (2, 3)  # the Meta registration is real
    lib = torch.library.Library("tileir_test_npu_after", "FRAGMENT")
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="NPU"):  # outside tileir's load, NPU is unknown
        lib.impl("f", lambda t: t, "NPU")


def test_npu_op_registrations_when_the_kernel_file_first_imports_torch() -> None:
    """In a fresh process torch is first imported by the kernel file, during the load."""
    pytest.importorskip("torch")
    exe = Path(sys.executable).parent
    proc = subprocess.run(
        [str(exe / "tileir-opt"), str(DATA / "jit_torch_npu_op.py")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pto.kernel @double_kernel" in proc.stdout


def test_a_module_missing_from_the_users_own_package_is_not_to_install(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "__init__.py").write_text("from shared.device import get_device\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("")
    kernel = tmp_path / "model" / "k.py"
    kernel.write_text("import pypto\nimport shared\n")
    with pytest.raises(
        TileirError,
        match=r"shared/__init__\.py:1:1: error: the kernel file imports `shared\.device`, "
        r"which is not in the package `shared` \(.*shared\): no such module there",
    ):
        load_file(kernel)
