"""The PyPTO frontend: `pto` IR from a kernel file written against the real PyPTO API.

It reads the file's source, never imports it (so neither `pypto`, nor `torch`, nor an
NPU is needed), and traces each `@pypto.frontend.jit` kernel the way PyPTO does:

    >>> from frontends.pypto import load_file
    >>> module = load_file("frontends/kernels/rope_half_split.py")  # doctest: +SKIP

`tileir-opt kernel.py` and `xdsl-opt kernel.py` use it through the `py` frontend.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from frontends.pypto.translator import translate
from tileir.diagnostics import TileirError, decode_source, verify_located

__all__ = ["PyptoFrontend", "load_file", "load_function", "load_source"]


def load_source(text: str, filename: str = "<string>", kernel: str | None = None) -> ModuleOp:
    """All kernels of a kernel file's text (or only `kernel`), verified; errors are
    located `TileirError`s (`file:line:col: error: ...`) pointing into `filename`."""
    module = translate(text, filename, only=kernel)
    verify_located(module)
    return module


def load_file(path: str | Path, kernel: str | None = None) -> ModuleOp:
    """All kernels of a kernel file (or only `kernel`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TileirError(f"error: cannot read {path}: {e.strerror or e}") from None
    return load_source(decode_source(data, str(path)), str(path), kernel)


def load_function(fn: Callable[..., Any]) -> ModuleOp:
    """The one kernel `fn` (a plain function or PyPTO's jit wrapper), read from the
    source file of its module as a whole, so that module constants and helpers count."""
    original = getattr(fn, "_original_func", None) or inspect.unwrap(fn)
    path = inspect.getsourcefile(original)
    if path is None:
        raise TileirError(f"error: cannot find the source file of {fn!r}")
    text = Path(path).read_text(encoding="utf-8")
    module = translate(text, path, only=original.__name__)
    verify_located(module)
    return module


@dataclass(frozen=True)
class PyptoFrontend(Frontend):
    """`-f py`, and the default for `.py` inputs of `tileir-opt` / `xdsl-opt`."""

    name = "py"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        return load_source(decode_source(input.read(), input_name), input_name)
