"""`tileir-run` imports only what its input needs: start-up time is import time.

Each check is a fresh interpreter (subprocess), which runs the tool and reports which
modules ended up in `sys.modules`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

KERNEL = """
pto.kernel @scale(%x: memref<5x8xf32>, %out: memref<5x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %h = arith.constant 0.5 : f32
  pto.loop %i = %c0 to %c5 step %c1 name "rows" {
    %t = pto.view %x[%i, 0] : memref<5x8xf32> -> tensor<1x8xf32>
    %r = pto.mul %t, %h : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x8xf32>, memref<5x8xf32>
  }
}
"""

NOT_FOR_A_RUN = (
    "frontends",  # the PyPTO frontend reads .py kernels only
    "tileir.passes",
    "tileir.backends.pypto",
    "tileir.testing",
    "xdsl.transforms",
    "xdsl.passes",
    "hypothesis",
    "torch",
    "pypto",
)


def modules_after_run(args: list[str], cache: Path | None = None) -> set[str]:
    probe = (
        "import json, sys\n"
        "from tileir.tools.run import main\n"
        f"code = main({args!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    env = dict(os.environ, TILEIR_CACHE_DIR=str(cache)) if cache else None
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0, done.stderr
    return set(modules)


def imported(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


def test_running_a_mlir_file_imports_neither_frontend_nor_passes(tmp_path):
    path = tmp_path / "scale.mlir"
    path.write_text(KERNEL)
    modules = modules_after_run(
        [str(path), "--random-inputs", "--output-dir", str(tmp_path / "out")], tmp_path / "plans"
    )
    assert (tmp_path / "out" / "out.npy").exists()
    for package in NOT_FOR_A_RUN:
        assert not imported(modules, package), f"{package} imported: {imported(modules, package)}"
    # the probe can see imports at all
    assert imported(modules, "tileir.backends.numpy") and imported(modules, "xdsl.parser")


def test_running_a_pypto_file_imports_the_frontend_but_not_the_passes(tmp_path):
    kernel = ROOT / "frontends" / "kernels" / "gelu.py"
    modules = modules_after_run(
        [
            str(kernel),
            "--kernel",
            "gelu_tanh_kernel",
            "--random-inputs",
            "--output-dir",
            str(tmp_path / "out"),
        ]
    )
    assert imported(modules, "frontends.pypto")
    for package in NOT_FOR_A_RUN[1:]:
        assert not imported(modules, package), f"{package} imported: {imported(modules, package)}"


def test_a_run_whose_plan_is_cached_imports_no_ir(tmp_path):
    """The second run of a `.mlir` file reads its plan from the cache: no xDSL IR (only
    `xdsl.utils.exceptions`, the base of tileir's error type), no dialect, no compiler."""
    path = tmp_path / "scale.mlir"
    path.write_text(KERNEL)
    args = [str(path), "--random-inputs", "--output-dir", str(tmp_path / "out")]
    first = modules_after_run(args, tmp_path / "plans")
    assert imported(first, "tileir.backends.numpy.compiler")
    again = modules_after_run(args, tmp_path / "plans")
    assert imported(again, "xdsl") == ["xdsl", "xdsl.utils", "xdsl.utils.exceptions"]
    for package in (
        *NOT_FOR_A_RUN,
        "tileir.ir",
        "tileir.diagnostics",
        "tileir.dialect.pto",
        "tileir.bindings",
        "tileir.backends.numpy.compiler",
        "tileir.backends.numpy.interpreter",
    ):
        assert not imported(again, package), f"{package} imported: {imported(again, package)}"
    assert imported(again, "tileir.backends.numpy.runtime")
