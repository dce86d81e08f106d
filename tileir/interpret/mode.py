"""Turning interpret mode on and off.

On: `import pypto` gives the stand-in whose `frontend.jit` makes `Kernel`s,
`import torch_npu` gives the stand-in of `tileir.interpret.standin`, and the NPU calls
of `tileir.interpret.device` go to the CPU. torch is patched when it is imported (at
once if it already is), so a script that never imports torch does not pay for it.
Off: `sys.modules`, torch and the environment are as they were (modules imported while
it was on keep the stand-ins they imported).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tileir.interpret.device import CpuForNpu
from tileir.interpret.kernel import jit
from tileir.interpret.standin import make_pypto, make_torch_npu


class _TorchHook(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Patches torch right after it is imported; serves the `torch_npu` stand-in."""

    def __init__(self, mode: _Mode):
        self.mode = mode
        self._torch_loader: Any = None

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name in ("torch_npu", "torch_npu.npu"):
            return importlib.machinery.ModuleSpec(name, self, is_package=name == "torch_npu")
        if name != "torch":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        self._torch_loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: Any) -> types.ModuleType | None:
        if spec.name == "torch":
            return self._torch_loader.create_module(spec)
        import torch  # noqa: F401  (patches torch through this hook)

        return self.mode.torch_npu[spec.name]

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ == "torch":
            self._torch_loader.exec_module(module)
            self.mode.patch_torch()


class _Mode:
    def __init__(self) -> None:
        self.device = CpuForNpu()
        self.saved: dict[str, types.ModuleType | None] = {}
        self.torch_npu: dict[str, types.ModuleType] = {}
        self.hook = _TorchHook(self)

    def _install(self, modules: dict[str, types.ModuleType]) -> None:
        for name, module in modules.items():
            self.saved.setdefault(name, sys.modules.get(name))
            sys.modules[name] = module

    def start(self) -> None:
        for name in [n for n in sys.modules if n == "pypto" or n.startswith("pypto.")]:
            self.saved[name] = sys.modules.pop(name)
        self._install(make_pypto(jit))
        self.device.start()
        if "torch" in sys.modules:
            self.patch_torch()
        else:
            sys.meta_path.insert(0, self.hook)

    def patch_torch(self) -> None:
        if self.device.npu is None:
            self.torch_npu = make_torch_npu(self.device.start_torch())
            self._install(self.torch_npu)

    def stop(self) -> None:
        if self.hook in sys.meta_path:
            sys.meta_path.remove(self.hook)
        self.device.stop()
        for name, module in self.saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        self.saved.clear()


_active: _Mode | None = None


def enable() -> None:
    """Turn interpret mode on (idempotent)."""
    global _active
    if _active is None:
        _active = _Mode()
        _active.start()


def disable() -> None:
    """Turn interpret mode off, restoring what `enable` changed (idempotent)."""
    global _active
    if _active is not None:
        mode, _active = _active, None
        mode.stop()


def enabled() -> bool:
    return _active is not None


@contextmanager
def interpret_mode() -> Iterator[None]:
    """`with interpret_mode(): import my_kernels; my_kernels.k(x, out)`."""
    was_on = enabled()
    enable()
    try:
        yield
    finally:
        if not was_on:
            disable()
