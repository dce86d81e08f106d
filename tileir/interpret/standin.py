"""The `pypto` and `torch_npu` modules a script sees in interpret mode.

A kernel file and its tests import `pypto` for three things: the decorator
(`@pypto.frontend.jit`), names used in annotations and module-level code
(`pypto.Tensor([...], pypto.DT_BF16)`, `pypto.DYNAMIC`, `pypto.frontend.dynamic("S")`,
`pypto.RunMode.NPU`), and host-side calls that steer the compiler or the device
(`pypto.set_pass_options(...)`, `pypto.runtime._device_synchronize()`). Kernel bodies
are never run by Python: tileir's frontend reads their source. The frontend's stand-in
(`frontends.pypto.standin`) provides the names and the host-side no-ops; interpret mode
gives it its `jit`. Anything else a script calls outside a kernel (`pypto.add(...)` on
the host) is the stand-in's error that says so.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


class InterpretError(RuntimeError):
    """Something interpret mode does not do, said where the user's code asked for it."""


DOC = "tileir's interpret-mode stand-in for PyPTO"


def make_pypto(jit: Callable[..., Any]) -> dict[str, types.ModuleType]:
    """`pypto` and its submodules by their `sys.modules` names: the frontend's stand-in
    (`frontends.pypto.standin`, whose names its translator resolves in a live kernel's
    globals and whose host-side settings and device calls are no-ops) with `jit` as
    `pypto.frontend.jit`."""
    from frontends.pypto import standin

    return standin.modules(jit=jit, doc=DOC)


class _NeedsHardware(types.ModuleType):
    """`torch_npu`: its device calls map to the CPU (`torch.npu`), its NPU operators
    (`torch_npu.npu_rms_norm`, ...) say that they need an NPU."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def needs_npu(*args: Any, **kwargs: Any) -> Any:
            raise InterpretError(
                f"torch_npu.{name} needs an NPU: interpret mode runs PyPTO kernels on the "
                "CPU, not torch_npu's operators"
            )

        needs_npu.__qualname__ = f"torch_npu.{name}"
        return needs_npu


def _npu_dtype_cast(input: Any, dtype: Any) -> Any:
    """`torch_npu.npu_dtype_cast(x, dtype)`: a dtype conversion (round to nearest even,
    as torch's own `Tensor.to`), which a test uses to make its inputs. A torch_npu-only
    dtype (`torch_npu.hifloat8`) has no CPU tensor type: said, not a torch TypeError."""
    import torch

    if not isinstance(dtype, torch.dtype):
        raise InterpretError(
            f"torch_npu.npu_dtype_cast to {getattr(dtype, '__qualname__', dtype)!s}: not a torch "
            "dtype (torch_npu's own types, such as hifloat8, exist only on an NPU); interpret "
            "mode converts to torch dtypes only"
        )
    return input.to(dtype)


ACL_FORMAT_ND = 2
"""torch_npu's storage format of a plain tensor (`torch_npu.get_npu_format`)."""


def _npu_format_cast(input: Any, acl_format: Any, *args: Any, **kwargs: Any) -> Any:
    """`torch_npu.npu_format_cast(x, 29)`: a change of the NPU storage layout (29 is
    FRACTAL_NZ), not of the values; on the CPU a copy that remembers the format, so that
    `torch_npu.get_npu_format` (a test's check that a weight is NZ) answers as on the NPU."""
    out = input.clone()
    out._tileir_npu_format = int(acl_format)
    return out


def _get_npu_format(input: Any) -> int:
    """`torch_npu.get_npu_format(x)`: the format `npu_format_cast` gave, else ND."""
    return getattr(input, "_tileir_npu_format", ACL_FORMAT_ND)


def make_torch_npu(npu: types.ModuleType) -> dict[str, types.ModuleType]:
    """`torch_npu` and `torch_npu.npu` (the same device module as `torch.npu`); of its
    operators only the dtype and storage-format conversions, which change no value an
    NPU would not."""
    torch_npu = _NeedsHardware("torch_npu", "tileir's interpret-mode stand-in for torch_npu")
    torch_npu.npu = npu
    torch_npu.npu_dtype_cast = _npu_dtype_cast
    torch_npu.npu_format_cast = _npu_format_cast
    torch_npu.get_npu_format = _get_npu_format
    torch_npu.__path__ = []
    return {"torch_npu": torch_npu, "torch_npu.npu": npu}
