"""Diagnostics in the compiler way: `file:line:col: error: message`, never a traceback.

xDSL's parser does not record where an operation came from, and its verifier does not
say which operation failed; tileir parses through `LocatedParser` (which stamps a
`FileLineColLoc` on every op) and verifies op by op, so that every error names the op
and its place in the user's file.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_right

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import ParseError, VerifyException

from tileir.errors import (  # noqa: F401  (re-exported: where callers look for them)
    TileirError,
    TileirWarning,
    describe_runtime_error,
    format_exception,
    located,
)
from tileir.verify import OpVerifier, ops_in


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
    return located(location_of(op), message)


MAX_NESTING = 64
"""How many regions may enclose an op (parsed text, PyPTO source, IR built in Python;
the parser, the verifier and the pipelines all enforce it): deeper IR would exceed
Python's recursion limit in the parser, the passes and the back ends, and a PyPTO kernel
is a Python function, where Python allows at most 100 nested blocks."""


class LocatedParser(Parser):
    """A `Parser` that stamps each parsed operation with its source location.

    xDSL's `Span.get_location` counts the newlines from the start of the input, which
    makes stamping every op quadratic in the file size; the parser instead finds lines
    in a table of line starts built once (a bisection per op)."""

    def __init__(self, ctx: Context, input: str, name: str = "<input>") -> None:
        super().__init__(ctx, input, name)
        self._filename = StringAttr(name or "<input>")
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", input))]
        self._depth = 0

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        module = super().parse_module(allow_implicit_module)
        if not isinstance(module.location, FileLineColLoc):  # the implicit module
            module.location = FileLineColLoc(self._filename, IntAttr(1), IntAttr(1))
        return module

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        if self._depth > MAX_NESTING:  # `_depth` ops enclose this one
            self.raise_error(
                f"more than {MAX_NESTING} nested regions, tileir's limit "
                "(each pto.kernel / pto.loop / scf.if body is one)",
                span,
            )
        self._depth += 1
        try:
            op = super().parse_operation()
        except (VerifyException, ValueError, OverflowError) as e:
            # xDSL checks attribute and type constraints while parsing, without a
            # place: the op being parsed is it.
            raise ParseError(span, str(e)) from e
        finally:
            self._depth -= 1
        if not isinstance(op.location, FileLineColLoc):
            line = bisect_right(self._line_starts, span.start)
            column = span.start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc(
                self._filename, IntAttr(line + span.line_offset), IntAttr(column)
            )
        return op


def verify_located(module: Operation, context: str = "") -> None:
    """Verify op by op (parents before children), raising a located `TileirError`.
    IR nested deeper than `MAX_NESTING` is refused first: walking it (xDSL's walk
    and some traits' checks recurse) would exhaust Python's stack. Each op is checked
    as `op.verify(verify_nested_ops=False)` checks it, with the IRDL constraints of
    each distinct op signature checked once (`tileir.verify.OpVerifier`)."""
    from tileir.dialect.pto import nesting_error

    deep = nesting_error(module)
    if deep is not None:
        raise error_at(
            deep[0],
            f"'{deep[0].name}' is nested {deep[1]} regions deep; tileir handles at most "
            f"{MAX_NESTING} (a PyPTO kernel is a Python function, which allows at most 100 "
            "nested blocks)",
        )
    verifier = OpVerifier()
    symbol_table: dict[type[Operation], bool] = {}
    ops = [module]
    for region in module.regions:
        ops_in(region, ops)
    for op in ops:
        cls = type(op)
        is_table = symbol_table.get(cls)
        if is_table is None:
            is_table = symbol_table[cls] = cls.has_trait(SymbolTable)
        if is_table:
            _check_unique_symbols(op)
        try:
            verifier.verify(op)
        except (VerifyException, ValueError) as e:
            # Some xDSL verifiers raise ValueError (arith.addui_extended on index):
            # the op being verified is the place either way.
            suffix = f" ({context})" if context else ""
            raise error_at(op, f"{e}{suffix}") from e


def _check_unique_symbols(table: Operation) -> None:
    """xDSL reports a symbol defined twice without a place; this names both."""
    seen: dict[str, Operation] = {}
    for region in table.regions:
        for op in region.ops:
            name = op.properties.get("sym_name") or op.attributes.get("sym_name")
            if not isinstance(name, StringAttr):
                continue
            first = seen.setdefault(name.data, op)
            if first is not op:
                where = location_of(first)
                raise error_at(
                    op,
                    f"'{op.name}' @{name.data} is defined twice"
                    + (f" (first at {where})" if where else ""),
                )


def parse_located(ctx: Context, text: str, name: str) -> ModuleOp:
    """Parse and verify `.mlir` text; any problem is a located `TileirError`."""
    # Parsing allocates many objects and frees none, so the cyclic collector's full
    # passes (which walk every live object) would only cost time: pause it meanwhile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        module = LocatedParser(ctx, text, name).parse_module()
        verify_located(module)
    except ParseError as e:
        raise TileirError(format_exception(e)) from e
    finally:
        if collecting:
            gc.enable()
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
