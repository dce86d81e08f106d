"""The Python-subset evaluator of the frontend.

A kernel is traced as PyPTO traces it: the Python parts run when the kernel is read
(names through the function's locals, closure cells and globals; constants, arithmetic
on Python values, lists, tuples, dicts, attributes of config objects, f-strings,
comprehensions, `range` loops, `assert`, `if` on Python values, helper calls inlined)
and only tensor and index work becomes IR. `Evaluator` is that interpreter; it leaves
regions (`pypto.loop`, a runtime `if`, the kernel itself) to `regions.RegionBuilder`
and reading `pypto.<name>(...)` calls to the bindings, through the hooks that
`translator.Translator` provides.
"""

from __future__ import annotations

import ast
import types
from typing import TYPE_CHECKING, Any, NoReturn

from xdsl.builder import Builder
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    StringAttr,
)
from xdsl.ir import Block, Operation, SSAValue

from frontends.pypto.calls import Calls
from frontends.pypto.expressions import Expressions
from frontends.pypto.loader import SOURCES, is_user_file
from frontends.pypto.paths import LoopTrace
from frontends.pypto.scope import _NEEDS_VALUE, FUNCTION, Frame, LiveScope, Scope, _lambda_def
from frontends.pypto.standin import PYPTO_FUNCTION, standin_path
from frontends.pypto.statements import Statements
from frontends.pypto.values import Helper, PyptoRef
from tileir import bindings
from tileir.diagnostics import TileirError


