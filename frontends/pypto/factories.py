"""Kernels that a factory makes at run time, made by calling the factory as the wrapper would.

Many kernel files make their `@pypto.frontend.jit` kernel inside a function that only the
host wrapper calls, at run time (`def make_kernel(h, d): @jit def kernel(...): ...; return
kernel`, often behind a cache). Importing the file makes no kernel; PyPTO makes it when
the wrapper calls the factory. tileir does what the wrapper does: it calls the factory
(with the stand-in `pypto`, inside the loader's import context), with the factory's own
parameters taken from the call (`--arg h=4` / `load_file(..., args={"h": 4})`; a
parameter with a default keeps it), and reads the kernels made during that call.

A factory that calls its kernel itself (a wrapper defining the kernel inline) stops at
that call: the kernel's call is the specialisation, as in PyPTO's JIT, so the arguments
the wrapper passes it (`ArgShape`s, arrays, tensors it built) become the example call,
under any `--arg` given for the kernel's own parameters.

A factory is selected by the kernel's function name (`kernel`), its qualified name
(`make_kernel.<locals>.kernel`) or the factory's name; a factory parameter still missing
is a located error at the factory naming every missing parameter.
"""

from __future__ import annotations

import inspect
from typing import Any

from frontends.pypto import standin
from frontends.pypto.loader import KernelEntry, LoadedFile, Unreached
from frontends.pypto.standin import JitKernel
from tileir.diagnostics import TileirError

__all__ = ["factory_kernels", "select_kernels"]


class _KernelCalled(BaseException):  # noqa: N818 - a signal, not an error
    """Raised out of a factory when it calls the kernel being made (a BaseException, so
    that the user's `except Exception` does not swallow it)."""

    def __init__(self, kernel: JitKernel, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self.kernel, self.args_, self.kwargs = kernel, args, kwargs


def select_kernels(
    loaded: LoadedFile, name: str | None, call: dict[str, Any]
) -> tuple[list[KernelEntry], set[str], dict[str, dict[str, Any]]]:
    """The kernels `name` selects (all when None): module-level kernels first; kernels
    made by factories when `name` selects one, or when the module has no other kernel.
    Returns the entries, the call's names that factories took, and the calls factories
    made of their kernels (by entry name)."""
    if name is None:
        if loaded.kernels or not loaded.unreached:
            return loaded.select(None), set(), {}
        return factory_kernels(loaded, None, call)
    if any(name == k.name or name in k.aliases for k in loaded.kernels):
        return loaded.select(name), set(), {}
    if any(u.selected_by(name) for u in loaded.unreached):
        return factory_kernels(loaded, name, call)
    return loaded.select(name), set(), {}


def factory_kernels(
    loaded: LoadedFile, name: str | None, call: dict[str, Any]
) -> tuple[list[KernelEntry], set[str], dict[str, dict[str, Any]]]:
    """The kernels the factories selected by `name` (all factories when None) make when
    called with `call`'s values for their parameters: the entries, the call's names the
    factories took, and each kernel's call captured from the factory (by entry name)."""
    chosen = [u for u in loaded.unreached if name is None or u.selected_by(name)]
    if name is not None and len({u.qualname for u in chosen}) > 1:
        raise TileirError(
            f"{loaded.filename}: error: {name!r} names {len(chosen)} kernels made by "
            f"factories; select one of {', '.join(u.qualname for u in chosen)}"
        )
    entries: list[KernelEntry] = []
    taken: set[str] = set()
    captured: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, ...]] = set()
    used = {e.name for e in loaded.kernels}
    for u in chosen:
        if u.factory in seen:
            continue
        seen.add(u.factory)
        made, calls, params = _call_factory(loaded, u, call)
        taken |= params
        wanted = [u2 for u2 in chosen if u2.factory == u.factory]
        for kernel in made:
            code = kernel.fn.__code__
            if code.co_filename != loaded.filename or not any(
                w.name == kernel.fn.__name__ for w in wanted
            ):
                continue
            sym, n = kernel.fn.__name__, 1
            while sym in used:
                sym, n = f"{kernel.fn.__name__}_{n}", n + 1
            used.add(sym)
            entries.append(KernelEntry(kernel, sym, (kernel.fn.__name__, u.qualname)))
            if id(kernel) in calls:
                captured[sym] = calls[id(kernel)]
        if not any(e.kernel.fn.__name__ in {w.name for w in wanted} for e in entries):
            raise TileirError(
                f"{loaded.filename}:{u.line}:1: error: calling the factory "
                f"`{'.'.join(u.factory)}` made no kernel `{u.name}` (the branch that defines "
                "it was not taken with these arguments)"
            )
    return entries, taken, captured


def _resolve(loaded: LoadedFile, u: Unreached) -> Any:
    value: Any = loaded.module
    for part in u.factory:
        value = getattr(value, part, None)
        if value is None:
            raise TileirError(
                f"{loaded.filename}:{u.line}:1: error: the kernel `{u.name}` is made inside "
                f"`{'.<locals>.'.join(u.factory)}`, which is not reachable from the module, "
                "so tileir cannot call it to make the kernel; pass the kernel it makes to "
                "frontends.pypto.load_function"
            )
    return value


def _call_factory(
    loaded: LoadedFile, u: Unreached, call: dict[str, Any]
) -> tuple[list[JitKernel], dict[int, dict[str, Any]], set[str]]:
    factory = _resolve(loaded, u)
    where = f"{loaded.filename}:{u.factory_line}:1"
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        raise TileirError(f"{where}: error: `{u.factory[-1]}` cannot be called") from None
    params = [
        p
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)
    ]
    given = {p.name: call[p.name] for p in params if p.name in call}
    missing = [p.name for p in params if p.name not in given and p.default is p.empty]
    shown = sig.replace(
        parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
        return_annotation=sig.empty,
    )
    if missing:
        listed = ", ".join(f"`{m}`" for m in missing)
        flags = " ".join(f"--arg {m}=VALUE" for m in missing)
        raise TileirError(
            f"{where}: error: the kernel `{u.name}` is made when `{u.factory[-1]}{shown}` is "
            f"called (the host wrapper calls it at run time, the import does not): give "
            f"{listed} with {flags} (and --kernel {u.name}); in Python "
            f"load_file(..., kernel={u.name!r}, args={{...}})"
        )
    calls: dict[int, dict[str, Any]] = {}

    def stop(kernel: JitKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if any(kernel is k for k in made):
            raise _KernelCalled(kernel, args, kwargs)

    with loaded.reentered(), standin.collecting() as made, standin.on_kernel_call(stop):
        try:
            factory(**given)
        except _KernelCalled as e:
            calls[id(e.kernel)] = _bind(e.kernel, e.args_, e.kwargs, where)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # the user's code may raise anything
            raise loaded.call_error(e, f"calling the factory `{u.factory[-1]}` raised") from None
    return made, calls, set(given)


def _bind(
    kernel: JitKernel, args: tuple[Any, ...], kwargs: dict[str, Any], where: str
) -> dict[str, Any]:
    try:
        return dict(inspect.signature(kernel.fn).bind_partial(*args, **kwargs).arguments)
    except TypeError as e:
        raise TileirError(
            f"{where}: error: the factory calls {kernel.fn.__name__}(): {e}"
        ) from None
