"""Shared pytest configuration: hypothesis profiles and the `pypto` marker.

Select one with the environment variable HYPOTHESIS_PROFILE (default `dev`):

- `ci`: few examples, no deadline, derandomized (the same examples on every run, so a
  red CI is a real change, not the luck of the draw), so the whole suite runs in
  minutes on 2 cores;
- `dev`: hypothesis' usual 100 examples, for working locally;
- `deep`: 2000 examples, for long runs hunting rare bugs.

Tests derive their own budgets from the active profile (`settings.default`) rather than
hard-coding `max_examples`, so that one variable scales the whole suite.
"""

import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile(
    "ci", max_examples=40, derandomize=True, print_blob=True, database=None, **_COMMON
)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("deep", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# `tileir-run` keeps lowered plans in a cache (tileir.backends.numpy.plan_cache): the
# tests' runs (and the subprocesses they start) use a private one per test process,
# never the user's ~/.cache, and it is removed at exit.
if "TILEIR_CACHE_DIR" not in os.environ:
    _plans = tempfile.mkdtemp(prefix="tileir-test-plans-")
    os.environ["TILEIR_CACHE_DIR"] = _plans
    atexit.register(shutil.rmtree, _plans, ignore_errors=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked `pypto` need the real pypto (the `pypto` extra): skipped without it,
    except under TILEIR_REQUIRE_PYPTO=1 (CI), where a missing pypto is a failure.
    Tests marked `mlir_opt` need the real mlir-opt, likewise (TILEIR_REQUIRE_MLIR_OPT)."""
    if item.get_closest_marker("mlir_opt") is not None:
        mlir_opt_or_skip()
    if item.get_closest_marker("pypto") is None:
        return
    from tileir.backends.pypto.harness import pypto_available

    if pypto_available():
        return
    if os.environ.get("TILEIR_REQUIRE_PYPTO") == "1":
        pytest.fail("pypto extra not installed, but TILEIR_REQUIRE_PYPTO=1", pytrace=False)
    pytest.skip("pypto extra not installed")


def mlir_opt_or_skip() -> str:
    """The real mlir-opt (Debian's mlir-22-tools) for tests marked `mlir_opt`: skipped
    without it, except under TILEIR_REQUIRE_MLIR_OPT=1 (CI), where it is a failure."""
    import shutil

    path = shutil.which("mlir-opt") or "/usr/lib/llvm-22/bin/mlir-opt"
    if os.path.exists(path):
        return path
    if os.environ.get("TILEIR_REQUIRE_MLIR_OPT") == "1":
        pytest.fail(f"mlir-opt not found at {path}, but TILEIR_REQUIRE_MLIR_OPT=1", pytrace=False)
    pytest.skip("mlir-opt not installed (Debian's mlir-22-tools)")


@pytest.fixture(scope="session")
def mlir_opt() -> str:
    """The path of the real mlir-opt (skip / fail as for the `mlir_opt` marker)."""
    return mlir_opt_or_skip()
