"""Tests marked `pypto` need the real pypto package (the `pypto` extra).

They are skipped when the worker's interpreter cannot import torch and pypto, with the
reason "pypto extra not installed"; with TILEIR_REQUIRE_PYPTO=1 (set by CI) they fail
instead, so that a broken install cannot pass as a green run.
"""

import os

import pytest

from tileir.backends.pypto.harness import pypto_available


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "pypto: needs the real pypto package (the `pypto` extra)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("pypto") is None or pypto_available():
        return
    if os.environ.get("TILEIR_REQUIRE_PYPTO") == "1":
        pytest.fail("pypto extra not installed, but TILEIR_REQUIRE_PYPTO=1", pytrace=False)
    pytest.skip("pypto extra not installed")
