"""The PyPTO frontend: `pto` IR from a kernel file written against the real PyPTO API.

Reading a kernel file **imports it**, as PyPTO's JIT does: its module-level code runs
(with a tileir stand-in for `pypto`, so neither `pypto` nor an NPU is needed; a file that
imports torch needs torch). Each `@pypto.frontend.jit` kernel it makes, at module level or
in a factory, is then read from its live function and specialised to a call's shapes and
scalars, when they are given:

    >>> from frontends.pypto import load_file
    >>> module = load_file("frontends/kernels/rope_half_split.py")  # doctest: +SKIP
    >>> module = load_file("k.py", args={"x": "13x64xbf16", "eps": 1e-5})  # doctest: +SKIP

`tileir-opt kernel.py` and `xdsl-opt kernel.py` use it through the `py` frontend.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from frontends.pypto.loader import LOADING, KernelEntry, LoadedFile, load_module
from frontends.pypto.specialise import ArgShape, parse_arg
from frontends.pypto.standin import JitKernel
from frontends.pypto.translator import translate
from tileir.diagnostics import TileirError, decode_source, verify_located

__all__ = ["ArgShape", "PyptoFrontend", "load_file", "load_function", "load_source"]


def _call(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Example arguments; text values are read as on the command line (`13x64xbf16`)."""
    return {k: parse_arg(v) if isinstance(v, str) else v for k, v in (args or {}).items()}


def load_source(
    text: str,
    filename: str = "<string>",
    kernel: str | None = None,
    args: Mapping[str, Any] | None = None,
) -> ModuleOp:
    """All kernels of a kernel file's text (or only `kernel`), imported as the module of
    `filename` and specialised to `args` (example arguments by parameter name: arrays,
    torch tensors, `ArgShape`s or `"13x64xbf16"` text, scalars); verified. Errors are
    located `TileirError`s (`file:line:col: error: ...`)."""
    with LOADING:
        module = translate(load_module(text, filename), kernel, _call(args))
    verify_located(module)
    return module


def load_file(
    path: str | Path, kernel: str | None = None, args: Mapping[str, Any] | None = None
) -> ModuleOp:
    """All kernels of a kernel file (or only `kernel`); see `load_source`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TileirError(f"error: cannot read {path}: {e.strerror or e}") from None
    return load_source(decode_source(data, str(path)), str(path), kernel, args)


def load_function(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ModuleOp:
    """The kernel `fn` specialised to the call `fn(*args, **kwargs)`: each argument an
    array, a torch tensor, an `ArgShape` (or `"13x64xbf16"`) or a scalar; parameters not
    given take their defaults, and dims their annotation (`frontends.pypto.specialise`).

    `fn` is a kernel of a module tileir loaded (a factory's result too), or any function
    (a real PyPTO jit wrapper, a plain function): then its source file is loaded and the
    kernel of that name read from it."""
    if isinstance(fn, JitKernel):
        entry = KernelEntry(fn, fn.fn.__name__, (fn.fn.__name__,))
        loaded = LoadedFile(types.ModuleType(fn.fn.__module__), fn.fn.__code__.co_filename, [entry])
        target = fn.fn
    else:
        target = getattr(fn, "_original_func", None) or inspect.unwrap(fn)
        path = inspect.getsourcefile(target)
        if path is None:
            raise TileirError(f"error: cannot find the source file of {fn!r}")
        text = decode_source(Path(path).read_bytes(), path)
    try:
        bound = inspect.signature(target).bind_partial(*args, **kwargs)
    except TypeError as e:
        raise TileirError(f"error: {target.__name__}(): {e}") from None
    with LOADING:
        if not isinstance(fn, JitKernel):
            loaded = load_module(text, path)
            loaded.kernels = loaded.select(target.__name__)
        module = translate(loaded, None, _call(bound.arguments))
    verify_located(module)
    return module


@dataclass(frozen=True)
class PyptoFrontend(Frontend):
    """`-f py`, and the default for `.py` inputs of `tileir-opt` / `xdsl-opt`."""

    name = "py"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        return load_source(decode_source(input.read(), input_name), input_name)
