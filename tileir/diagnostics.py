"""Diagnostics in the compiler way: `file:line:col: error: message`, never a traceback.

xDSL's parser does not record where an operation came from, and its verifier does not
say which operation failed; tileir parses through `LocatedParser` (which stamps a
`FileLineColLoc` on every op) and verifies op by op, so that every error names the op
and its place in the user's file.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException


class TileirError(DiagnosticException):
    """An error in the user's input, already formatted with its location."""


def location_of(op: Operation) -> str | None:
    """`file:line:col` of an op parsed by `LocatedParser` (or of its closest ancestor)."""
    current: Operation | None = op
    while current is not None:
        loc = current.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        current = current.parent_op()
    return None


def error_at(op: Operation, message: str) -> TileirError:
    where = location_of(op)
    prefix = f"{where}: " if where else ""
    return TileirError(f"{prefix}error: {message}")


class LocatedParser(Parser):
    """A `Parser` that stamps each parsed operation with its source location."""

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            loc = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(loc.file or "<input>"), IntAttr(loc.line), IntAttr(int(loc.col))
            )
        return op


def verify_located(module: Operation, context: str = "") -> None:
    """Verify op by op (parents before children), raising a located `TileirError`.
    IR nested deeper than `pto.MAX_NESTING` is refused first: walking it (xDSL's walk
    and some traits' checks recurse) would exhaust Python's stack."""
    from tileir.dialect.pto import MAX_NESTING, nesting_error

    deep = nesting_error(module)
    if deep is not None:
        raise error_at(
            deep[0],
            f"'{deep[0].name}' is nested {deep[1]} regions deep; tileir handles at most "
            f"{MAX_NESTING} (a PyPTO kernel is a Python function, which allows at most 100 "
            "nested blocks)",
        )
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            suffix = f" ({context})" if context else ""
            raise error_at(op, f"{e}{suffix}") from e


def parse_located(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parse and verify `.mlir` text; any problem is a located `TileirError`."""
    try:
        module = LocatedParser(ctx, text, name).parse_module()
    except ParseError as e:
        raise TileirError(format_exception(e)) from e
    verify_located(module)
    return module


def format_exception(e: BaseException) -> str:
    """One diagnostic for any exception that reaches a tool's top level."""
    if isinstance(e, ParseError):
        loc = e.span.get_location()
        context = e.span.print_with_context(e.msg).rstrip("\n")
        return f"{loc}: error: {e.msg}\n{context}"
    if isinstance(e, TileirError):
        return str(e)
    if isinstance(e, FileNotFoundError):
        return f"error: no such file: {e.filename}"
    if isinstance(e, OSError):
        return f"error: {e.strerror or e}: {e.filename}"
    message = str(e) or type(e).__name__
    if not message.startswith("error"):
        message = f"error: {message}"
    return message
