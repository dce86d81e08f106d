"""The pytest plugin of interpret mode: `pytest -p tileir.interpret ...`.

Interpret mode is on from before the first conftest is imported until pytest exits, so a
PyPTO test suite runs unchanged on the CPU. Two things PyPTO-Gym-style tests rely on
are provided as well:

- a `device` fixture (`"npu:<TILE_FWK_DEVICE_ID>"`, the CPU in interpret mode) for
  tests written as `def test_x(device)`, and a `device_id` fixture (the index, an int)
  for `def test_x(device_id)`; a conftest's own fixture of either name wins;
- a test function that *returns* `False` fails: such suites report their own
  `compare()` that way (pytest would only warn about the return value).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tileir.interpret.device import DEVICE_ENV
from tileir.interpret.mode import disable, enable


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    enable()


def pytest_configure(config: pytest.Config) -> None:
    enable()  # in case the plugin was registered after the initial conftests


def pytest_unconfigure(config: pytest.Config) -> None:
    disable()


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[None]:
    test = pyfuncitem.obj

    @functools.wraps(test)
    def returning_false_fails(*args: Any, **kwargs: Any) -> None:
        if test(*args, **kwargs) is False:
            pytest.fail(f"{pyfuncitem.name} returned False", pytrace=False)

    pyfuncitem.obj = returning_false_fails
    try:
        return (yield)
    finally:
        pyfuncitem.obj = test


@pytest.fixture
def device_id() -> int:
    """The NPU index PyPTO tests select (`TILE_FWK_DEVICE_ID`, 0 in interpret mode)."""
    return int(os.environ.get(DEVICE_ENV, "0") or 0)


@pytest.fixture
def device(device_id: int) -> str:
    """The device PyPTO tests put tensors on; in interpret mode it is the CPU."""
    return f"npu:{device_id}"
