"""The PyPTO back end: emit PyPTO Python, and check it with the real `pypto` package.

`emit(module)` returns the Python source (`tileir-opt FILE -t pypto`); `harness` runs
a kernel file with pypto in a subprocess. Importing this package imports neither torch
nor pypto, nor the emitter until `emit` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

__all__ = ["emit"]


def emit(module: ModuleOp) -> str:
    """The PyPTO Python source of `module`: one `@pypto.frontend.jit` function per
    `pto.kernel` (see `tileir.backends.pypto.emitter`)."""
    from tileir.backends.pypto.emitter import emit_module

    return emit_module(module)
