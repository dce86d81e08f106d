"""The stand-in `pypto` package that a kernel file imports while tileir loads it.

PyPTO's frontend is a JIT: the user's module is imported (decorators run, factories are
called, config objects are built), and a kernel is read from its live function when it is
called. tileir does the same without the real `pypto`: while `frontends.pypto.loader`
imports a kernel file, `sys.modules["pypto"]` is this stand-in, and nothing else.

Every name in it is a `PyptoRef` (`pypto.RunMode.NPU`, `pypto.STATIC`, `pypto.exp`), a
data type (`pypto.DT_BF16`), or one of the few functions module-level code runs:

- `@pypto.frontend.jit` / `@pypto.frontend.jit(**options)` make a `JitKernel`, recorded
  in the loader's registry wherever it runs (module level or inside a factory);
- `@pypto.frontend.function` marks a helper;
- `pypto.frontend.dynamic(name)`, `pypto.Tensor(shape, dtype, ...)` /
  `pypto.Tensor[shape, dtype]` / `pypto.tensor()` annotations.

The host-side calls of a PyPTO script that steer the compiler or the device and compute
nothing (`pypto.set_pass_options(...)`, `pypto.reset_options()`,
`pypto.runtime._device_synchronize()`; `HOST_NO_OPS`) do nothing when module-level code
runs them; inside a kernel they are names like the rest.

Everything else is only a name until a kernel body uses it, where the translator reads it.
`modules(jit=...)` is the hook for what runs kernels instead of reading them
(`tileir.interpret`): its `pypto.frontend.jit` is the given callable.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from frontends.pypto.values import Dynamic, PyptoRef, TensorSpec
from tileir.dialect import dtypes

__all__ = [
    "HOST_NO_OPS",
    "JitKernel",
    "StandinError",
    "call_at_import",
    "collecting",
    "modules",
    "on_kernel_call",
    "pypto_name",
]

SUBMODULES = ("frontend", "experimental", "platform", "runtime", "distributed", "operation")
"""`import pypto.<name>` works for these (their names are `PyptoRef`s like the rest)."""

STANDIN_PATH = "__tileir_standin_path__"
"""The attribute naming a stand-in module's path inside `pypto`."""

PYPTO_FUNCTION = "__tileir_pypto_function__"
"""Set on a function decorated `@pypto.frontend.function`."""

_SHAPE_MARKERS = frozenset({("STATIC",), ("DYNAMIC",), ("DYN",)})


class StandinError(TypeError):
    """A use of `pypto` at import time that the stand-in does not run."""


class JitKernel:
    """What `@pypto.frontend.jit` makes: the user's function and the decorator's options.

    tileir reads it, it does not run it: `frontends.pypto.load_function(kernel, *args)`
    specialises it to the call's shapes and scalars. (Interpret mode, `tileir.interpret`,
    makes `@pypto.frontend.jit` return a kernel that runs when called instead.)"""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]):
        if not isinstance(fn, types.FunctionType):
            raise StandinError(f"@pypto.frontend.jit decorates a function, not {fn!r}")
        self.fn = fn
        self.options = options
        self._original_func = fn  # where PyPTO's own wrapper keeps it
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for hook in reversed(_call_hooks):
            hook(self, args, kwargs)  # a factory being called by tileir stops here
        raise StandinError(
            f"tileir reads the kernel {self.fn.__name__}() but does not run it from Python; "
            "build its IR with frontends.pypto.load_function(kernel, *args), or run it "
            "in interpret mode (tileir.interpret)"
        )

    def __repr__(self) -> str:
        return f"<pypto.frontend.jit kernel {self.fn.__qualname__}>"


_registries: list[list[JitKernel]] = []
_call_hooks: list[Callable[[JitKernel, tuple[Any, ...], dict[str, Any]], None]] = []


@contextmanager
def on_kernel_call(
    hook: Callable[[JitKernel, tuple[Any, ...], dict[str, Any]], None],
) -> Iterator[None]:
    """Run `hook(kernel, args, kwargs)` when a kernel is called while the block runs (a
    factory tileir calls: the wrapper's call of the kernel is the specialisation)."""
    _call_hooks.append(hook)
    try:
        yield
    finally:
        _call_hooks[:] = [h for h in _call_hooks if h is not hook]


