"""Every seed kernel file and every verbatim seed skeleton loads through the frontend
and verifies; `tileir-opt <kernel>.py` prints its IR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from frontends.pypto import load_file
from tileir.dialect import pto

ROOT = Path(__file__).resolve().parents[2]
KERNELS = sorted(
    p
    for p in (ROOT / "frontends" / "kernels").glob("*.py")
    if p.name not in ("__init__.py", "goldens.py")
)
SKELETONS = sorted((Path(__file__).parent / "skeletons").glob("*.py"))


@pytest.mark.parametrize("path", KERNELS + SKELETONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kernel_file_loads_and_verifies(path: Path) -> None:
    module = load_file(path)
    kernels = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    assert kernels
    source = path.read_text()
    for k in kernels:
        assert f"def {k.sym_name.data}(" in source


@pytest.mark.parametrize("path", KERNELS[:1], ids=lambda p: p.name)
def test_tileir_opt_prints_kernel_ir(path: Path) -> None:
    exe = Path(sys.executable).parent / "tileir-opt"
    proc = subprocess.run([str(exe), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("pto.kernel @") == path.read_text().count("@pypto.frontend.jit")


ROUND_TRIP = [p for p in sorted((Path(__file__).parent / "data").glob("*.py"))] + KERNELS


@pytest.mark.parametrize("path", ROUND_TRIP, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_emitted_pypto_reads_back_to_the_same_ir(path: Path) -> None:
    """source -> IR -> PyPTO source (the emitter) -> IR: the same ops, types and
    attributes (SSA names aside)."""
    import re

    from frontends.pypto import load_source
    from tileir.backends.pypto.emitter import emit
    from tileir.ir import print_module

    module = load_file(path)
    back = load_source(emit(module), "emitted.py")

    def shape_of(m) -> str:
        return re.sub(r"%[A-Za-z0-9_]+", "%v", print_module(m))

    assert shape_of(back) == shape_of(module)
