"""The entry points: `pytest -p tileir.interpret` runs a PyPTO-Gym-style test file
unchanged, `python -m tileir.interpret SCRIPT` runs a script; without them nothing is
patched. Each runs in a subprocess (pytester's or our own)."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from conftest import GYM_STYLE  # noqa: E402

pytest_plugins = ["pytester"]


@pytest.fixture
def gym_dir(pytester):
    shutil.copy(GYM_STYLE / "add_rms_norm_impl.py", pytester.path)
    shutil.copy(GYM_STYLE / "gym_test_add_rms_norm.py", pytester.path / "test_add_rms_norm.py")
    return pytester


def test_the_plugin_runs_a_gym_style_suite_unchanged(gym_dir):
    result = gym_dir.runpytest_subprocess("-p", "tileir.interpret", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("pipeline", ["", "default"])
def test_the_plugin_runs_a_suite_with_int_devices_and_soc_filters(pytester, monkeypatch, pipeline):
    """The device as an int (`device=0`, `torch.npu.set_device(0)`), a conftest that
    picks cases by `torch_npu.npu.get_soc_version()` (interpret mode is a 910 part, so
    the 950-only case is deselected), an inplace reshape `.move`d into each output."""
    shutil.copy(GYM_STYLE / "column_stats_impl.py", pytester.path)
    shutil.copy(GYM_STYLE / "gym_conftest.py", pytester.path / "conftest.py")
    shutil.copy(GYM_STYLE / "gym_test_column_stats.py", pytester.path / "test_column_stats.py")
    if pipeline:
        monkeypatch.setenv("TILEIR_PIPELINE", pipeline)
    result = pytester.runpytest_subprocess("-p", "tileir.interpret", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, deselected=1)


def test_without_the_plugin_the_suite_needs_an_npu(gym_dir):
    result = gym_dir.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*No module named 'torch_npu'*"])


def test_the_plugin_reports_a_located_kernel_error_as_that_tests_failure(pytester):
    pytester.makepyfile(
        bad_impl="""
        import pypto

        @pypto.frontend.jit
        def bad(x: pypto.Tensor([4, 32], pypto.DT_FP32), out: pypto.Tensor([4, 32], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(4, 32)
            with open("f"):
                pass
        """,
        test_bad="""
        import torch
        from bad_impl import bad

        def test_bad():
            bad(torch.zeros(4, 32), torch.zeros(4, 32))

        def test_returns_false():
            return False

        def test_fine(device):
            assert torch.zeros(2, device=device).device.type == "cpu"

        def test_device_id(device_id):
            torch.npu.set_device(device_id)
            assert device_id == 0
            assert torch.zeros(2, device=f"npu:{device_id}").device.type == "cpu"
        """,
    )
    result = pytester.runpytest_subprocess("-p", "tileir.interpret", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["*KernelError: *bad_impl.py:6:5: error: `with`*", "*test_returns_false returned False*"]
    )


def _python(*args, env=None, cwd=None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TILEIR_")}
    environment.pop("TILE_FWK_DEVICE_ID", None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environment, cwd=cwd
    )


def test_the_cli_runs_a_gym_style_script(tmp_path):
    result = _python("-m", "tileir.interpret", str(GYM_STYLE / "gym_test_add_rms_norm.py"))
    assert result.returncode == 0, result.stderr
    assert "[PRECISION_PASS]" in result.stdout


def test_the_cli_passes_arguments_and_exit_status(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import sys, pypto\nprint(sys.argv[1:], pypto.__doc__)\nsys.exit(3)\n")
    result = _python("-m", "tileir.interpret", str(script), "a", "--b")
    assert result.returncode == 3
    assert "['a', '--b'] tileir's interpret-mode stand-in for PyPTO" in result.stdout


def test_the_cli_gives_a_script_run_by_a_relative_path_an_absolute_file(tmp_path):
    """As `python script.py` does (3.9+): scripts find their repository from there."""
    (tmp_path / "script.py").write_text("import os\nprint(os.path.isabs(__file__), __file__)\n")
    result = _python("-m", "tileir.interpret", "script.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", str(tmp_path / "script.py")]


def test_the_cli_prints_a_kernel_error_without_traceback(tmp_path):
    (tmp_path / "k.py").write_text(
        textwrap.dedent(
            """
            import pypto, torch

            @pypto.frontend.jit
            def k(x: pypto.Tensor([4, 32], pypto.DT_FP32), out: pypto.Tensor([4, 32], pypto.DT_FP32)):
                try:
                    pass
                finally:
                    pass

            k(torch.zeros(4, 32), torch.zeros(4, 32))
            """
        )
    )
    result = _python("-m", "tileir.interpret", str(tmp_path / "k.py"))
    assert result.returncode == 1
    assert f"{tmp_path / 'k.py'}:6:" in result.stderr
    assert "Traceback" not in result.stderr


NOTHING_PATCHED = textwrap.dedent(
    """
    import os, sys
    import tileir.interpret  # importing the package patches nothing
    {body}
    import torch
    assert not hasattr(torch, "npu") and not hasattr(torch.Tensor, "npu")
    try:
        torch.device("npu:0")
        raise SystemExit("torch.device('npu:0') worked")
    except RuntimeError:
        pass
    try:
        import torch_npu
        raise SystemExit("torch_npu imported")
    except ImportError:
        pass
    assert "TILE_FWK_DEVICE_ID" not in os.environ
    try:
        import pypto
    except ImportError:
        pass
    else:
        assert pypto.__doc__ != "tileir's interpret-mode stand-in for PyPTO", "stand-in pypto"
    print("nothing patched")
    """
)


@pytest.mark.parametrize(
    "body",
    [
        "",
        # on and off again: everything restored (torch imported while it was on)
        "tileir.interpret.enable()\nimport torch\nassert torch.npu\ntileir.interpret.disable()",
    ],
    ids=["never-on", "on-then-off"],
)
def test_nothing_is_patched_outside_interpret_mode(body, tmp_path):
    result = _python("-c", NOTHING_PATCHED.format(body=body), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing patched" in result.stdout