@contextmanager
def collecting() -> Iterator[list[JitKernel]]:
    """Record every `JitKernel` made while the block runs (the loader's import)."""
    found: list[JitKernel] = []
    _registries.append(found)
    try:
        yield found
    finally:
        # by identity: two registries that recorded nothing compare equal
        _registries[:] = [r for r in _registries if r is not found]


NPU_ARCH = "DAV_2201"
"""`pypto.platform.npuarch`: the architecture kernels are traced for. PyPTO reads it when
the kernel is traced (`if pypto.platform.npuarch == "DAV_3510": ...` picks code for
Ascend 950), and PyPTO 0.2.0 reports DAV_2201 (Ascend 910B / A2-A3) on the CPU, where
tileir's PyPTO output runs; so tileir traces for that one too, and the numpy run and the
emitted PyPTO take the same branches."""


def pypto_name(path: tuple[str, ...]) -> Any:
    """`pypto.<path>`: a data type for `DT_*` names tileir knows, `NPU_ARCH` for
    `platform.npuarch`, else a `PyptoRef`."""
    if path == ("platform", "npuarch"):
        return NPU_ARCH
    last = path[-1] if path else ""
    if last.startswith("DT_") and (len(path) == 1 or path[-2] == "DataType"):
        if last in dtypes.BY_PYPTO:
            return dtypes.BY_PYPTO[last]
    return PyptoRef(path)


