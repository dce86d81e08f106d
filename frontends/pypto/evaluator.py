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
import builtins
import inspect
import operator
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    StringAttr,
    i1,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from frontends.pypto.composites import COMPOSITES
from frontends.pypto.kinds import (
    describe,
    element_of,
    is_cond,
    is_index,
    is_mem,
    is_ssa,
    is_tile,
    static_shape,
)
from frontends.pypto.limits import MAX_TRACE_STEPS
from frontends.pypto.loader import SOURCES, is_user_file
from frontends.pypto.standin import PYPTO_FUNCTION, JitKernel, pypto_name, standin_path
from frontends.pypto.values import BoundMethod, Dynamic, Helper, Poison, PyptoRef, TensorSpec
from tileir import bindings
from tileir.bindings import index as index_ops
from tileir.bindings.elementwise import elementwise
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes, pto

MAX_INLINE_DEPTH = 64

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}

_PY_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}

_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

_PY_CMPOPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "is": operator.is_,
    "is not": operator.is_not,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}

_SAFE_BUILTINS = (
    "abs all any bool dict divmod enumerate float int isinstance len list max min range "
    "reversed round sorted str sum tuple zip"
).split()

FUNCTION = ("frontend", "function")


def _sig_scalar2(a, b): ...


_NEEDS_VALUE = ("index value", "constant", "known at trace time", "known when")
"""Error messages that say Python needed a value which the call's shapes would give."""


