"""The NPU calls of PyPTO scripts and tests, mapped to the CPU (interpret mode only).

Such scripts put tensors on the device (`x.npu()`, `x.to("npu:0")`,
`torch.empty(..., device="npu:0")`, `torch.device(f"npu:{id}")`), select and sync it
(`torch.npu.set_device(id)`, `torch.npu.synchronize()`), and read
`TILE_FWK_DEVICE_ID`. `CpuForNpu` maps all of that to the CPU while it is active and
undoes it when it stops:

- device arguments of torch functions and tensor methods: a torch function mode
  (`torch.overrides.TorchFunctionMode`) rewrites `"npu"` / `"npu:N"` and device indices
  (`device=0`, `torch.device(0)`, `x.to(0)`: with torch_npu an index is an NPU) to
  `"cpu"` before torch parses them, so `torch.device("npu:0")` is the CPU;
- `torch.npu`: a device module whose calls do nothing or answer for one device;
- `torch.Tensor.npu()`: returns the tensor (it is already "on the device");
- `TILE_FWK_DEVICE_ID`: set to `0` when unset;
- `torch.library` registrations for the NPU dispatch key (a kernel module registers its
  host wrapper as `torch.ops.<ns>.<op>` for the device): registered for the CPU, where
  the "NPU" tensors are, so `torch.ops.<ns>.<op>(x)` runs the wrapper and its kernel in
  interpret mode (`AutogradNPU` becomes `AutogradCPU`; a CPU kernel the module registers
  itself stays).
"""

from __future__ import annotations

import os
import re
import types
from typing import Any

_NPU = re.compile(r"npu(:\d+)?")
DEVICE_ENV = "TILE_FWK_DEVICE_ID"
SOC_VERSION = 220
"""What `torch.npu.get_soc_version()` answers: torch_npu's number for Ascend910B1, an
Atlas A2 part (the platform tileir's passes assume by default). Test suites use it to
pick their cases (PyPTO-Gym runs a case on 910 unless it is marked for 950, number 260)."""


def _cpu(value: Any, index_too: bool = False) -> Any:
    """`"npu"` / `"npu:N"`, and with `index_too` a bare device index (with torch_npu,
    `device=0` is NPU 0), become `"cpu"`."""
    if isinstance(value, str) and _NPU.fullmatch(value):
        return "cpu"
    if index_too and isinstance(value, int) and not isinstance(value, bool):
        return "cpu"
    return value


class _Stream:
    """`torch.npu.current_stream()`: work is done when a call returns."""

    npu_stream = 0

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass


def _device_module() -> types.ModuleType:
    import torch

    npu = types.ModuleType("torch.npu", "interpret mode: the NPU is the CPU")
    stream = _Stream()
    for name in ("set_device", "synchronize", "empty_cache", "init", "reset_peak_memory_stats"):
        setattr(npu, name, lambda *args, **kwargs: None)
    npu.is_available = lambda: True
    npu.device_count = lambda: 1
    npu.current_device = lambda: int(os.environ.get(DEVICE_ENV, "0") or 0)
    npu.get_device_name = lambda *args: "CPU (tileir interpret mode)"
    npu.get_soc_version = lambda: SOC_VERSION
    # `torch.npu.config.allow_internal_format = True`: a layout switch, nothing on the CPU
    npu.config = types.SimpleNamespace(allow_internal_format=False)
    npu.current_stream = lambda *args: stream
    npu.default_stream = lambda *args: stream
    npu.manual_seed = torch.manual_seed
    npu.manual_seed_all = torch.manual_seed
    return npu


_CPU_KEY = {"NPU": "CPU", "AUTOGRADNPU": "AutogradCPU"}
"""The CPU dispatch key an NPU key's registration takes (compared upper-case; the other
NPU keys register nothing)."""


def _npu_impl_on_cpu(original: Any) -> Any:
    """`torch.library.Library.impl`, with NPU registrations made for the CPU."""
    from frontends.pypto.torch_host import is_npu_key

    def impl(lib: Any, op_name: Any, fn: Any, dispatch_key: str = "", **kw: Any) -> Any:
        if not is_npu_key(dispatch_key):
            return original(lib, op_name, fn, dispatch_key, **kw)
        key = _CPU_KEY.get(dispatch_key.upper())
        if key is None:
            return None
        try:
            return original(lib, op_name, fn, key, **kw)
        except RuntimeError as e:
            if "already" not in str(e):
                raise
            return None  # the module's own CPU kernel serves the CPU tensors

    return impl


class CpuForNpu:
    """The device mapping; `start()` / `stop()` (stop restores everything)."""

    def __init__(self) -> None:
        self._mode: Any = None
        self._library_impl: Any = None
        self._env_set = False
        self.npu: types.ModuleType | None = None

    def start(self) -> None:
        if DEVICE_ENV not in os.environ:
            os.environ[DEVICE_ENV] = "0"
            self._env_set = True

    def start_torch(self) -> types.ModuleType:
        """Patch torch (imported by now); returns the `torch.npu` module."""
        import torch
        from torch.overrides import TorchFunctionMode

        # where a positional int is a device index: torch.device(0), tensor.to(0)
        index_at = {torch.device: 0, torch.Tensor.to: 1}

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                at = index_at.get(func, -1)
                args = tuple(_cpu(a, i == at) for i, a in enumerate(args))
                kwargs = kwargs or {}
                if "device" in kwargs:
                    kwargs = {**kwargs, "device": _cpu(kwargs["device"], True)}
                return func(*args, **kwargs)

        self.npu = _device_module()
        torch.npu = self.npu
        self._library_impl = torch.library.Library.impl
        torch.library.Library.impl = _npu_impl_on_cpu(self._library_impl)
        torch.Tensor.npu = lambda self, *args, **kwargs: self
        self._mode = _Mode()
        self._mode.__enter__()
        return self.npu

    def stop(self) -> None:
        if self._mode is not None:
            import torch

            self._mode.__exit__(None, None, None)
            self._mode = None
            del torch.npu
            del torch.Tensor.npu
            torch.library.Library.impl = self._library_impl
        if self._env_set:
            os.environ.pop(DEVICE_ENV, None)
            self._env_set = False