def _jit(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    def make(fn: Any) -> JitKernel:
        kernel = JitKernel(fn, dict(kwargs))
        for registry in _registries:
            registry.append(kernel)
        return kernel

    if len(args) == 1 and not kwargs and callable(args[0]):
        return make(args[0])
    if args:
        raise StandinError("pypto.frontend.jit takes its options as keyword arguments")
    return make


def _function(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if len(args) != 1 or kwargs or not isinstance(args[0], types.FunctionType):
        raise StandinError("@pypto.frontend.function decorates a function")
    setattr(args[0], PYPTO_FUNCTION, True)
    return args[0]


def _dynamic(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Dynamic:
    def sig(name: str) -> str:
        return name

    name = sig(*args, **kwargs)
    if not isinstance(name, str):
        raise StandinError("pypto.frontend.dynamic() takes the dim's name as a string")
    return Dynamic(name)


def _is_dim(d: Any, last: bool) -> bool:
    if isinstance(d, bool):
        return False
    if isinstance(d, int):
        return d > 0
    if isinstance(d, Dynamic):
        return True
    if isinstance(d, PyptoRef):
        return d.path in _SHAPE_MARKERS
    return d is Ellipsis and last


def _tensor(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TensorSpec:
    def sig(shape: Any = None, dtype: Any = None, name: str = "", format: Any = None, **_: Any):
        return shape, dtype, format

    shape, dtype, fmt = sig(*args, **kwargs)
    if shape is not None:
        if not isinstance(shape, list | tuple) or not all(
            _is_dim(d, i == len(shape) - 1) for i, d in enumerate(shape)
        ):
            raise StandinError(
                f"pypto.Tensor shape must list positive ints, pypto.STATIC, pypto.DYNAMIC, "
                f"pypto.frontend.dynamic names and a final `...`, got {shape!r}"
            )
        shape = tuple(PyptoRef(("DYNAMIC",)) if d == PyptoRef(("DYN",)) else d for d in shape)
    if dtype is not None and not isinstance(dtype, dtypes.ElementType | PyptoRef):
        raise StandinError(f"pypto.Tensor dtype must be a pypto.DT_* data type, got {dtype!r}")
    if fmt is not None and not isinstance(fmt, PyptoRef):
        raise StandinError(f"pypto.Tensor format must be a pypto.TileOpFormat, got {fmt!r}")
    return TensorSpec(shape, dtype, fmt.dotted if fmt is not None else None)


def _no_op(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A compiler or device setting: nothing to do when tileir reads or runs kernels."""


HOST_NO_OPS: frozenset[tuple[str, ...]] = frozenset(
    {
        (name,)
        for name in (
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
            "set_pass_config",
            "set_pass_default_config",
            "reset_options",
        )
    }
    | {("runtime", name) for name in ("_device_init", "_device_fini", "_device_synchronize")}
    | {("experimental", "auto_mix_partition")}
)
"""Host-side calls that configure PyPTO's compiler or runtime, or wait for the device:
no effect on any value a kernel computes, so no-ops at import time (and in interpret
mode, where scripts call them around their kernels)."""


def _op_wrapper(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`@pypto.operation.op_wrapper`: PyPTO's adapter for functions that call its C++
    core (`pypto_impl`); the function stays as written, and the translator reports the
    `pypto_impl` call it cannot read, where it is called."""
    if len(args) != 1 or kwargs or not callable(args[0]):
        raise StandinError("@pypto.operation.op_wrapper decorates a function")
    return args[0]


_AT_IMPORT: dict[tuple[str, ...], Callable[[tuple[Any, ...], dict[str, Any]], Any]] = {
    ("frontend", "jit"): _jit,
    ("frontend", "function"): _function,
    ("frontend", "dynamic"): _dynamic,
    ("Tensor",): _tensor,
    ("tensor",): _tensor,
    **dict.fromkeys(HOST_NO_OPS, _no_op),
    ("operation", "op_wrapper"): _op_wrapper,
}


def _values() -> dict[str, Callable[..., Any]]:
    from tileir.bindings import VALUES  # the bindings import the dialect: load it late

    return VALUES


def call_at_import(path: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`pypto.<path>(*args, **kwargs)` run by the user's module-level code."""
    fn = _AT_IMPORT.get(path)
    maker = _values().get(".".join(path))
    if fn is None and maker is not None:  # `pypto.Element(...)` at module level
        try:
            return maker(*args, **kwargs)
        except TypeError as e:
            raise StandinError(f"pypto.{'.'.join(path)}(): {e}") from None
    if fn is None:
        dotted = ".".join(("pypto", *path))
        raise StandinError(
            f"{dotted}() is only read inside a kernel: tileir's stand-in pypto does not run "
            "it at import time"
        )
    return fn(args, kwargs)


def _module(name: str, path: tuple[str, ...]) -> types.ModuleType:
    mod = types.ModuleType(name, "tileir's stand-in for the real pypto (see frontends.pypto)")

    def getattr_(attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return pypto_name((*path, attr))

    mod.__getattr__ = getattr_  # type: ignore[method-assign]
    setattr(mod, STANDIN_PATH, path)
    return mod


def modules(
    jit: Callable[..., Any] | None = None, doc: str | None = None
) -> dict[str, types.ModuleType]:
    """Fresh `sys.modules` entries for `pypto` and its submodules (each also an attribute
    of `pypto`, as after `import pypto.frontend`). With `jit`, `pypto.frontend.jit` is
    that callable instead of the reader's `JitKernel` maker: what interpret mode runs
    kernels with (`@jit`, `@jit()` and `@jit(**options)` all reach it). `doc` replaces
    the modules' docstring."""
    root = _module("pypto", ())
    root.__path__ = []  # a package, so that `import pypto.frontend` finds the entries below
    out = {"pypto": root}
    for sub in SUBMODULES:
        out[f"pypto.{sub}"] = mod = _module(f"pypto.{sub}", (sub,))
        setattr(root, sub, mod)
    for path in HOST_NO_OPS:
        if path[-1].startswith("_"):  # `_module` hides private names: give these out
            setattr(out[".".join(("pypto", *path[:-1]))], path[-1], PyptoRef(path))
    if jit is not None:
        out["pypto.frontend"].jit = jit  # type: ignore[attr-defined]
    if doc is not None:
        for mod in out.values():
            mod.__doc__ = doc
    return out


def standin_path(value: Any) -> tuple[str, ...] | None:
    """The `pypto` path of a stand-in module, None for anything else."""
    if isinstance(value, types.ModuleType):
        path = getattr(value, STANDIN_PATH, None)
        if isinstance(path, tuple):
            return path
    return None
