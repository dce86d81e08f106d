"""Diagnostics in the compiler way: `file:line:col: error: message`, never a traceback.

xDSL's parser does not record where an operation came from, and its verifier does not
say which operation failed; tileir parses through `LocatedParser` (which stamps a
`FileLineColLoc` on every op) and verifies op by op, so that every error names the op
and its place in the user's file.
"""

from __future__ import annotations

import re
from bisect import bisect_right

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
    """A `Parser` that stamps each parsed operation with its source location.

    xDSL's `Span.get_location` counts the newlines from the start of the input, which
    makes stamping every op quadratic in the file size; the parser instead finds lines
    in a table of line starts built once (a bisection per op)."""

    def __init__(self, ctx: Context, input: str, name: str = "<input>") -> None:
        super().__init__(ctx, input, name)
        self._filename = StringAttr(name or "<input>")
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", input))]

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            line = bisect_right(self._line_starts, span.start)
            column = span.start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc(
                self._filename, IntAttr(line + span.line_offset), IntAttr(column)
            )
        return op


def verify_located(module: Operation, context: str = "") -> None:
    """Verify op by op (parents before children), raising a located `TileirError`."""
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


def decode_source(data: bytes, name: str) -> str:
    """`data` as UTF-8 text; bytes that are not UTF-8 are a located `TileirError` at the
    first bad byte (its line, and its column counted in bytes)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise TileirError(
            f"{name}:{line}:{column}: error: the file is not UTF-8 text "
            f"(byte 0x{data[e.start]:02x}: {e.reason})"
        ) from None


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