class Evaluator(Statements, Expressions, Calls):
    """Runs the Python parts of a kernel and its helpers."""

    if TYPE_CHECKING:  # provided by RegionBuilder / Translator

        def emit(self, op: Operation, node: ast.AST) -> Operation: ...
        def index(self, v: Any, node: ast.AST) -> SSAValue: ...
        def resolve(self, v: Any, node: ast.AST) -> Any: ...
        def tile(self, v: Any, node: ast.AST, what: str = "operand") -> SSAValue: ...
        def shape_of(self, v: SSAValue, node: ast.AST) -> list[int | SSAValue]: ...
        def valid_shape_of(self, v: SSAValue, node: ast.AST) -> list[int | SSAValue]: ...
        def pypto_loop(self, stmt: ast.For, kind: str, scope: Scope) -> None: ...
        def runtime_if(self, stmt: ast.If, cond: SSAValue, scope: Scope) -> None: ...
        def assign_subscript(self, target: ast.Subscript, value: Any, scope: Scope) -> None: ...
        def tensor_subscript(
            self, base: SSAValue, node: ast.Subscript, scope: Scope
        ) -> SSAValue: ...
        def set_cache_policy(
            self, x: SSAValue, args: list[Any], kwargs: dict[str, Any], node: ast.Call
        ) -> None: ...
        def call_pypto(
            self, ref: PyptoRef, args: list[Any], kwargs: dict[str, Any], node: ast.Call
        ) -> Any: ...

    """Translates kernels of one loaded file, each into a `pto.kernel`."""

    def __init__(self, filename: str):
        self.kernel_file = filename
        self.builder: Builder | None = None
        self.frames: list[Frame] = []
        self.region_depth = 0
        self.helpers: dict[Any, Helper] = {}
        # per kernel
        self.dyn_values: dict[str, SSAValue] = {}
        self.dyn_sources: dict[str, tuple[SSAValue, int]] = {}
        self.entry_block: Block | None = None
        self.entry_last: Operation | None = None
        self.workspace_count = 0
        self.promoted: dict[SSAValue, SSAValue] = {}
        self.promoted_valid: dict[SSAValue, list[int | SSAValue]] = {}
        """A promoted tile's valid shape, by its workspace, where it is not the whole tile:
        reads of the workspace keep it (PyPTO's tensor keeps its valid shape)."""
        """Tiles written by a slice assignment (`t[0:2, :] = u`), each to the workspace
        that holds it from then on (PyPTO's tensors are memory)."""
        self.open_blocks: list[Block] = []
        self.current: ast.AST | None = None
        """The node being translated, for the location of an unexpected failure."""
        self.statement: ast.stmt | None = None
        """The statement being run (a binding's reader asks whether its call's value is
        dropped: `x.scatter_(...)` on its own line)."""
        self.method_receiver: ast.expr | None = None
        """The receiver's expression of the method call being read (`y` of `y.f_(x)`)."""
        self.call_receiver: ast.expr | None = None
        """The receiver (or first argument) expression of the PyPTO call being read: an
        in-place function updates what it names (`update_in_place`)."""
        self.call_scope: Scope | None = None
        """The scope of the call being read (an in-place call rebinds its receiver's name
        there)."""
        self.index_constants: dict[tuple[int, int], SSAValue] = {}
        self.trace_steps = 0
        """Iterations of translation-time loops in the kernel being read."""
        self.loop_traces: list[LoopTrace] = []
        """One per `pypto.loop` being traced, innermost last: what PyPTO's per-path
        traces of its body depend on (`paths.py`)."""
        self.call_hint = ""
        """Appended to errors that need a Python value the call would have given."""
        self.tile_settings: dict[str, Any] = {}
        """The latest `set_vec_tile_shapes` ("vec") / `set_cube_tile_shapes` ("cube") of
        the kernel being read, in reading order (PyPTO's trace order): what
        `pypto.get_vec_tile_shapes()` / `get_cube_tile_shapes()` return."""

    @property
    def filename(self) -> str:
        """The file of the function being read (a helper may come from another file)."""
        return self.frames[-1].filename if self.frames else self.kernel_file

    @property
    def lines(self) -> list[str]:
        return SOURCES.lines(self.filename)

    # ----------------------------------------------------------------------- errors

    def loc(self, node: ast.AST) -> FileLineColLoc:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        return FileLineColLoc(StringAttr(self.filename), IntAttr(line), IntAttr(col))

    def error(self, node: ast.AST | None, message: str) -> TileirError:
        if self.call_hint and any(w in message for w in _NEEDS_VALUE):
            message += self.call_hint
        if node is None or not hasattr(node, "lineno"):
            return TileirError(f"{self.filename}: error: {message}")
        line, col = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
        text = f"{self.filename}:{line}:{col}: error: {message}"
        if 0 < line <= len(self.lines):
            src = self.lines[line - 1]
            text += f"\n{line:5} | {src}\n      | {' ' * (col - 1)}^"
        return TileirError(text)

    def fail(self, node: ast.AST | None, message: str) -> NoReturn:
        raise self.error(node, message)

    # ----------------------------------------------------------------------- live values

    def live(self, value: Any) -> Any:
        """A Python object a kernel names, as the translator uses it: the stand-in
        `pypto` as names, the user's functions as helpers to inline."""
        path = standin_path(value)
        if path is not None:
            return PyptoRef(path)
        if isinstance(value, types.FunctionType):
            return self.helper_of(value) or value
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            helper = self.helper_of(value.__func__)
            if helper is not None:
                return Helper(
                    helper.node,
                    helper.closure,
                    helper.filename,
                    helper.defaults,
                    helper.kw_defaults,
                    helper.pypto_function,
                    (value.__self__,),
                )
        return value

    def helper_of(self, fn: types.FunctionType) -> Helper | PyptoRef | None:
        """A function of the user's code, read from its source to be inlined (None for
        library code, which is called)."""
        if fn in self.helpers:
            return self.helpers[fn]
        code = fn.__code__
        if not is_user_file(code.co_filename):
            return None
        if fn.__qualname__ == fn.__name__ and fn.__name__ in bindings.HELPER_OPS:
            # The PyPTO emitter's stand-in for an op PyPTO 0.2.0 lacks: read as the op.
            return PyptoRef((bindings.HELPER_OPS[fn.__name__],))
        node = SOURCES.node_of(code)
        if node is None:
            return None
        if isinstance(node, ast.Lambda):
            node = _lambda_def(node)
        helper = Helper(
            node,
            LiveScope(fn),
            code.co_filename,
            list(fn.__defaults__ or ()),
            dict(fn.__kwdefaults__ or {}),
            pypto_function=bool(getattr(fn, PYPTO_FUNCTION, False)),
        )
        self.helpers[fn] = helper
        return helper

    def define_function(self, node: ast.FunctionDef, scope: Scope) -> None:
        """A `def` inside a kernel or helper: a helper closing over the current scope."""
        pypto_function = False
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            ref = self.resolve(self.eval(target, scope), target)
            if isinstance(ref, PyptoRef) and ref.path == FUNCTION:
                pypto_function = True
            else:
                self.fail(
                    dec,
                    "a function defined inside a kernel can only be a plain function or a "
                    "@pypto.frontend.function helper",
                )
        helper = Helper(node, scope, self.filename, pypto_function=pypto_function)
        args = node.args
        helper.defaults = [self.eval(d, scope) for d in args.defaults]
        helper.kw_defaults = {
            a.arg: self.eval(d, scope)
            for a, d in zip(args.kwonlyargs, args.kw_defaults)
            if d is not None
        }
        scope.vars[node.name] = helper
