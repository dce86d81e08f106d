"""What a kernel file's host side asks of torch_npu while tileir imports it.

Kernel files register their host wrapper with torch for the NPU at import time
(`import torch_npu`, then `torch.library.impl(lib, "op", "NPU")(wrapper)`), so that
`torch.ops.pypto.op` runs on the device. Reading a kernel needs none of it: tileir reads
the `@pypto.frontend.jit` function, never the wrapper. Without torch_npu, torch cannot
even parse the `NPU` dispatch key ("could not parse dispatch key: NPU"), and the import
fails before any kernel is made. So, only while `frontends.pypto.loader` imports a file
(or calls its factories):

- `torch_npu`, when it is not installed, is an empty module;
- `torch.library.Library.impl` for an NPU dispatch key registers nothing (the wrapper is
  host code for a device this process does not have); every other key registers as usual.

Both are undone afterwards: `torch.library.Library.impl` is the original again, whether
torch was imported before the load or by the kernel file during it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["host_side", "is_npu_key"]

NPU_KEYS = frozenset({"NPU", "AUTOGRADNPU", "NPU_META"})
"""The dispatch keys torch_npu adds (compared upper-case)."""


def is_npu_key(key: Any) -> bool:
    """A dispatch key torch_npu adds (torch alone cannot parse it)."""
    return isinstance(key, str) and key.upper() in NPU_KEYS


class _Patch:
    """`Library.impl` with NPU registrations as no-ops; installed once torch.library is."""

    def __init__(self) -> None:
        self.library: Any = None
        self.original: Any = None

    def install(self, module: types.ModuleType) -> None:
        library = getattr(module, "Library", None)
        if library is None or self.library is not None:
            return
        original = library.impl

        def impl(lib: Any, op_name: Any, fn: Any, dispatch_key: str = "", **kw: Any) -> Any:
            if is_npu_key(dispatch_key):
                return None  # host code for the NPU: nothing to register here
            return original(lib, op_name, fn, dispatch_key, **kw)

        library.impl = impl
        self.library, self.original = library, original

    def remove(self) -> None:
        if self.library is not None:
            self.library.impl = self.original
            self.library = None


class _WhenImported(importlib.abc.MetaPathFinder):
    """Installs the patch right after `torch.library` is first imported during the load."""

    def __init__(self, patch: _Patch) -> None:
        self.patch = patch

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch.library":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        patch = self.patch

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: types.ModuleType) -> None:
                loader.exec_module(module)  # type: ignore[union-attr]
                patch.install(module)

        spec.loader = Loader()
        return spec


@contextmanager
def host_side() -> Iterator[list[str]]:
    """The block runs with the host side above; yields the stub module names it added to
    `sys.modules` (for the loader to remove)."""
    stubbed: list[str] = []
    if "torch_npu" not in sys.modules and importlib.util.find_spec("torch_npu") is None:
        sys.modules["torch_npu"] = types.ModuleType("torch_npu", "tileir's empty stand-in")
        stubbed.append("torch_npu")
    patch = _Patch()
    finder = None
    if "torch.library" in sys.modules:
        patch.install(sys.modules["torch.library"])
    else:
        finder = _WhenImported(patch)
        sys.meta_path.insert(0, finder)
    try:
        yield stubbed
    finally:
        if finder is not None:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not finder]
        patch.remove()
