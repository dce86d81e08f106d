"""Loading, printing and verifying `pto` modules: the entry points of the scripting API."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf, tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from tileir.diagnostics import parse_located
from tileir.dialect.pto import PTO


def make_context() -> Context:
    """A context that knows `pto` and the upstream dialects `pto` IR uses."""
    ctx = Context()
    for dialect in (
        builtin.Builtin,
        arith.Arith,
        func.Func,
        memref.MemRef,
        scf.Scf,
        tensor.Tensor,
        PTO,
    ):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse `.mlir` text (custom or generic form) and verify it; errors are located
    `TileirError`s."""
    return parse_located(ctx or make_context(), text, name)


def print_module(module: ModuleOp, generic: bool = False) -> str:
    """The module as text; `generic=True` gives the form real MLIR tools accept."""
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"
