"""tileir's error types and their wording, without the IR: a cached numpy plan runs with
this module and numpy only (`tileir.backends.numpy.runtime`), so that a `tileir-run` that
finds its plan in the cache does not import xDSL's IR. `tileir.diagnostics` re-exports
these and adds everything that needs the IR (locations of ops, parsing, verifying).
"""

from __future__ import annotations

import re

from xdsl.utils.exceptions import DiagnosticException, ParseError


class TileirError(DiagnosticException):
    """An error in the user's input, already formatted with its location."""


class TileirWarning(UserWarning):
    """Something in the user's input that tileir reads but that may not mean what was
    meant (a keyword PyPTO ignores); the text is `file:line:col: warning: ...`."""


def located(where: str | None, message: str) -> TileirError:
    """The error `message` at `where` (`file:line:col`, or None when unknown)."""
    prefix = f"{where}: " if where else ""
    return TileirError(f"{prefix}error: {message}")


_BROADCAST = re.compile(r"operands could not be broadcast together with shapes (.*)")


def describe_runtime_error(e: BaseException) -> str:
    """tileir's wording for what numpy raises while running an op (the caller adds the
    op and its place): shapes as the IR writes them, sizes that cannot be allocated."""
    message = str(e)
    if m := _BROADCAST.match(message):
        shapes = [
            "[" + ", ".join(d for d in s.strip("()").split(",") if d) + "]"
            for s in m.group(1).split()
        ]
        return f"operand shapes {' and '.join(shapes)} do not broadcast at run time"
    if isinstance(e, MemoryError) or any(
        s in message for s in ("array is too big", "Maximum allowed dimension exceeded")
    ):
        detail = message.split(" for an array")[0].replace("Unable to allocate", "needs")
        extra = f" ({detail})" if detail.startswith("needs") else ""
        return f"an array is too big to allocate{extra}"
    return message or type(e).__name__


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
