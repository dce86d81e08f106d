"""The `pypto` and `torch_npu` modules a script sees in interpret mode.

A kernel file and its tests import `pypto` for three things: the decorator
(`@pypto.frontend.jit`), names used in annotations and module-level code
(`pypto.Tensor([...], pypto.DT_BF16)`, `pypto.DYNAMIC`, `pypto.frontend.dynamic("S")`,
`pypto.RunMode.NPU`), and host-side calls that steer the compiler or the device
(`pypto.set_pass_options(...)`, `pypto.runtime._device_synchronize()`). Kernel bodies
are never run by Python: tileir's frontend reads their source. So the stand-in needs
live objects only for the first two, and no-ops for the third; anything else a script
calls outside a kernel (`pypto.add(...)` on the host) is an error that says so.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from tileir.dialect.dtypes import BY_PYPTO


class InterpretError(RuntimeError):
    """Something interpret mode does not do, said where the user's code asked for it."""


class Symbol:
    """A name inside `pypto` with no live counterpart here (`pypto.DT_BF16`,
    `pypto.RunMode.NPU`): it can be named, compared and passed around, not called."""

    def __init__(self, dotted: str):
        self._dotted = dotted

    def __getattr__(self, name: str) -> Symbol:
        if name.startswith("__"):
            raise AttributeError(name)
        return Symbol(f"{self._dotted}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise InterpretError(
            f"{self._dotted}(...) called outside a @pypto.frontend.jit kernel: interpret "
            "mode runs PyPTO operations only inside kernels"
        )

    def __repr__(self) -> str:
        return self._dotted

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbol) and other._dotted == self._dotted

    def __hash__(self) -> int:
        return hash(self._dotted)


class Tensor:
    """`pypto.Tensor(shape, dtype, ...)` in an annotation: kept as written."""

    def __init__(self, shape: Any = None, dtype: Any = None, *args: Any, **kwargs: Any):
        self.shape, self.dtype, self.args, self.kwargs = shape, dtype, args, kwargs

    def __repr__(self) -> str:
        return f"pypto.Tensor({self.shape!r}, {self.dtype!r})"


class _Namespace(types.ModuleType):
    """A module whose unknown attributes are `Symbol`s (the rest of PyPTO's API)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Symbol(f"{self.__name__}.{name}")


def _no_op(*args: Any, **kwargs: Any) -> None:
    """Compiler and device settings: nothing to do on the CPU."""


# Host-side calls that configure PyPTO's compiler or runtime (no effect on values).
_SETTINGS = (
    "set_print_options",
    "set_pass_options",
    "set_host_options",
    "set_codegen_options",
    "set_verify_options",
    "set_debug_options",
    "set_runtime_options",
    "set_verify_golden_data",
    "set_global_config",
    "set_options",
    "reset_options",
)
_RUNTIME = ("_device_init", "_device_fini", "_device_synchronize")


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _bytes_of(dtype: Symbol) -> int:
    return BY_PYPTO[repr(dtype).rpartition(".")[2]].numpy.itemsize


def _function(fn: Callable[..., Any] | None = None, **_: Any) -> Any:
    """`@pypto.frontend.function` (with or without options): the frontend inlines it."""
    return fn if fn is not None else (lambda f: f)


def _frontend_modules() -> dict[str, types.ModuleType] | None:
    """The frontend's own stand-in `pypto` (the JIT-model frontend's
    `frontends.pypto.standin`), whose names its translator resolves in a live kernel's
    globals; None with a frontend that reads kernel files without importing them."""
    try:
        from frontends.pypto import standin
    except ImportError:
        return None
    return standin.modules()


def _own_modules() -> dict[str, types.ModuleType]:
    pypto = _Namespace("pypto", DOC)
    frontend = _Namespace("pypto.frontend")
    runtime = _Namespace("pypto.runtime")
    frontend.function = _function
    frontend.dynamic = lambda name: Symbol(f"pypto.frontend.dynamic({name!r})")
    runtime.RunMode = Symbol("pypto.RunMode")
    pypto.frontend, pypto.runtime = frontend, runtime
    pypto.Tensor = Tensor
    pypto.ceildiv, pypto.bytes_of = _ceildiv, _bytes_of
    pypto.RunMode = runtime.RunMode
    pypto.__path__ = []  # a package, so that `import pypto.frontend` works
    return {m.__name__: m for m in (pypto, frontend, runtime)}


DOC = "tileir's interpret-mode stand-in for PyPTO"


def make_pypto(jit: Callable[..., Any]) -> dict[str, types.ModuleType]:
    """`pypto` and its submodules by their `sys.modules` names: the frontend's stand-in
    when it has one (else a minimal one here), with `jit` as `pypto.frontend.jit` and
    the host-side settings and device calls as no-ops."""
    modules = _frontend_modules() or _own_modules()
    pypto = modules["pypto"]
    pypto.__doc__ = DOC
    runtime = modules.setdefault("pypto.runtime", _Namespace("pypto.runtime"))
    pypto.runtime = runtime
    modules["pypto.frontend"].jit = jit
    for name in _SETTINGS:
        setattr(pypto, name, _no_op)
    for name in _RUNTIME:
        setattr(runtime, name, _no_op)
    return modules


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

        return needs_npu


def make_torch_npu(npu: types.ModuleType) -> dict[str, types.ModuleType]:
    """`torch_npu` and `torch_npu.npu` (the same device module as `torch.npu`)."""
    torch_npu = _NeedsHardware("torch_npu", "tileir's interpret-mode stand-in for torch_npu")
    torch_npu.npu = npu
    torch_npu.__path__ = []
    return {"torch_npu": torch_npu, "torch_npu.npu": npu}
