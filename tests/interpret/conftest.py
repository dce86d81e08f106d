"""Helpers of the interpret-mode tests: import a kernel file with interpret mode on."""

import importlib.util
import sys
from pathlib import Path

import pytest

GYM_STYLE = Path(__file__).parent / "gym_style"
collect_ignore = ["gym_style"]


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


@pytest.fixture
def import_file():
    """`import_file(path, name)`: import a kernel file as module `name` (with interpret
    mode on, its `import pypto` is the stand-in)."""
    return _import_file


@pytest.fixture
def interpret():
    """Interpret mode on for the test, off (and checked off) after it."""
    from tileir.interpret import disable, enable, enabled

    enable()
    try:
        yield
    finally:
        disable()
        assert not enabled()
