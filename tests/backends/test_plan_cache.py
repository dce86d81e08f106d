"""The plan cache (`tileir.backends.numpy.plan_cache`): a plan read back runs exactly as
the plan it was lowered to, in a process that never imports the IR; the key changes with
what the plan depends on; a damaged, foreign or full cache is never trusted.

The reference for a cached plan is the same kernel lowered in this process (itself checked
against the seed kernels' independent numpy goldens elsewhere): bit-equal outputs.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_file
from tileir.backends.numpy import compile_kernel, plan_cache
from tileir.backends.numpy.runtime import Plan
from tileir.ir import parse_module, print_module
from tileir.passes import apply_pipeline
from tileir.testing import inputs_for, modules

ROOT = Path(__file__).resolve().parents[2]

KERNEL = """
pto.kernel @scale(%x: memref<?x8xf32>, %out: memref<?x8xf32>) attributes {dynamic_dims = {x = ["n"], out = ["n"]}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %h = arith.constant 0.5 : f32
  pto.loop %i = %c0 to %n step %c1 name "rows" {
    %t = pto.view %x[%i, 0] : memref<?x8xf32> -> tensor<1x8xf32>
    %r = pto.mul %t, %h : tensor<1x8xf32>, f32 -> tensor<1x8xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x8xf32>, memref<?x8xf32>
  }
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "plans"
    monkeypatch.setenv("TILEIR_CACHE_DIR", str(folder))
    monkeypatch.delenv("TILEIR_NO_CACHE", raising=False)
    return folder


def _bits(arrays: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {k: np.ascontiguousarray(v).tobytes() for k, v in arrays.items()}


# ------------------------------------------------------------------ every seed kernel


def _seed_cases() -> list[tuple[str, str | None]]:
    return [(k.name, pipe) for k in SEED_KERNELS for pipe in (None, "default")]


def test_every_seed_kernel_runs_the_same_from_the_cache_without_the_ir(cache, tmp_path):
    """Lower each seed kernel (as read and after `-p default`), store its plan, then load
    them all in a fresh interpreter: the same bits on the same inputs, and no xDSL IR,
    dialect or compiler module imported there."""
    cases = []
    for seed in SEED_KERNELS:
        for pipe in (None, "default"):
            module = load_file(str(seed.path), seed.kernel)
            if pipe:
                apply_pipeline(module, pipe)
            plan = compile_kernel(module)
            key = f"{seed.name}-{pipe}".replace("_", "-")
            assert plan_cache.store(key, plan), key
            inputs = plan.random_inputs(seed=3)
            io = tmp_path / f"{key}.io"
            io.write_bytes(pickle.dumps((inputs, _bits(plan(inputs)))))
            cases.append((key, str(io)))
    probe = f"""
import json, pickle, sys
import numpy as np
from tileir.backends.numpy import plan_cache
bad = []
for key, io in {cases!r}:
    plan = plan_cache.load(key)
    inputs, expected = pickle.loads(open(io, "rb").read())
    got = {{k: np.ascontiguousarray(v).tobytes() for k, v in plan(inputs).items()}}
    if plan is None or got != expected:
        bad.append(key)
print(json.dumps([bad, sorted(sys.modules)]))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    bad, modules = json.loads(done.stdout.splitlines()[-1])
    assert bad == []
    assert len(cases) == 2 * len(SEED_KERNELS)
    ir = [
        m
        for m in modules
        if (m.startswith("xdsl.") and m != "xdsl.utils" and m != "xdsl.utils.exceptions")
        or m.startswith(("tileir.dialect.pto", "tileir.dialect.ops", "tileir.ir", "frontends"))
        or m in ("tileir.backends.numpy.compiler", "tileir.diagnostics", "tileir.bindings")
    ]
    assert ir == []


# ------------------------------------------------------------------ through tileir-run


def _run(path: Path, out: Path, *extra: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "tileir.tools.run", str(path), "--output-dir", str(out), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _plans(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.plan")) if folder.exists() else []


def test_tileir_run_stores_then_reads_the_plan(cache, tmp_path):
    path = tmp_path / "scale.mlir"
    path.write_text(KERNEL)
    x = np.arange(40, dtype=np.float32).reshape(5, 8) - 7.25
    np.save(tmp_path / "x.npy", x)
    first = _run(path, tmp_path / "a", "--input", f"x={tmp_path / 'x.npy'}")
    assert first.returncode == 0, first.stderr
    (stored,) = _plans(cache)
    assert stored.stat().st_mode & 0o777 and not cache.stat().st_mode & 0o077
    again = _run(path, tmp_path / "b", "--input", f"x={tmp_path / 'x.npy'}")
    assert again.returncode == 0, again.stderr
    expected = x * np.float32(0.5)  # by hand: exact in f32
    for out in ("a", "b"):
        np.testing.assert_array_equal(np.load(tmp_path / out / "out.npy"), expected)
    assert _plans(cache) == [stored]


def test_errors_of_a_run_are_the_same_from_the_cache(cache, tmp_path):
    """A run-time error names the same place and words whether the plan was lowered or
    read back (the plan keeps `file:line:col` strings, not the ops)."""
    path = tmp_path / "scale.mlir"
    path.write_text(KERNEL)
    np.save(tmp_path / "x.npy", np.zeros((5, 8), np.float32))
    np.save(tmp_path / "out.npy", np.zeros((4, 8), np.float32))
    args = ("--input", f"x={tmp_path / 'x.npy'}", "--input", f"out={tmp_path / 'out.npy'}")
    first = _run(path, tmp_path / "a", *args)
    assert first.returncode == 1
    assert "dynamic dim n is 5 in 'x' but 4 in 'out'" in first.stderr
    assert first.stderr.startswith(f"{path}:2:1: error:")
    assert len(_plans(cache)) == 1  # the plan lowered fine: it is kept
    again = _run(path, tmp_path / "b", *args)
    assert (again.returncode, again.stderr) == (first.returncode, first.stderr)


def test_a_file_that_does_not_parse_is_never_cached(cache, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(KERNEL.replace("pto.mul", "pto.mull"))
    runs = [_run(path, tmp_path / "o", "--random-inputs") for _ in range(2)]
    assert [r.returncode for r in runs] == [1, 1]
    assert runs[0].stderr == runs[1].stderr and "pto.mull" in runs[0].stderr
    assert _plans(cache) == []


def test_no_cache_flag_and_variable_write_nothing(cache, tmp_path):
    path = tmp_path / "scale.mlir"
    path.write_text(KERNEL)
    assert _run(path, tmp_path / "o", "--random-inputs", "--no-cache").returncode == 0
    env = dict(os.environ, TILEIR_NO_CACHE="1")
    assert _run(path, tmp_path / "o", "--random-inputs", env=env).returncode == 0
    assert _plans(cache) == []


# ------------------------------------------------------------------ the key


def test_the_key_follows_what_the_plan_depends_on(tmp_path):
    data = KERNEL.encode()
    key = plan_cache.plan_key(data, "k.mlir", None)
    assert key == plan_cache.plan_key(data, "k.mlir", None)
    others = {
        plan_cache.plan_key(data + b"\n", "k.mlir", None),  # the text
        plan_cache.plan_key(data, "./k.mlir", None),  # the path errors name
        plan_cache.plan_key(data, "k.mlir", "scale"),  # the kernel asked for
    }
    assert key not in others and len(others) == 3


def test_an_edited_tileir_module_changes_the_key(monkeypatch, tmp_path):
    package = tmp_path / "tileir"
    (package / "sub").mkdir(parents=True)
    module = package / "sub" / "m.py"
    module.write_text("x = 1\n")
    monkeypatch.setattr(plan_cache, "_PACKAGE", package)
    before = plan_cache.plan_key(b"k", "k.mlir", None)
    module.write_text("x = 22\n")
    assert plan_cache.plan_key(b"k", "k.mlir", None) != before


# ------------------------------------------------------------------ trust and damage


def _stored_plan(cache: Path) -> tuple[str, Plan]:
    plan = compile_kernel(parse_module(KERNEL, "scale.mlir"))
    key = plan_cache.plan_key(KERNEL.encode(), "scale.mlir", None)
    assert plan_cache.store(key, plan)
    return key, plan


def test_a_damaged_plan_is_a_miss_and_is_replaced(cache):
    key, plan = _stored_plan(cache)
    file = cache / f"{key}.plan"
    whole = file.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"junk\n" + whole, plan_cache.FORMAT + b"\x80"):
        file.write_bytes(damaged)
        assert plan_cache.load(key) is None
    assert plan_cache.store(key, plan)
    assert plan_cache.load(key) is not None


def test_a_pickle_that_is_not_a_plan_is_refused(cache):
    key, _ = _stored_plan(cache)
    (cache / f"{key}.plan").write_bytes(plan_cache.FORMAT + pickle.dumps({"not": "a plan"}))
    assert plan_cache.load(key) is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_folder_others_may_write_is_never_read(cache):
    key, plan = _stored_plan(cache)
    assert plan_cache.load(key) is not None
    cache.chmod(0o777)
    try:
        assert plan_cache.load(key) is None
        assert not plan_cache.store(key, plan)
    finally:
        cache.chmod(0o700)


def test_the_cache_keeps_the_most_recently_used_plans(cache, monkeypatch):
    monkeypatch.setattr(plan_cache, "MAX_ENTRIES", 3)
    _, plan = _stored_plan(cache)
    for p in _plans(cache):
        p.unlink()
    for k in ("a", "b", "c"):
        assert plan_cache.store(k, plan)
        os.utime(cache / f"{k}.plan", ns=(10**9, {"a": 1, "b": 2, "c": 3}[k] * 10**9))
    assert plan_cache.load("a") is not None  # used now: the newest
    assert plan_cache.store("d", plan)
    names = {p.stem for p in _plans(cache)}
    assert len(names) == 3 and {"a", "d"} <= names and "b" not in names


def test_a_plan_holding_an_ir_object_is_not_stored(cache):
    _, plan = _stored_plan(cache)
    plan._template.append(parse_module(KERNEL))  # a rule that kept an op would do this
    assert not plan_cache.store("leaky", plan)
    assert not (cache / "leaky.plan").exists() and not list(cache.glob(".*.tmp"))


def test_the_printed_kernel_and_the_cached_plan_agree(cache, tmp_path):
    """The cache sits after parsing: a module printed and read back is a new file with
    its own key, and still runs to the same bits."""
    module = parse_module(KERNEL, "scale.mlir")
    text = print_module(module)
    key = plan_cache.plan_key(text.encode(), "p.mlir", None)
    assert plan_cache.load(key) is None
    plan = compile_kernel(parse_module(text, "p.mlir"))
    assert plan_cache.store(key, plan)
    x = {"x": np.linspace(-3, 3, 24, dtype=np.float32).reshape(3, 8)}
    assert _bits(plan_cache.load(key)(x)) == _bits(compile_kernel(module)(x))


def test_a_temporary_file_a_killed_run_left_is_removed_later(cache):
    key, plan = _stored_plan(cache)
    stale, fresh = cache / f".{key}.1.tmp", cache / f".{key}.2.tmp"
    for f in (stale, fresh):
        f.write_bytes(b"half a plan")
    os.utime(stale, ns=(10**9, 10**9))
    assert plan_cache.store("other", plan)
    assert not stale.exists() and fresh.exists()


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(data=st.data())
def test_generated_kernels_run_the_same_from_a_pickled_plan(data):
    """Every rule's closures survive the cache's pickling: a generated kernel (every
    template, dtype and step kind of tileir.testing), lowered as written and after
    `default`, gives the same bits from its pickled plan, batched or not."""
    from tileir.backends.numpy.interpreter import find_kernel

    module = data.draw(modules())
    inputs = data.draw(inputs_for(module))
    for pipe in (None, "default"):
        if pipe:
            apply_pipeline(module, pipe)
        for vectorize in (True, False):
            plan = compile_kernel(find_kernel(module), vectorize=vectorize)
            expected = _bits(plan(inputs))
            again = pickle.loads(plan_cache._pickle(plan))
            assert isinstance(again, Plan) and again.kernel is None
            assert _bits(again(inputs)) == expected
