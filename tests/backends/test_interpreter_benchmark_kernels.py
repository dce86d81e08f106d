"""The benchmark's four kernels at small shapes: the back end's bits equal the
hand-written numpy of `benchmarks/numpy_backend.py` and the sequential run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tileir.backends.numpy import compile_kernel
from tileir.ir import parse_module

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "numpy_backend.py"
_spec = importlib.util.spec_from_file_location("numpy_backend_benchmark", _PATH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)

SMALL = {
    "rope": lambda: bench.rope(s=20, n=2, d=64, t=8),
    "gelu": lambda: bench.gelu(rows=10, hidden=64, t=4),
    "linear": lambda: bench.linear(tokens=20, k=64, n=32, tm=8),
    "attention": lambda: bench.attention(s2=64, heads=4, d=32, blk=16),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_benchmark_kernel_equals_hand_written_numpy(name):
    w = SMALL[name]()
    module = parse_module(w.ir, name)
    got = compile_kernel(module)(w.inputs)
    sequential = compile_kernel(module, vectorize=False)(w.inputs)
    expected = w.by_hand(**w.inputs)
    for out, want in expected.items():
        assert got[out].tobytes() == sequential[out].tobytes()
        assert got[out].dtype == want.dtype
        assert got[out].tobytes() == want.tobytes(), f"{name}: {out} differs from numpy"