def _holds_ssa(value: Any) -> bool:
    """A value is, or a Python container holds, an IR value."""
    if is_ssa(value):
        return True
    if isinstance(value, list | tuple | set):
        return any(_holds_ssa(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_ssa(v) for v in value.values())
    return False


_STORING_METHODS = {
    list: ("append", "extend", "insert"),
    dict: ("setdefault", "get", "pop"),
}
"""Methods of Python containers that store or hand back their arguments without looking
at them, so they may take tiles at trace time (`parts.append(t)`, as PyPTO's JIT runs
them); `list.index`, `remove`, `in` compare values and stay errors."""


def _stores_only(callee: Any) -> bool:
    owner = getattr(callee, "__self__", None)
    return type(owner) in _STORING_METHODS and (
        getattr(callee, "__name__", "") in _STORING_METHODS[type(owner)]
    )


class Scope:
    """Python name bindings: a function's locals, chained to its closure and, at the
    end, the module."""

    def __init__(self, parent: Scope | None = None):
        self.vars: dict[str, Any] = {}
        self.parent = parent

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            if isinstance(scope, LiveScope):
                return scope.lookup(name)
            scope = scope.parent
        raise KeyError(name)


class LiveScope(Scope):
    """The names a live function sees besides its locals: its closure cells, then its
    module's globals (builtins are the translator's own short list)."""

    def __init__(self, fn: types.FunctionType):
        super().__init__(None)
        self.fn = fn
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def lookup(self, name: str) -> Any:
        if name in self.vars:
            return self.vars[name]
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell: not assigned yet
                raise KeyError(name) from None
        if name in self.fn.__globals__:
            return self.fn.__globals__[name]
        raise KeyError(name)


class ReturnValue(Exception):
    def __init__(self, value: Any):
        self.value = value


class LoopControl(Exception):
    def __init__(self, kind: str, node: ast.stmt):
        self.kind = kind
        self.node = node


@dataclass
class Frame:
    """One inlined function (or the kernel itself)."""

    name: str
    region_depth: int
    is_kernel: bool
    pypto_function: bool = False
    filename: str = ""


class Evaluator:
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
        self.call_hint = ""
        """Appended to errors that need a Python value the call would have given."""

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

    # ----------------------------------------------------------------------- statements

    def exec_body(self, body: Sequence[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self.exec_stmt(stmt, scope)

    def exec_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        self.current = stmt
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            self.fail(
                stmt, f"`{type(stmt).__name__.lower()}` statements are not supported in kernels"
            )
        outer, self.statement = self.statement, stmt
        try:
            method(stmt, scope)
        finally:
            self.statement = outer

    def stmt_Expr(self, stmt: ast.Expr, scope: Scope) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # docstring
        self.eval(stmt.value, scope)

    def stmt_Pass(self, stmt: ast.Pass, scope: Scope) -> None:
        return

    def stmt_Assign(self, stmt: ast.Assign, scope: Scope) -> None:
        value = self.eval(stmt.value, scope)
        for target in stmt.targets:
            self.assign(target, value, scope, stmt.value)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, scope: Scope) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, scope), scope, stmt.value)

    def stmt_AugAssign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        target = stmt.target
        if not isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
            self.fail(
                target, "augmented assignment is only supported on names, attributes and slices"
            )
        if isinstance(target, ast.Name):
            load: ast.expr = ast.Name(target.id, ast.Load())
        elif isinstance(target, ast.Attribute):
            load = ast.Attribute(target.value, target.attr, ast.Load())
        else:  # `acc[:] += v`: read the slice, compute, write it back
            load = ast.Subscript(target.value, target.slice, ast.Load())
        left = self.eval(ast.copy_location(load, target), scope)
        right = self.eval(stmt.value, scope)
        value = self.binop(_BINOPS[type(stmt.op)], left, right, stmt)
        self.assign(target, value, scope, stmt)

    def assign(self, target: ast.expr, value: Any, scope: Scope, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if is_ssa(value) and value.name_hint is None and not isinstance(value, BlockArgument):
                try:
                    value.name_hint = target.id
                except Exception:  # names xDSL does not accept stay unnamed
                    pass
            scope.vars[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            value = self.resolve(value, node)
            if not isinstance(value, list | tuple):
                self.fail(target, f"cannot unpack {describe(value)}")
            star = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if star:
                i = star[0]
                n_after = len(target.elts) - i - 1
                if len(value) < len(target.elts) - 1:
                    self.fail(target, f"not enough values to unpack (got {len(value)})")
                parts = [
                    *value[:i],
                    list(value[i : len(value) - n_after]),
                    *value[len(value) - n_after :],
                ]
                elts = [e.value if isinstance(e, ast.Starred) else e for e in target.elts]
            else:
                if len(value) != len(target.elts):
                    self.fail(
                        target,
                        f"cannot unpack {len(value)} values into {len(target.elts)} names",
                    )
                parts, elts = list(value), target.elts
            for t, v in zip(elts, parts):
                self.assign(t, v, scope, node)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, value, scope)
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, value, scope)
        else:
            self.fail(target, "unsupported assignment target")

    def assign_attribute(self, target: ast.Attribute, value: Any, scope: Scope) -> None:
        """`self.x = v` / `cfg.attr = v`: Python's setattr at trace time, on the user's
        own objects (as PyPTO's frontend runs it). A tensor stored in an attribute inside
        a pypto.loop or a runtime `if` would leave its region unseen, so there it is an
        error (a name is carried out of the region, an attribute is not)."""
        obj = self.resolve(self.eval(target.value, scope), target.value)
        if is_ssa(obj) or isinstance(
            obj, PyptoRef | TensorSpec | Dynamic | Helper | BoundMethod | types.ModuleType
        ):
            self.fail(target, f"cannot assign the attribute `{target.attr}` of {describe(obj)}")
        if self.region_depth > 0 and _holds_ssa(value):
            self.fail(
                target,
                f"storing {describe(value)} in the attribute `{target.attr}` inside "
                "pypto.loop or a runtime `if` is not supported; assign it to a name",
            )
        try:
            setattr(obj, target.attr, value)
        except Exception as e:  # frozen dataclasses, slots, properties ...
            self.fail(
                target, f"cannot assign the attribute `{target.attr}` of {describe(obj)}: {e}"
            )

    def stmt_Return(self, stmt: ast.Return, scope: Scope) -> None:
        frame = self.frames[-1] if self.frames else None
        if frame is None:
            self.fail(stmt, "`return` outside a function")
        if frame.pypto_function and stmt.value is not None:
            self.fail(
                stmt,
                f"@pypto.frontend.function `{frame.name}` cannot return a value (PyPTO rule); "
                "pass an output tensor and write it with out.move(value) or `out[:] = value`",
            )
        if frame.is_kernel and stmt.value is not None:
            self.fail(
                stmt,
                "a kernel cannot return a value; write results into an output argument "
                "with pypto.assemble or `out[:] = value`",
            )
        if self.region_depth > frame.region_depth:
            self.fail(
                stmt,
                "`return` inside pypto.loop or a runtime `if` is not supported; return after it",
            )
        raise ReturnValue(None if stmt.value is None else self.eval(stmt.value, scope))

    def stmt_Assert(self, stmt: ast.Assert, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if is_ssa(cond):
            self.fail(stmt.test, "assert needs a condition known when the kernel is traced")
        if not cond:
            msg = self.eval(stmt.msg, scope) if stmt.msg is not None else None
            self.fail(stmt, f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    def stmt_FunctionDef(self, stmt: ast.FunctionDef, scope: Scope) -> None:
        self.define_function(stmt, scope)

    def stmt_While(self, stmt: ast.While, scope: Scope) -> None:
        self.fail(stmt, "`while` loops are not supported; use `for ... in pypto.loop(...)`")

    def stmt_Break(self, stmt: ast.Break, scope: Scope) -> None:
        raise LoopControl("break", stmt)

    def stmt_Continue(self, stmt: ast.Continue, scope: Scope) -> None:
        raise LoopControl("continue", stmt)

    def stmt_Import(self, stmt: ast.Import, scope: Scope) -> None:
        self.fail(stmt, "imports inside a kernel are not supported; import at module level")

    stmt_ImportFrom = stmt_Import  # type: ignore[assignment]

    def stmt_With(self, stmt: ast.With, scope: Scope) -> None:
        self.fail(stmt, "`with` blocks are not supported in kernels")

    # --- for

    def stmt_For(self, stmt: ast.For, scope: Scope) -> None:
        if stmt.orelse:
            self.fail(stmt.orelse[0], "`for ... else` is not supported")
        it = stmt.iter
        if isinstance(it, ast.Call):
            callee = self.eval(it.func, scope)
            if isinstance(callee, PyptoRef) and callee.path in (("loop",), ("loop_unroll",)):
                self.pypto_loop(stmt, callee.path[0], scope)
                return
            if callee is range or callee is builtins.range:
                args = [self.resolve(self.eval(a, scope), a) for a in it.args]
                if it.keywords or any(is_ssa(a) for a in args):
                    bad = next((a for a, v in zip(it.args, args) if is_ssa(v)), it)
                    self.fail(
                        bad,
                        "range() is unrolled when the kernel is traced, so its bounds must be "
                        "constants; use pypto.loop(...) for a runtime trip count",
                    )
                try:
                    values: Any = range(*args)
                except TypeError as e:
                    self.fail(it, str(e))
                self.trace_loop(stmt, values, scope)
                return
            if isinstance(callee, PyptoRef):
                self.fail(it, f"cannot iterate over {callee.dotted}(...); use pypto.loop")
        values = self.resolve(self.eval(it, scope), it)
        if is_ssa(values):
            self.fail(it, f"cannot iterate over {describe(values)}; use pypto.loop")
        try:
            values = list(values)
        except TypeError:
            self.fail(it, f"cannot iterate over {describe(values)}")
        self.trace_loop(stmt, values, scope)

    def trace_step(self, node: ast.AST) -> None:
        """One iteration of a translation-time Python loop, within `MAX_TRACE_STEPS`."""
        self.trace_steps += 1
        if self.trace_steps > MAX_TRACE_STEPS:
            self.fail(
                node,
                f"translation-time Python loops ran more than {MAX_TRACE_STEPS} iterations "
                "while reading this kernel (tileir's limit): `range` / list loops run when the "
                "kernel is traced; use pypto.loop(...) for a large trip count",
            )

    def trace_loop(self, stmt: ast.For, values: Any, scope: Scope) -> None:
        for v in values:
            self.trace_step(stmt)
            self.assign(stmt.target, v, scope, stmt.iter)
            try:
                self.exec_body(stmt.body, scope)
            except LoopControl as c:
                if c.kind == "break":
                    break

    # --- if

    def stmt_If(self, stmt: ast.If, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if is_tile(cond) or is_mem(cond):
            self.fail(stmt.test, f"`if` on {describe(cond)} is not supported")
        if is_index(cond):
            zero = self.index(0, stmt.test)
            cond = self.emit(arith.CmpiOp(cond, zero, "ne"), stmt.test).results[0]
        if not is_cond(cond):
            try:
                taken = bool(cond)
            except Exception:
                self.fail(stmt.test, f"cannot use {describe(cond)} as a condition")
            self.exec_body(stmt.body if taken else stmt.orelse, scope)
            return
        self.runtime_if(stmt, cond, scope)

    # ----------------------------------------------------------------------- expressions

    def eval(self, node: ast.expr, scope: Scope) -> Any:
        self.current = node
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            self.fail(node, f"{type(node).__name__} expressions are not supported")
        return method(node, scope)

    def expr_Constant(self, node: ast.Constant, scope: Scope) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name, scope: Scope) -> Any:
        try:
            value = scope.lookup(node.id)
        except KeyError:
            if node.id in _SAFE_BUILTINS:
                return getattr(builtins, node.id)
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            if hasattr(builtins, node.id):
                self.fail(node, f"the builtin `{node.id}` is not supported in kernels")
            self.fail(node, f"name `{node.id}` is not defined")
        if isinstance(value, Poison):
            self.fail(node, value.reason)
        return self.live(value)

    def expr_List(self, node: ast.List, scope: Scope) -> list[Any]:
        return self.eval_elts(node.elts, scope)

    def expr_Tuple(self, node: ast.Tuple, scope: Scope) -> tuple[Any, ...]:
        return tuple(self.eval_elts(node.elts, scope))

    def expr_Set(self, node: ast.Set, scope: Scope) -> set[Any]:
        """`{8, 4, 2, 1}`: a set of Python constants (`unroll_list` takes one)."""
        values = self.eval_elts(node.elts, scope)
        for v in values:
            if is_ssa(v) or isinstance(v, Dynamic):
                self.fail(node, f"a set holds Python constants, got {describe(v)}")
        try:
            return set(values)
        except TypeError as e:
            self.fail(node, f"cannot build a set: {e}")

    def eval_elts(self, elts: Sequence[ast.expr], scope: Scope) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.resolve(self.eval(e.value, scope), e)
                if is_ssa(v) or not isinstance(v, list | tuple | range | str):
                    self.fail(e, f"cannot unpack {describe(v)} with *")
                out.extend(v)
            else:
                out.append(self.eval(e, scope))
        return out

    def expr_Dict(self, node: ast.Dict, scope: Scope) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                d = self.eval(v, scope)
                if not isinstance(d, dict):
                    self.fail(v, "** in a dict literal needs a dict")
                out.update(d)
            else:
                key = self.eval(k, scope)
                try:
                    out[key] = self.eval(v, scope)
                except TypeError as e:
                    self.fail(k, f"{describe(key)} cannot be a dict key ({e})")
        return out

    def expr_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> str:
        parts: list[str] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                x = self.resolve(self.eval(v.value, scope), v)
                if is_ssa(x):
                    self.fail(v, f"cannot format {describe(x)} into a string")
                spec = self.eval(v.format_spec, scope) if v.format_spec is not None else ""
                if v.conversion == ord("r"):
                    x = repr(x)
                elif v.conversion == ord("s"):
                    x = str(x)
                parts.append(format(x, spec))
        return "".join(parts)

    def expr_IfExp(self, node: ast.IfExp, scope: Scope) -> Any:
        cond = self.resolve(self.eval(node.test, scope), node.test)
        if is_ssa(cond):
            self.fail(node.test, "a conditional expression needs a condition known at trace time")
        return self.eval(node.body if cond else node.orelse, scope)

    def expr_ListComp(self, node: ast.ListComp, scope: Scope) -> list[Any]:
        if len(node.generators) != 1 or node.generators[0].is_async:
            self.fail(node, "only list comprehensions with one `for` are supported")
        gen = node.generators[0]
        it = self.resolve(self.eval(gen.iter, scope), gen.iter)
        if is_ssa(it):
            self.fail(gen.iter, f"cannot iterate over {describe(it)}")
        inner = Scope(scope)
        out: list[Any] = []
        for v in it:
            self.trace_step(node)
            self.assign(gen.target, v, inner, gen.iter)
            if all(self.resolve(self.eval(c, inner), c) for c in gen.ifs):
                out.append(self.eval(node.elt, inner))
        return out

    def expr_Lambda(self, node: ast.Lambda, scope: Scope) -> Helper:
        helper = Helper(_lambda_def(node), scope, self.filename)
        helper.defaults = [self.eval(d, scope) for d in node.args.defaults]
        return helper

    def expr_Starred(self, node: ast.Starred, scope: Scope) -> Any:
        self.fail(node, "* is only supported in calls and list literals")

    def expr_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        return self.attribute(base, node.attr, node)

    def pypto_attr(self, ref: PyptoRef, node: ast.AST) -> Any:
        """`pypto.DT_BF16` and `pypto.DataType.DT_BF16` are element types; any other
        name inside pypto stays a name until it is called or used."""
        last = ref.path[-1] if ref.path else ""
        if last.startswith("DT_") and (len(ref.path) == 1 or ref.path[-2] == "DataType"):
            if last not in dtypes.BY_PYPTO:
                known = ", ".join(f"pypto.{t.pypto}" for t in dtypes.ELEMENT_TYPES)
                self.fail(node, f"pypto.{last} has no tileir element type (supported: {known})")
            return dtypes.BY_PYPTO[last]
        return pypto_name(ref.path)

    def attribute(self, base: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(base, PyptoRef):
            return self.pypto_attr(PyptoRef((*base.path, attr)), node)
        if is_index(base) and attr in ("min", "max"):
            # `(S - i * T).min(T)`: PyPTO's SymbolicScalar methods
            return BoundMethod(base, attr)
        if is_tile(base) or is_mem(base):
            if attr == "shape":
                return self.shape_of(base, node)
            if attr == "valid_shape":
                return self.valid_shape_of(base, node)
            if attr == "dtype":
                return dtypes.element_type(element_of(base.type))
            if attr == "dim":
                # An int in newer PyPTO (`rank = x.dim`), a method in 0.2.0 (`x.dim()`).
                return _Rank(len(static_shape(base.type)))
            if attr in bindings.BY_PYPTO or attr in COMPOSITES or attr in _METHODS:
                return BoundMethod(base, attr)
            self.fail(node, f"tensors have no supported attribute `{attr}`")
        if isinstance(base, dtypes.ElementType):
            if attr == "name":
                return base.pypto
            self.fail(node, f"data types have no attribute `{attr}`")
        if isinstance(base, Poison):
            self.fail(node, base.reason)
        if is_ssa(base) or isinstance(base, Helper | BoundMethod | TensorSpec | Dynamic):
            self.fail(node, f"{describe(base)} has no supported attribute `{attr}`")
        if attr.startswith("__"):
            self.fail(node, f"the attribute `{attr}` is not supported in kernels")
        # Any other Python object (a config object, a NamedTuple, a module, a list):
        # its attribute, as Python reads it at trace time.
        try:
            return self.live(getattr(base, attr))
        except AttributeError:
            self.fail(node, f"{describe(base)} has no attribute `{attr}`")
        except Exception as e:
            self.fail(node, f"reading `{attr}` of {describe(base)} raised {type(e).__name__}: {e}")

    def expr_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        if is_tile(base) or is_mem(base):
            return self.tensor_subscript(base, node, scope)
        key = self.eval(node.slice, scope)
        key = self.resolve(key, node.slice)
        if is_ssa(key):
            self.fail(node.slice, f"cannot index a Python value with {describe(key)}")
        if not isinstance(base, list | tuple | dict | str | range):
            self.fail(node, f"cannot index {describe(base)}")
        try:
            return base[key]
        except (TypeError, IndexError, KeyError) as e:
            self.fail(node, f"cannot index {describe(base)} with {describe(key)} ({e})")

    def expr_Slice(self, node: ast.Slice, scope: Scope) -> slice:
        parts = [
            None if p is None else self.resolve(self.eval(p, scope), p)
            for p in (node.lower, node.upper, node.step)
        ]
        if any(is_ssa(p) for p in parts):
            self.fail(node, "slices of Python lists need constant bounds")
        return slice(*parts)

    def expr_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        values = [self.resolve(self.eval(v, scope), v) for v in node.values]
        if not any(is_ssa(v) for v in values):
            if isinstance(node.op, ast.And):
                result = values[0]
                for v in values:
                    result = v
                    if not v:
                        break
                return result
            result = values[0]
            for v in values:
                result = v
                if v:
                    break
            return result
        conds = [self.cond(v, n) for v, n in zip(values, node.values)]
        op_cls = arith.AndIOp if isinstance(node.op, ast.And) else arith.OrIOp
        acc = conds[0]
        for c in conds[1:]:
            acc = self.emit(op_cls(acc, c), node).results[0]
        return acc

    def cond(self, v: Any, node: ast.AST) -> SSAValue:
        if is_cond(v):
            return v
        if isinstance(v, bool | int):
            return self.emit(arith.ConstantOp(IntegerAttr(int(bool(v)), i1)), node).results[0]
        self.fail(node, f"expected a condition, got {describe(v)}")

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        v = self.resolve(self.eval(node.operand, scope), node.operand)
        if isinstance(node.op, ast.Not):
            if is_ssa(v):
                c = self.cond(v, node)
                true = self.cond(True, node)
                return self.emit(arith.XOrIOp(c, true), node).results[0]
            return not v
        if isinstance(node.op, ast.USub):
            if is_tile(v) or is_mem(v):
                return self.emit(pto.NegOp(self.tile(v, node)), node).results[0]
            if is_index(v):
                return self.binop("-", 0, v, node)
            if not isinstance(v, int | float):
                self.fail(node, f"unary - is not supported on {describe(v)}")
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(v, int):
            self.fail(node, f"unary ~ is not supported on {describe(v)}")
        return ~v

    def py_op(self, fn: Callable[..., Any], *args: Any, node: ast.AST) -> Any:
        try:
            return fn(*args)
        except Exception as e:
            self.fail(node, f"{type(e).__name__}: {e}")

    def expr_BinOp(self, node: ast.BinOp, scope: Scope) -> Any:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return self.binop(_BINOPS[type(node.op)], left, right, node)

    def binop(self, sym: str, left: Any, right: Any, node: ast.AST) -> Any:
        left, right = self.resolve(left, node), self.resolve(right, node)
        if sym == "@" and all(is_tile(v) or is_mem(v) for v in (left, right)):
            return self.matmul_operator(left, right, node)
        if any(is_tile(v) or is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"operator {sym} is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if is_index(left) or is_index(right):
            op_cls = index_ops.BY_OPERATOR.get(sym)
            if op_cls is None:
                hint = " (use // for index division)" if sym == "/" else ""
                self.fail(node, f"operator {sym} is not supported on runtime index values{hint}")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(op_cls(a, b), node).results[0]
        if is_ssa(left) or is_ssa(right):
            self.fail(
                node, f"operator {sym} is not supported on {describe(left)} and {describe(right)}"
            )
        try:
            return _PY_BINOPS[sym](left, right)
        except TypeError:
            self.fail(
                node, f"operator {sym} is not supported on {describe(left)} and {describe(right)}"
            )
        except Exception as e:
            self.fail(node, f"{type(e).__name__}: {e}")

    def matmul_operator(self, left: SSAValue, right: SSAValue, node: ast.AST) -> Any:
        """`a @ b`: PyPTO 0.2.0's `Tensor.__matmul__` is `pypto.matmul(a, b, out_dtype)`
        with `out_dtype` the dtype of `b` for FP16 / BF16 / FP32 and INT32 for INT8
        (other dtypes: its RuntimeError, here a located error)."""
        elem = dtypes.element_type(self.tile(right, node).type.get_element_type())
        if elem.pypto not in ("DT_FP16", "DT_BF16", "DT_FP32", "DT_INT8"):
            self.fail(node, f"`@` is not supported on a {elem.pypto} right operand (PyPTO's)")
        out = dtypes.BY_PYPTO["DT_INT32" if elem.pypto == "DT_INT8" else elem.pypto]
        args = {"input": left, "mat2": right, "out_dtype": out}
        extra = {"a_trans": False, "b_trans": False, "c_matrix_nz": False, "extend_params": None}
        return bindings.BY_PYPTO["matmul"].read(self, {**args, **extra}, node)

    def expr_Compare(self, node: ast.Compare, scope: Scope) -> Any:
        left = self.resolve(self.eval(node.left, scope), node.left)
        rights = [self.resolve(self.eval(c, scope), c) for c in node.comparators]
        results: list[Any] = []
        for op, right in zip(node.ops, rights):
            sym = _CMPOPS[type(op)]
            results.append(self.compare(sym, left, right, node))
            left = right
        if len(results) == 1:
            return results[0]
        if not any(is_ssa(r) for r in results):
            return all(results)
        acc = self.cond(results[0], node)
        for r in results[1:]:
            acc = self.emit(arith.AndIOp(acc, self.cond(r, node)), node).results[0]
        return acc

    def compare(self, sym: str, left: Any, right: Any, node: ast.AST) -> Any:
        if sym in ("is", "is not"):  # identity, as Python: `gamma is not None` on a tensor
            return _PY_CMPOPS[sym](left, right)
        if any(is_tile(v) or is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"`{sym}` is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if is_index(left) or is_index(right):
            if sym not in index_ops.COMPARISONS:
                self.fail(node, f"`{sym}` is not supported on runtime index values")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(arith.CmpiOp(a, b, index_ops.COMPARISONS[sym]), node).results[0]
        if is_ssa(left) or is_ssa(right):
            self.fail(node, f"`{sym}` is not supported on {describe(left)} and {describe(right)}")
        try:
            return _PY_CMPOPS[sym](left, right)
        except TypeError:
            self.fail(node, f"`{sym}` is not supported on {describe(left)} and {describe(right)}")

    # --- calls

    def eval_args(self, node: ast.Call, scope: Scope) -> tuple[list[Any], dict[str, Any]]:
        args = self.eval_elts(node.args, scope)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                d = self.resolve(self.eval(kw.value, scope), kw.value)
                if not isinstance(d, dict):
                    self.fail(kw.value, "** needs a dict")
                kwargs.update(d)
            else:
                kwargs[kw.arg] = self.eval(kw.value, scope)
        return args, kwargs

    def expr_Call(self, node: ast.Call, scope: Scope) -> Any:
        callee = self.resolve(self.eval(node.func, scope), node.func)
        args, kwargs = self.eval_args(node, scope)
        outer, self.call_scope = self.call_scope, scope
        try:
            return self.call(callee, args, kwargs, node)
        finally:
            self.call_scope = outer

    def call(self, callee: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(callee, PyptoRef):
            return self.call_pypto(callee, args, kwargs, node)
        if isinstance(callee, BoundMethod):
            return self.call_method(callee, args, kwargs, node)
        if isinstance(callee, Helper):
            return self.inline(callee, args, kwargs, node)
        if isinstance(callee, JitKernel):
            self.fail(
                node, f"calling the kernel `{callee.fn.__name__}` from a kernel is not supported"
            )
        if isinstance(callee, type) and not callee.__module__ == "builtins":
            # A user class (a NamedTuple, a dataclass): Python builds it, and it may hold
            # tiles and index values as any Python object does.
            try:
                return callee(*[self.resolve(a, node) for a in args], **kwargs)
            except Exception as e:
                self.fail(node, f"{callee.__name__}() raised {type(e).__name__}: {e}")
        if callee in (min, max, builtins.min, builtins.max) and any(
            is_index(self.resolve(a, node)) or isinstance(a, Dynamic) for a in args
        ):
            return self.scalar_func(callee.__name__, args, kwargs, node)
        if callable(callee) and not is_ssa(callee):
            resolved = [self.resolve(a, node) for a in args]
            if any(is_ssa(a) for a in resolved) and callee is not len and not _stores_only(callee):
                name = getattr(callee, "__name__", "this function")
                where = getattr(callee, "__module__", None) or "builtins"
                what = describe(next(a for a in resolved if is_ssa(a)))
                if where == "builtins":
                    self.fail(node, f"{name}() cannot take {what}")
                self.fail(
                    node,
                    f"{where}.{name}() is library code: it runs as Python when the kernel "
                    f"is traced and cannot take {what}",
                )
            if callee is len and any(is_tile(a) or is_mem(a) for a in resolved):
                self.fail(node, "len() of a tensor is not supported; use len(x.shape)")
            try:
                return callee(*resolved, **kwargs)
            except (TypeError, ValueError) as e:
                name = getattr(callee, "__name__", "the function")
                given = ", ".join(describe(a) for a in resolved)
                self.fail(node, f"{name}() cannot take {given or 'these arguments'}: {e}")
            except Exception as e:
                self.fail(node, f"{type(e).__name__}: {e}")
        self.fail(node, f"{describe(callee)} is not callable")

    def bind(
        self,
        sig_fn: Callable[..., None],
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.AST,
        name: str,
    ) -> dict[str, Any]:
        sig = inspect.signature(sig_fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            params = ", ".join(str(p) for p in sig.parameters.values())
            self.fail(node, f"wrong arguments to {name}({params}): {e}")
        bound.apply_defaults()
        return dict(bound.arguments)

    def inline(
        self, helper: Helper, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        fn = helper.node
        if len(self.frames) > MAX_INLINE_DEPTH:
            self.fail(node, f"helper calls nest deeper than {MAX_INLINE_DEPTH} (recursion?)")
        a = fn.args
        params: list[inspect.Parameter] = []
        positional = [*a.posonlyargs, *a.args]
        n_nodef = len(positional) - len(helper.defaults)
        for i, p in enumerate(positional):
            kind = (
                inspect.Parameter.POSITIONAL_ONLY
                if i < len(a.posonlyargs)
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            default = helper.defaults[i - n_nodef] if i >= n_nodef else inspect.Parameter.empty
            params.append(inspect.Parameter(p.arg, kind, default=default))
        if a.vararg:
            params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
        for p in a.kwonlyargs:
            params.append(
                inspect.Parameter(
                    p.arg,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=helper.kw_defaults.get(p.arg, inspect.Parameter.empty),
                )
            )
        if a.kwarg:
            params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
        sig = inspect.Signature(params)
        try:
            bound = sig.bind(*helper.bound, *args, **kwargs)
        except TypeError as e:
            self.fail(node, f"wrong arguments to {fn.name}(): {e}")
        bound.apply_defaults()
        scope = Scope(helper.closure)
        for k, v in bound.arguments.items():
            scope.vars[k] = (
                list(v) if isinstance(v, tuple) and a.vararg and k == a.vararg.arg else v
            )
        if helper.pypto_function:
            given = len(args) + len(kwargs)
            expected = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            if given != expected or a.vararg or a.kwarg:
                self.fail(
                    node,
                    f"@pypto.frontend.function `{fn.name}` takes exactly {expected} arguments "
                    f"(PyPTO applies no defaults), got {given}",
                )
        self.frames.append(
            Frame(fn.name, self.region_depth, False, helper.pypto_function, helper.filename)
        )
        try:
            self.exec_body(fn.body, scope)
        except ReturnValue as r:
            return r.value
        except LoopControl as c:
            self.fail(c.node, f"`{c.kind}` outside a loop")
        finally:
            self.frames.pop()
        return None

    def call_method(
        self, m: BoundMethod, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        if is_index(m.receiver):
            return self.scalar_func(m.name, [m.receiver, *args], kwargs, node)
        if m.name == "set_cache_policy":
            self.set_cache_policy(m.receiver, args, kwargs, node)
            return None
        if m.name == "move":
            bound = self.bind(lambda other: None, args, kwargs, node, "Tensor.move")
            if not is_mem(m.receiver):
                self.fail(node, "Tensor.move needs a tensor in memory as its receiver")
            src = self.tile(bound["other"], node)
            self.emit(
                pto.AssembleOp(src, m.receiver, [0] * len(static_shape(m.receiver.type))), node
            )
            return None
        # `f = y.f_; f(x)`: no receiver expression; the name `f` holds no tile, so an
        # in-place update through it is a located error rather than a silent copy
        self.method_receiver = (
            node.func.value if isinstance(node.func, ast.Attribute) else node.func
        )
        return self.call_pypto(PyptoRef((m.name,)), [m.receiver, *args], kwargs, node)

    def scalar_func(
        self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        bound = self.bind(_sig_scalar2, args, kwargs, node, f"pypto.{name}")
        a, b = self.resolve(bound["a"], node), self.resolve(bound["b"], node)
        if not is_ssa(a) and not is_ssa(b):
            if name == "ceildiv":
                return self.py_op(lambda: -(-a // b), node=node)
            return self.py_op(
                lambda: builtins.min(a, b) if name == "min" else builtins.max(a, b), node=node
            )
        op_cls = index_ops.BY_FUNCTION[name]
        return self.emit(op_cls(self.index(a, node), self.index(b, node)), node).results[0]


_METHODS = ("move", "set_cache_policy")
"""Tensor methods that are not PyPTO functions of the same name."""


class _Rank(int):
    """`x.dim`: the rank, usable as an int and callable as `x.dim()`."""

    def __call__(self) -> int:
        return int(self)


class Missing:
    pass


MISSING = Missing()


def _lambda_def(node: ast.Lambda) -> ast.FunctionDef:
    """A `lambda` as the `def` it stands for."""
    fn = ast.FunctionDef(
        name="<lambda>",
        args=node.args,
        body=[ast.copy_location(ast.Return(node.body), node.body)],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    return ast.copy_location(fn, node)
