"""Builds `pto` IR from the AST of a PyPTO kernel file.

The translator is a small tracing interpreter, as PyPTO's own frontend is: it walks the
kernel's AST, runs the Python parts (constants, list arithmetic, `range` loops, `if`
on constants, helper calls) and emits IR through xDSL's `Builder` for the parts PyPTO
records (tensor ops, `pypto.loop`, `if` on loop state, index arithmetic on loop
indices). It has no op semantics of its own: a `pypto.<name>` call is read by that
function's binding (`tileir.bindings`), which gives the result its type from
`tileir.dialect.shapes` (the verifiers' rules); this module is the reading kit the
bindings use (`tile`, `const_int`, `mixed`, `dtype`, `emit`, `fail` ...).

Module-level code is evaluated in order with the same interpreter but without a
builder, so only Python values come out of it; whatever it cannot evaluate (`import
torch`, `os.environ[...]`, classes) becomes a `Poison` that is an error only where a
kernel uses it.

Where PyPTO's tracing and tileir's IR differ, the frontend bridges:

- a `pypto.loop` body is one region, so a value computed in it cannot be used after
  it (state goes through `pypto.tensor` workspaces, as in PyPTO);
- `if` on loop state becomes `scf.if`, whose results are the tiles assigned in both
  branches;
- PyPTO traces a `pypto.loop_unroll` body once per factor with the chunk length a
  Python int; tileir traces it once with the length an index value, and only when
  that fails (the body needs the length as an int) once per factor under
  `scf.if %n == factor`;
- a kernel argument or workspace used as a tile is read whole with a `pto.view`.

Every op gets a `FileLineColLoc` of the source expression it came from, and every
problem is a `TileirError` `file:line:col: error: ...` pointing into the kernel file.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import operator
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from frontends.pypto.limits import MAX_EXPRESSION_DEPTH, too_deep
from frontends.pypto.values import (
    BoundMethod,
    Dynamic,
    Helper,
    KernelDef,
    Poison,
    PyptoRef,
    SafeModule,
    TensorSpec,
)
from tileir import bindings
from tileir.bindings import index as index_ops
from tileir.bindings.elementwise import elementwise
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes, pto, shapes

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

JIT = ("frontend", "jit")
FUNCTION = ("frontend", "function")


# --------------------------------------------------------------------------- signatures
# The calls that are not PyPTO functions with a binding bind against these stubs, so
# that a wrong call gets Python's own message ("missing a required argument").


def _sig_tensor_spec(shape, dtype=None, name=""): ...
def _sig_scalar2(a, b): ...
def _sig_cond(scalar, file=None, lineno=None): ...
def _sig_dynamic(name): ...
def _sig_loop(*args, name=None, idx_name=None, unroll_list=None, submit_before_loop=False): ...


_SCALAR_FUNCS = frozenset({"min", "max", "ceildiv"})
"""`pypto.min(a, b)` and friends: Python ints fold, index values become arith ops."""


# --------------------------------------------------------------------------- scopes


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
            scope = scope.parent
        raise KeyError(name)


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


class _LoopControl(Exception):
    def __init__(self, kind: str, node: ast.stmt):
        self.kind = kind
        self.node = node


@dataclass
class _Frame:
    """One inlined function (or the kernel itself)."""

    name: str
    region_depth: int
    is_kernel: bool
    pypto_function: bool = False


def _is_ssa(v: Any) -> bool:
    return isinstance(v, SSAValue)


def _is_tile(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, TensorType)


def _is_mem(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, MemRefType)


def _is_index(v: Any) -> bool:
    return isinstance(v, SSAValue) and isinstance(v.type, IndexType)


def _is_cond(v: Any) -> bool:
    return isinstance(v, SSAValue) and v.type == i1


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float)  # bools included


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def _elem(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType | MemRefType)
    return t.get_element_type()


def describe(v: Any) -> str:
    """A value as a user would call it in an error message."""
    if _is_tile(v):
        return f"a tile of shape {shapes.fmt(_shape(v.type))} {_elem(v.type)}"
    if _is_mem(v):
        return f"a tensor in memory of shape {shapes.fmt(_shape(v.type))} {_elem(v.type)}"
    if _is_index(v):
        return "a runtime index value"
    if _is_cond(v):
        return "a runtime condition"
    if isinstance(v, dtypes.ElementType):
        return f"pypto.{v.pypto}"
    if isinstance(v, PyptoRef):
        return v.dotted
    if isinstance(v, Helper):
        return f"function {v.node.name}()"
    if v is None:
        return "None"
    if isinstance(v, str):
        return f"the string {v!r}"
    if isinstance(v, list | tuple):
        return f"{type(v).__name__} {_short(v)}"
    if isinstance(v, int | float | bool | dict | range):
        return f"{type(v).__name__} {v!r}"
    return _short(v)


def _short(v: Any) -> str:
    """A value inside a container, in source-like spelling."""
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_short(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if _is_tile(v):
        return f"<tile {shapes.fmt(_shape(v.type))} {_elem(v.type)}>"
    if _is_mem(v):
        return f"<tensor {shapes.fmt(_shape(v.type))} {_elem(v.type)}>"
    if _is_index(v):
        return "<index>"
    if _is_cond(v):
        return "<condition>"
    if isinstance(v, dtypes.ElementType):
        return f"pypto.{v.pypto}"
    if isinstance(v, PyptoRef):
        return v.dotted
    if isinstance(v, TensorSpec):
        return f"pypto.Tensor({_short(list(v.shape))}, pypto.{v.dtype.pypto})"
    if isinstance(v, Dynamic):
        return f"pypto.frontend.dynamic({v.name!r})"
    if isinstance(v, Helper | KernelDef):
        return f"{v.node.name}()"
    if isinstance(v, BoundMethod):
        return f"<tensor method {v.name}>"
    if isinstance(v, SafeModule):
        return v.name
    if isinstance(v, int | float | bool | str | type(None) | dict | range):
        return repr(v)
    return f"<{type(v).__name__}>"


class Translator:
    """Evaluates one file: its module-level code, then each kernel into a `pto.kernel`."""

    def __init__(self, source: str, filename: str):
        self.source = source
        self.filename = filename
        self.lines = source.splitlines()
        self.builder: Builder | None = None
        self.frames: list[_Frame] = []
        self.region_depth = 0
        self.module_scope = Scope()
        self.kernels: list[KernelDef] = []
        # per kernel
        self.dyn_values: dict[str, SSAValue] = {}
        self.dyn_sources: dict[str, tuple[SSAValue, int]] = {}
        self.entry_block: Block | None = None
        self.entry_last: Operation | None = None
        self.workspace_count = 0
        self.open_blocks: list[Block] = []
        self.current: ast.AST | None = None
        """The node being translated, for the location of an unexpected failure."""
        self.index_constants: dict[tuple[int, int], SSAValue] = {}

    # ----------------------------------------------------------------------- errors

    def loc(self, node: ast.AST) -> FileLineColLoc:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        return FileLineColLoc(StringAttr(self.filename), IntAttr(line), IntAttr(col))

    def error(self, node: ast.AST | None, message: str) -> TileirError:
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

    # ----------------------------------------------------------------------- module

    def run_module(self, tree: ast.Module) -> None:
        self.module_scope.vars.update({"__name__": "__tileir__", "__file__": self.filename})
        self.exec_module_body(tree.body)

    def exec_module_body(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.exec_module_stmt(stmt)

    def _poison_bound(self, stmt: ast.AST, reason: str) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.module_scope.vars[node.id] = Poison(reason.replace("{name}", node.id))
            elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                self.module_scope.vars[node.name] = Poison(reason.replace("{name}", node.name))
            elif isinstance(node, ast.alias):
                name = (node.asname or node.name).split(".")[0]
                self.module_scope.vars[name] = Poison(reason.replace("{name}", name))

    def exec_module_stmt(self, stmt: ast.stmt) -> None:
        scope = self.module_scope
        line = stmt.lineno
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            self.bind_import(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            self.define_function(stmt, scope, module_level=True)
        elif isinstance(stmt, ast.ClassDef):
            scope.vars[stmt.name] = Poison(
                f"`{stmt.name}` is a class (line {line}); the frontend does not evaluate "
                "classes, so kernels cannot use it"
            )
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                return
            try:
                self.exec_stmt(stmt, scope)
            except TileirError as e:
                first = str(e).splitlines()[0]
                msg = first.split(" error: ", 1)[-1]
                self._poison_bound(
                    stmt,
                    "`{name}` is assigned at module level (line "
                    + str(line)
                    + f") by code the frontend cannot evaluate: {msg}",
                )
        elif isinstance(stmt, ast.If):
            if self._is_main_guard(stmt.test):
                return
            try:
                cond = self.eval(stmt.test, scope)
                if isinstance(cond, Poison) or _is_ssa(cond):
                    raise self.error(stmt.test, "not a constant")
                branch = stmt.body if cond else stmt.orelse
            except TileirError:
                self._poison_bound(
                    stmt,
                    "`{name}` is assigned under a module-level `if` (line "
                    + str(line)
                    + ") whose condition the frontend cannot evaluate",
                )
                return
            self.exec_module_body(branch)
        elif isinstance(stmt, ast.Expr | ast.Pass | ast.Assert):
            return
        else:
            self._poison_bound(
                stmt,
                "`{name}` is bound by a module-level `"
                + type(stmt).__name__.lower()
                + f"` statement (line {line}), which the frontend does not evaluate",
            )

    @staticmethod
    def _is_main_guard(test: ast.expr) -> bool:
        return (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
        )

    def bind_import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        scope = self.module_scope
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                top = alias.name.split(".")[0]
                bound = alias.asname or top
                if top == "pypto":
                    path = tuple(alias.name.split(".")[1:]) if alias.asname else ()
                    scope.vars[bound] = PyptoRef(path)
                elif alias.name == "math":
                    scope.vars[bound] = SafeModule("math", math)
                else:
                    scope.vars[bound] = Poison(
                        f"`{bound}` is the module `{alias.name}` (imported at line "
                        f"{stmt.lineno}); the frontend does not run imports other than "
                        "pypto and math, so kernels cannot use it"
                    )
            return
        module = stmt.module or ""
        top = module.split(".")[0]
        for alias in stmt.names:
            bound = alias.asname or alias.name
            if top == "pypto" and stmt.level == 0:
                scope.vars[bound] = self.pypto_attr(
                    PyptoRef((*module.split(".")[1:], alias.name)), None
                )
            elif module == "math" and alias.name != "*":
                if hasattr(math, alias.name):
                    scope.vars[bound] = getattr(math, alias.name)
            elif module == "__future__":
                continue
            else:
                scope.vars[bound] = Poison(
                    f"`{bound}` is imported from `{'.' * stmt.level}{module}` (line "
                    f"{stmt.lineno}); the frontend does not run imports other than "
                    "pypto and math, so kernels cannot use it"
                )

    def define_function(self, node: ast.FunctionDef, scope: Scope, module_level: bool) -> None:
        kind = "helper"
        pypto_function = False
        jit_decorator: ast.expr | None = None
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            try:
                ref = self.eval(target, scope)
            except TileirError:
                ref = None
            if isinstance(ref, PyptoRef) and ref.path == JIT:
                kind = "kernel"
                jit_decorator = dec
            elif isinstance(ref, PyptoRef) and ref.path == FUNCTION:
                pypto_function = True
            elif kind != "kernel":
                kind = "decorated"
        if kind == "kernel":
            if not module_level:
                self.fail(node, "a @pypto.frontend.jit kernel must be defined at module level")
            assert jit_decorator is not None
            kdef = KernelDef(node, jit_decorator)
            self.kernels.append(kdef)
            scope.vars[node.name] = kdef
            return
        if kind == "decorated":
            scope.vars[node.name] = Poison(
                f"`{node.name}` (line {node.lineno}) has a decorator the frontend does not "
                "know; only plain functions and @pypto.frontend.function helpers can be inlined"
            )
            return
        if module_level and node.name in bindings.HELPER_OPS:
            # The PyPTO emitter's stand-in for an op PyPTO 0.2.0 lacks: read as the op.
            scope.vars[node.name] = PyptoRef((bindings.HELPER_OPS[node.name],))
            return
        helper = Helper(node, scope, self.filename, pypto_function=pypto_function)
        args = node.args
        try:
            helper.defaults = [self.eval(d, scope) for d in args.defaults]
            helper.kw_defaults = {
                a.arg: self.eval(d, scope)
                for a, d in zip(args.kwonlyargs, args.kw_defaults)
                if d is not None
            }
        except TileirError as e:
            if not module_level:
                raise
            scope.vars[node.name] = Poison(
                f"`{node.name}` (line {node.lineno}) has a default argument the frontend "
                f"cannot evaluate: {str(e).splitlines()[0].split(' error: ', 1)[-1]}"
            )
            return
        scope.vars[node.name] = helper

    # ----------------------------------------------------------------------- kernels

    def build_module(self) -> ModuleOp:
        if not self.kernels:
            self.fail(None, "no @pypto.frontend.jit kernel in this file")
        return ModuleOp([self.build_kernel(k) for k in self.kernels])

    def jit_options(self, kdef: KernelDef) -> DictionaryAttr | None:
        dec = kdef.decorator
        if not isinstance(dec, ast.Call):
            return None
        if dec.args:
            self.fail(dec.args[0], "pypto.frontend.jit takes its options as keyword arguments")
        options: dict[str, Attribute] = {}
        for kw in dec.keywords:
            if kw.arg is None:
                self.fail(kw.value, "**options in @pypto.frontend.jit is not supported")
            value = self.eval(kw.value, self.module_scope)
            options[kw.arg] = self.to_attr(value, kw.value)
        return DictionaryAttr(options) if options else None

    def to_attr(self, value: Any, node: ast.AST) -> Attribute:
        """A Python option value as an attribute; enum members keep their dotted name."""
        if isinstance(value, bool):
            return BoolAttr.from_bool(value)
        if isinstance(value, int):
            return IntegerAttr(value, i64)
        if isinstance(value, float):
            return FloatAttr(value, f64)
        if isinstance(value, str):
            return StringAttr(value)
        if isinstance(value, PyptoRef):
            return StringAttr(value.dotted)
        if isinstance(value, dtypes.ElementType):
            return StringAttr(f"pypto.{value.pypto}")
        if value is None:
            return UnitAttr()
        if isinstance(value, list | tuple):
            return ArrayAttr([self.to_attr(v, node) for v in value])
        if isinstance(value, dict):
            return DictionaryAttr({str(k): self.to_attr(v, node) for k, v in value.items()})
        if isinstance(value, Poison):
            self.fail(node, value.reason)
        self.fail(node, f"jit option value {describe(value)} cannot be kept as an attribute")

    def build_kernel(self, kdef: KernelDef) -> pto.KernelOp:
        node = kdef.node
        self.dyn_values = {}
        self.dyn_sources = {}
        self.workspace_count = 0
        options = self.jit_options(kdef)
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            bad = a.vararg or a.kwarg or a.kwonlyargs[0]
            self.fail(bad, "kernel arguments must be plain positional tensors")
        args: list[tuple[str, MemRefType]] = []
        dyn_names: dict[str, list[str]] = {}
        positional = [*a.posonlyargs, *a.args]
        first_default = len(positional) - len(a.defaults)
        constants: dict[str, Any] = {}
        for n, arg in enumerate(positional):
            if arg.annotation is None:
                self.fail(
                    arg,
                    f"kernel argument `{arg.arg}` needs a pypto.Tensor(shape, dtype) annotation",
                )
            spec = self.eval(arg.annotation, self.module_scope)
            if spec in (int, float, bool, str):
                # A scalar parameter: tileir builds the kernel for its default value, as
                # PyPTO specialises a kernel on the scalars of a call.
                if n < first_default:
                    self.fail(
                        arg,
                        f"scalar kernel parameter `{arg.arg}` needs a default value: tileir "
                        "builds the kernel for known scalars",
                    )
                constants[arg.arg] = self.eval(a.defaults[n - first_default], self.module_scope)
                continue
            if not isinstance(spec, TensorSpec):
                self.fail(
                    arg.annotation,
                    f"kernel argument `{arg.arg}` is annotated with {describe(spec)}; only "
                    "pypto.Tensor(shape, dtype) arguments are supported",
                )
            shape: list[int] = []
            names: list[str] = []
            for d, dim in enumerate(spec.shape):
                if isinstance(dim, int):
                    shape.append(dim)
                    continue
                name = dim.name if isinstance(dim, Dynamic) else f"{arg.arg}_{d}"
                shape.append(DYNAMIC_INDEX)
                names.append(name)
            if names:
                dyn_names[arg.arg] = names
            args.append((arg.arg, MemRefType(spec.dtype.mlir, shape)))
        kernel = pto.KernelOp(node.name, args, dynamic_dims=dyn_names or None, jit_options=options)
        kernel.location = self.loc(node)
        block = kernel.body.block
        scope = Scope(self.module_scope)
        for (name, _), barg in zip(args, block.args):
            scope.vars[name] = barg
        scope.vars.update(constants)
        # dynamic dim name -> (argument, dim)
        sources: dict[str, tuple[SSAValue, int]] = {}
        for i, (name, t) in enumerate(args):
            for d, s in enumerate(t.get_shape()):
                if s == DYNAMIC_INDEX:
                    dname = dyn_names[name][list(t.get_shape())[:d].count(DYNAMIC_INDEX)]
                    sources.setdefault(dname, (block.args[i], d))
        self.dyn_sources = sources
        self.entry_block = block
        self.entry_last = None
        self.builder = Builder(InsertPoint.at_end(block))
        self.open_blocks = [block]
        self.index_constants = {}
        self.frames = [_Frame(node.name, 0, True)]
        self.region_depth = 0
        try:
            self.exec_body(node.body, scope)
        except _Return as r:
            if r.value is not None:
                self.fail(node, "kernels return nothing")
        except _LoopControl as c:
            self.fail(c.node, f"`{c.kind}` outside a loop")
        finally:
            self.builder = None
            self.frames = []
        block.add_op(pto.YieldOp())
        return kernel

    def dynamic_value(self, dyn: Dynamic, node: ast.AST) -> SSAValue:
        """The run-time size of a named dynamic dim, read once at kernel entry."""
        if dyn.name in self.dyn_values:
            return self.dyn_values[dyn.name]
        if dyn.name not in self.dyn_sources or self.entry_block is None:
            self.fail(
                node,
                f"dynamic dim {dyn.name!r} is not the size of any argument of this kernel",
            )
        src, d = self.dyn_sources[dyn.name]
        c = arith.ConstantOp(IntegerAttr(d, IndexType()))
        dim = memref.DimOp(src, c)
        for op in (c, dim):
            op.location = self.loc(node)
            point = (
                InsertPoint.after(self.entry_last)
                if self.entry_last is not None
                else InsertPoint.at_start(self.entry_block)
            )
            Rewriter.insert_op(op, point)
            self.entry_last = op
        dim.result.name_hint = dyn.name if dyn.name.isidentifier() else None
        self.dyn_values[dyn.name] = dim.result
        return dim.result

    # ----------------------------------------------------------------------- emitting

    def emit(self, op: Operation, node: ast.AST) -> Operation:
        if self.builder is None:
            self.fail(node, "this needs a kernel: it cannot be evaluated at module level")
        op.location = self.loc(node)
        self.builder.insert(op)
        return op

    def index(self, v: Any, node: ast.AST) -> SSAValue:
        """A value as an SSA `index` (materialising Python ints)."""
        v = self.resolve(v, node)
        if _is_index(v):
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(node, f"expected an integer index, got {describe(v)}")
        # One constant per value in each open block: a constant of an enclosing block
        # dominates everything built after it, so inner blocks reuse it.
        for block in reversed(self.open_blocks):
            cached = self.index_constants.get((id(block), v))
            if cached is not None:
                return cached
        result = self.emit(arith.ConstantOp(IntegerAttr(v, IndexType())), node).results[0]
        if self.open_blocks:
            self.index_constants[(id(self.open_blocks[-1]), v)] = result
        return result

    def mixed(self, values: Any, node: ast.AST, what: str) -> list[int | SSAValue]:
        """A Python list of ints / index values (`[i * T, 0]`) as a mixed index list."""
        if not isinstance(values, list | tuple):
            self.fail(node, f"{what} must be a list of integers, got {describe(values)}")
        out: list[int | SSAValue] = []
        for v in values:
            v = self.resolve(v, node)
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(v)
            elif _is_index(v):
                out.append(v)
            else:
                self.fail(node, f"{what} must hold integers or index values, got {describe(v)}")
        return out

    def static_ints(self, values: Any, node: ast.AST, what: str) -> list[int]:
        if not isinstance(values, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            self.fail(node, f"{what} must be a list of constant integers, got {describe(values)}")
        return list(values)

    def const_int(self, v: Any, node: ast.AST, what: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(node, f"{what} must be a constant integer, got {describe(v)}")
        return v

    def resolve(self, v: Any, node: ast.AST) -> Any:
        if isinstance(v, Poison):
            self.fail(node, v.reason)
        if isinstance(v, Dynamic):
            return self.dynamic_value(v, node)
        return v

    def shape_of(self, v: SSAValue, node: ast.AST) -> list[int | SSAValue]:
        """`t.shape`: ints where static, `memref.dim` / `tensor.dim` where dynamic."""
        out: list[int | SSAValue] = []
        for d, s in enumerate(_shape(v.type)):
            if s != DYNAMIC_INDEX:
                out.append(s)
                continue
            if isinstance(v, BlockArgument) and v.block is self.entry_block:
                name = self._dyn_name_of(v, d)
                if name is not None:
                    out.append(self.dynamic_value(Dynamic(name), node))
                    continue
            c = self.index(d, node)
            dim_op = memref.DimOp(v, c) if _is_mem(v) else tensor.DimOp(v, c)
            out.append(self.emit(dim_op, node).results[0])
        return out

    def _dyn_name_of(self, arg: SSAValue, dim: int) -> str | None:
        for name, (src, d) in self.dyn_sources.items():
            if src is arg and d == dim:
                return name
        return None

    def tile(self, v: Any, node: ast.AST, what: str = "operand") -> SSAValue:
        """A tile operand; a tensor in memory is read whole with a `pto.view`."""
        v = self.resolve(v, node)
        if _is_tile(v):
            return v
        if _is_mem(v):
            t = v.type
            assert isinstance(t, MemRefType)
            sizes = [s for s in self.shape_of(v, node) if isinstance(s, SSAValue)]
            view = pto.ViewOp(
                v,
                [0] * len(t.get_shape()),
                TensorType(t.get_element_type(), t.get_shape()),
                sizes=sizes,
            )
            return self.emit(view, node).results[0]
        self.fail(node, f"{what} must be a tensor, got {describe(v)}")

    def tensor_type(
        self, elem: Attribute, shape: Sequence[int | SSAValue], node: ast.AST
    ) -> tuple[TensorType, list[SSAValue]]:
        bad = [s for s in shape if isinstance(s, int) and s <= 0]
        if bad:
            self.fail(node, f"shape {_short(list(shape))} has a size <= 0 ({bad[0]})")
        static = [s if isinstance(s, int) else DYNAMIC_INDEX for s in shape]
        return TensorType(elem, static), [s for s in shape if isinstance(s, SSAValue)]

    def scalar(self, v: Any, like: Attribute | None, node: ast.AST) -> SSAValue:
        """A Python number as an `arith.constant` for a tile op whose tiles have element
        type `like`: ints stay ints for integer tiles, everything else is f32."""
        v = self.resolve(v, node)
        if _is_index(v) or (_is_ssa(v) and not isinstance(v.type, TensorType | MemRefType)):
            return v
        if isinstance(v, bool):
            return self.emit(arith.ConstantOp(IntegerAttr(int(v), i1)), node).results[0]
        if isinstance(v, int) and isinstance(like, IntegerType) and like != i1:
            return self.emit(arith.ConstantOp(IntegerAttr(v, like)), node).results[0]
        if isinstance(v, int | float):
            return self.emit(arith.ConstantOp(FloatAttr(float(v), f32)), node).results[0]
        self.fail(node, f"expected a tensor or a number, got {describe(v)}")

    def dtype(self, v: Any, node: ast.AST, what: str = "dtype") -> dtypes.ElementType:
        v = self.resolve(v, node)
        if isinstance(v, dtypes.ElementType):
            return v
        self.fail(node, f"{what} must be a pypto.DT_* data type, got {describe(v)}")

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
        method(stmt, scope)

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
        if not isinstance(target, ast.Name | ast.Subscript):
            self.fail(target, "augmented assignment is only supported on names and slices")
        if isinstance(target, ast.Name):
            load: ast.expr = ast.Name(target.id, ast.Load())
        else:  # `acc[:] += v`: read the slice, compute, write it back
            load = ast.Subscript(target.value, target.slice, ast.Load())
        left = self.eval(ast.copy_location(load, target), scope)
        right = self.eval(stmt.value, scope)
        value = self.binop(_BINOPS[type(stmt.op)], left, right, stmt)
        self.assign(target, value, scope, stmt)

    def assign(self, target: ast.expr, value: Any, scope: Scope, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if _is_ssa(value) and value.name_hint is None and not isinstance(value, BlockArgument):
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
            self.fail(target, "assigning to an attribute is not supported in kernels")
        else:
            self.fail(target, "unsupported assignment target")

    def assign_subscript(self, target: ast.Subscript, value: Any, scope: Scope) -> None:
        """`x[:] = v` (and `x[a:, b:] = v`): assemble `v` into memory at the slice starts."""
        dst = self.resolve(self.eval(target.value, scope), target.value)
        if isinstance(dst, list | dict):
            key = self.eval(target.slice, scope)
            try:
                dst[key] = value
            except (TypeError, IndexError, KeyError) as e:
                self.fail(target, str(e))
            return
        if _is_tile(dst):
            self.fail(
                target,
                "slice assignment needs a tensor in memory (a kernel argument or a "
                "pypto.tensor workspace); tiles are values",
            )
        if not _is_mem(dst):
            self.fail(target, f"cannot assign into {describe(dst)}")
        rank = len(_shape(dst.type))
        offsets = self.slice_starts(target.slice, rank, scope)
        src = self.resolve(value, target)
        if _is_number(src):
            t = dst.type
            assert isinstance(t, MemRefType)
            ttype, sizes = self.tensor_type(
                t.get_element_type(),
                self.shape_of(dst, target),
                target,
            )
            src = self.emit(
                pto.FullOp(self.scalar(src, t.get_element_type(), target), ttype, sizes=sizes),
                target,
            ).results[0]
        src = self.tile(src, target, "the assigned value")
        if len(_shape(src.type)) != rank:
            self.fail(
                target,
                f"cannot assign {describe(src)} into {describe(dst)}: the ranks differ",
            )
        self.emit(pto.AssembleOp(src, dst, offsets), target)

    def slice_starts(self, sl: ast.expr, rank: int, scope: Scope) -> list[int | SSAValue]:
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Constant) and i.value is Ellipsis for i in items):
            items = [i for i in items if not (isinstance(i, ast.Constant) and i.value is Ellipsis)]
        if len(items) > rank:
            self.fail(sl, f"{len(items)} indices for a rank-{rank} tensor")
        out: list[int | SSAValue] = []
        for it in items:
            if not isinstance(it, ast.Slice):
                self.fail(
                    it,
                    "only slices (`x[:]`, `x[a:, :]`) are supported when assigning into a tensor",
                )
            if it.step is not None:
                self.fail(it, "sliced assignment with a step is not supported")
            start = 0 if it.lower is None else self.eval(it.lower, scope)
            out.extend(self.mixed([start], it, "slice start"))
        return out + [0] * (rank - len(out))

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
        raise _Return(None if stmt.value is None else self.eval(stmt.value, scope))

    def stmt_Assert(self, stmt: ast.Assert, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if _is_ssa(cond):
            self.fail(stmt.test, "assert needs a condition known when the kernel is traced")
        if not cond:
            msg = self.eval(stmt.msg, scope) if stmt.msg is not None else None
            self.fail(stmt, f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    def stmt_FunctionDef(self, stmt: ast.FunctionDef, scope: Scope) -> None:
        self.define_function(stmt, scope, module_level=False)

    def stmt_While(self, stmt: ast.While, scope: Scope) -> None:
        self.fail(stmt, "`while` loops are not supported; use `for ... in pypto.loop(...)`")

    def stmt_Break(self, stmt: ast.Break, scope: Scope) -> None:
        raise _LoopControl("break", stmt)

    def stmt_Continue(self, stmt: ast.Continue, scope: Scope) -> None:
        raise _LoopControl("continue", stmt)

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
                if it.keywords or any(_is_ssa(a) for a in args):
                    bad = next((a for a, v in zip(it.args, args) if _is_ssa(v)), it)
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
        if _is_ssa(values):
            self.fail(it, f"cannot iterate over {describe(values)}; use pypto.loop")
        try:
            values = list(values)
        except TypeError:
            self.fail(it, f"cannot iterate over {describe(values)}")
        self.trace_loop(stmt, values, scope)

    def trace_loop(self, stmt: ast.For, values: Any, scope: Scope) -> None:
        for v in values:
            self.assign(stmt.target, v, scope, stmt.iter)
            try:
                self.exec_body(stmt.body, scope)
            except _LoopControl as c:
                if c.kind == "break":
                    break

    @contextmanager
    def region(self, block: Block) -> Iterator[None]:
        """Build into `block`, then restore the insertion point."""
        assert self.builder is not None
        saved = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.at_end(block)
        self.region_depth += 1
        self.open_blocks.append(block)
        try:
            yield
        except _LoopControl as c:
            raise self.error(
                c.node, f"`{c.kind}` inside pypto.loop or a runtime `if` is not supported"
            ) from None
        finally:
            self.open_blocks.pop()
            # A closed block is not built into again (a rebuilt one starts empty), so
            # its cached constants must not be handed out.
            self.index_constants = {
                k: v for k, v in self.index_constants.items() if k[0] != id(block)
            }
            self.region_depth -= 1
            self.builder.insertion_point = saved

    def pypto_loop(self, stmt: ast.For, kind: str, scope: Scope) -> None:
        call = stmt.iter
        assert isinstance(call, ast.Call)
        args, kwargs = self.eval_args(call, scope)
        bound = self.bind(_sig_loop, args, kwargs, call, f"pypto.{kind}")
        pos = bound["args"]
        if not 1 <= len(pos) <= 3:
            self.fail(call, f"pypto.{kind}() takes 1 to 3 positional arguments, got {len(pos)}")
        start, stop, step = (0, pos[0], 1) if len(pos) == 1 else (*pos, 1)[:3]
        if isinstance(step, int) and step <= 0:
            self.fail(call, f"pypto.{kind}() step must be positive, got {step}")
        factors: list[int] | None = None
        unroll = bound["unroll_list"]
        if unroll is None and kind == "loop_unroll":
            unroll = [1]
        if unroll is not None:
            ints = self.static_ints(unroll, call, "unroll_list")
            try:
                factors = pto.normalize_unroll_list(ints)
            except ValueError as e:
                self.fail(call, str(e))
        for key in ("name", "idx_name"):
            if bound[key] is not None and not isinstance(bound[key], str):
                self.fail(call, f"pypto.{kind}() {key} must be a string")
        n_vars = 2 if kind == "loop_unroll" else 1
        target = stmt.target
        names: list[ast.expr]
        if n_vars == 1:
            if not isinstance(target, ast.Name):
                self.fail(target, "the pypto.loop variable must be a single name")
            names = [target]
        else:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                self.fail(
                    target,
                    "pypto.loop_unroll yields (index, unroll_length): write `for i, n in ...`",
                )
            names = list(target.elts)
        lb, ub, st = (self.index(v, call) for v in (start, stop, step))
        op_cls = pto.LoopUnrollOp if kind == "loop_unroll" else pto.LoopOp
        body = Block(arg_types=[IndexType()] * n_vars)
        loop = op_cls(
            lb, ub, st, body, name=bound["name"], idx_name=bound["idx_name"], unroll_list=factors
        )
        self.emit(loop, call)
        for barg, name in zip(body.args, names):
            if isinstance(name, ast.Name):
                barg.name_hint = name.id
        before = dict(scope.vars)
        workspaces = self.workspace_count
        try:
            with self.region(body):
                for barg, name in zip(body.args, names):
                    self.assign(name, barg, scope, stmt)
                self.exec_body(stmt.body, scope)
        except TileirError:
            length = names[-1]
            if kind != "loop_unroll" or not (
                isinstance(length, ast.Name) and _mentions(stmt.body, length.id)
            ):
                raise
            # PyPTO traces a loop_unroll body once per factor, with the chunk length a
            # Python int. A body that needs it as one (a static shape, a Python `if` on
            # it) is rebuilt as one copy per factor, chosen by the chunk length.
            for op in reversed(list(body.ops)):
                body.erase_op(op)
            scope.vars.clear()
            scope.vars.update(before)
            self.workspace_count = workspaces
            assert factors is not None
            with self.region(body):
                self.assign(names[0], body.args[0], scope, stmt)
                self.unroll_dispatch(stmt, body.args[1], length, factors, scope)
        body.add_op(pto.YieldOp())
        self.leave_region(scope, before, loop.body, f"pypto.{kind} at line {call.lineno}")

    def unroll_dispatch(
        self, stmt: ast.For, length: SSAValue, name: ast.Name, factors: list[int], scope: Scope
    ) -> None:
        """`scf.if %n == f0 {body, n = f0} else {scf.if %n == f1 ...}`; the last factor
        needs no test: the chunk length is always one of the factors."""
        base = dict(scope.vars)
        factor, rest = factors[0], factors[1:]
        if not rest:
            self.assign(name, factor, scope, stmt)
            self.exec_body(stmt.body, scope)
            return
        call = stmt.iter
        cond = self.emit(arith.CmpiOp(length, self.index(factor, call), "eq"), call).results[0]
        then_block, else_block = Block(), Block()
        with self.region(then_block):
            self.assign(name, factor, scope, stmt)
            self.exec_body(stmt.body, scope)
        scope.vars.clear()
        scope.vars.update(base)
        with self.region(else_block):
            self.unroll_dispatch(stmt, length, name, rest, scope)
        for block in (then_block, else_block):
            block.add_op(scf.YieldOp())
            assert block.last_op is not None
            block.last_op.location = self.loc(call)
        self.emit(scf.IfOp(cond, [], Region(then_block), Region(else_block)), call)

    def leave_region(
        self, scope: Scope, before: dict[str, Any], region: Region, where: str
    ) -> None:
        """Names rebound inside a loop body to values computed there cannot be used after
        it (loops have no results in `pto`): they become errors on use."""
        for name, value in scope.vars.items():
            if before.get(name, _MISSING) is value:
                continue
            if self.defined_in(value, region):
                scope.vars[name] = Poison(
                    f"`{name}` is assigned inside the {where}; a value computed in a loop "
                    "body cannot be used after the loop (keep loop state in memory: a "
                    "pypto.tensor workspace)"
                )

    def defined_in(self, value: Any, region: Region) -> bool:
        if isinstance(value, list | tuple):
            return any(self.defined_in(v, region) for v in value)
        if isinstance(value, dict):
            return any(self.defined_in(v, region) for v in value.values())
        if not isinstance(value, SSAValue):
            return False
        owner = value.owner
        op = owner if isinstance(owner, Operation) else owner.parent_op()
        return op is not None and region.is_ancestor(op)

    # --- if

    def stmt_If(self, stmt: ast.If, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if _is_tile(cond) or _is_mem(cond):
            self.fail(stmt.test, f"`if` on {describe(cond)} is not supported")
        if _is_index(cond):
            zero = self.index(0, stmt.test)
            cond = self.emit(arith.CmpiOp(cond, zero, "ne"), stmt.test).results[0]
        if not _is_cond(cond):
            try:
                taken = bool(cond)
            except Exception:
                self.fail(stmt.test, f"cannot use {describe(cond)} as a condition")
            self.exec_body(stmt.body if taken else stmt.orelse, scope)
            return
        self.runtime_if(stmt, cond, scope)

    def runtime_if(self, stmt: ast.If, cond: SSAValue, scope: Scope) -> None:
        before = dict(scope.vars)
        then_block, else_block = Block(), Block()
        with self.region(then_block):
            self.exec_body(stmt.body, scope)
        then_vars = dict(scope.vars)
        scope.vars.clear()
        scope.vars.update(before)
        with self.region(else_block):
            self.exec_body(stmt.orelse, scope)
        else_vars = dict(scope.vars)
        merged: dict[str, Any] = {}
        results: list[tuple[str, SSAValue, SSAValue]] = []
        line = stmt.lineno
        for name in dict.fromkeys([*then_vars, *else_vars]):
            tv, ev = then_vars.get(name, _MISSING), else_vars.get(name, _MISSING)
            if tv is ev:
                merged[name] = tv
            elif tv is _MISSING or ev is _MISSING:
                merged[name] = Poison(
                    f"`{name}` is assigned in only one branch of the runtime `if` at line "
                    f"{line}; assign it in both branches to use it after the `if`"
                )
            elif _is_ssa(tv) and _is_ssa(ev) and tv.type == ev.type and not _is_mem(tv):
                results.append((name, tv, ev))
            elif _int_or_index(tv) and _int_or_index(ev) and not _same_python(tv, ev):
                # `start = 0` in one branch, `start = i * T` in the other: an index result
                tv = self.index_in(then_block, tv, stmt)
                ev = self.index_in(else_block, ev, stmt)
                results.append((name, tv, ev))
            elif not _is_ssa(tv) and not _is_ssa(ev) and _same_python(tv, ev):
                merged[name] = tv
            else:
                what = (
                    f"{describe(tv)} in one and {describe(ev)} in the other"
                    if _is_ssa(tv) or _is_ssa(ev)
                    else "different values"
                )
                merged[name] = Poison(
                    f"`{name}` gets {what} branch of the runtime `if` at line {line}; it "
                    "cannot be used after the `if`"
                )
        then_block.add_op(scf.YieldOp(*[t for _, t, _ in results]))
        else_block.add_op(scf.YieldOp(*[e for _, _, e in results]))
        for op in (then_block.last_op, else_block.last_op):
            assert op is not None
            op.location = self.loc(stmt)
        else_region = Region(else_block)
        if not results and len(else_block.ops) == 1:
            else_region = Region()  # no `else`: print `scf.if %c { ... }`
        if_op = scf.IfOp(cond, [t.type for _, t, _ in results], Region(then_block), else_region)
        self.emit(if_op, stmt)
        for (name, _, _), res in zip(results, if_op.results):
            res.name_hint = name
            merged[name] = res
        scope.vars.clear()
        scope.vars.update(merged)

    def index_in(self, block: Block, v: int | SSAValue, node: ast.AST) -> SSAValue:
        """`v` as an index value at the end of a branch `block` being built."""
        if isinstance(v, SSAValue):
            return v
        op = arith.ConstantOp(IntegerAttr(v, IndexType()))
        op.location = self.loc(node)
        block.add_op(op)
        return op.result

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
        return value

    def expr_List(self, node: ast.List, scope: Scope) -> list[Any]:
        return self.eval_elts(node.elts, scope)

    def expr_Tuple(self, node: ast.Tuple, scope: Scope) -> tuple[Any, ...]:
        return tuple(self.eval_elts(node.elts, scope))

    def eval_elts(self, elts: Sequence[ast.expr], scope: Scope) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.resolve(self.eval(e.value, scope), e)
                if _is_ssa(v) or not isinstance(v, list | tuple | range | str):
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
                if _is_ssa(x):
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
        if _is_ssa(cond):
            self.fail(node.test, "a conditional expression needs a condition known at trace time")
        return self.eval(node.body if cond else node.orelse, scope)

    def expr_ListComp(self, node: ast.ListComp, scope: Scope) -> list[Any]:
        if len(node.generators) != 1 or node.generators[0].is_async:
            self.fail(node, "only list comprehensions with one `for` are supported")
        gen = node.generators[0]
        it = self.resolve(self.eval(gen.iter, scope), gen.iter)
        if _is_ssa(it):
            self.fail(gen.iter, f"cannot iterate over {describe(it)}")
        inner = Scope(scope)
        out: list[Any] = []
        for v in it:
            self.assign(gen.target, v, inner, gen.iter)
            if all(self.resolve(self.eval(c, inner), c) for c in gen.ifs):
                out.append(self.eval(node.elt, inner))
        return out

    def expr_Lambda(self, node: ast.Lambda, scope: Scope) -> Helper:
        fn = ast.FunctionDef(
            name="<lambda>",
            args=node.args,
            body=[ast.copy_location(ast.Return(node.body), node.body)],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        ast.copy_location(fn, node)
        helper = Helper(fn, scope, self.filename)
        helper.defaults = [self.eval(d, scope) for d in node.args.defaults]
        return helper

    def expr_Starred(self, node: ast.Starred, scope: Scope) -> Any:
        self.fail(node, "* is only supported in calls and list literals")

    def expr_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        return self.attribute(base, node.attr, node)

    def pypto_attr(self, ref: PyptoRef, node: ast.AST | None) -> Any:
        """`pypto.DT_BF16` and `pypto.DataType.DT_BF16` are element types; any other
        name inside pypto stays a name until it is called or used."""
        last = ref.path[-1] if ref.path else ""
        if last.startswith("DT_") and (len(ref.path) == 1 or ref.path[-2] == "DataType"):
            if last not in dtypes.BY_PYPTO:
                known = ", ".join(f"pypto.{t.pypto}" for t in dtypes.ELEMENT_TYPES)
                msg = f"pypto.{last} has no tileir element type (supported: {known})"
                if node is None:
                    return Poison(msg)
                self.fail(node, msg)
            return dtypes.BY_PYPTO[last]
        return ref

    def attribute(self, base: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(base, PyptoRef):
            return self.pypto_attr(PyptoRef((*base.path, attr)), node)
        if isinstance(base, SafeModule):
            if attr.startswith("_") or not hasattr(base.module, attr):
                self.fail(node, f"{base.name}.{attr} is not available")
            return getattr(base.module, attr)
        if _is_tile(base) or _is_mem(base):
            if attr == "shape":
                return self.shape_of(base, node)
            if attr == "dtype":
                return dtypes.element_type(_elem(base.type))
            if attr == "dim":
                return BoundMethod(base, "__rank__")
            if attr in bindings.BY_PYPTO or attr == "move":
                return BoundMethod(base, attr)
            self.fail(node, f"tensors have no supported attribute `{attr}`")
        if isinstance(base, dtypes.ElementType):
            if attr == "name":
                return base.pypto
            self.fail(node, f"data types have no attribute `{attr}`")
        if isinstance(base, Poison):
            self.fail(node, base.reason)
        if isinstance(base, list | tuple | dict | str | int | float) and not attr.startswith("_"):
            if isinstance(base, dict) and attr in ("get", "keys", "values", "items"):
                return getattr(base, attr)
            if isinstance(base, list | tuple) and attr in ("index", "count"):
                return getattr(base, attr)
            if isinstance(base, str) and attr in ("format", "upper", "lower", "join", "split"):
                return getattr(base, attr)
            if isinstance(base, int | float) and attr in ("real", "bit_length"):
                return getattr(base, attr)
        self.fail(node, f"{describe(base)} has no supported attribute `{attr}`")

    def expr_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        if _is_tile(base) or _is_mem(base):
            return self.tensor_subscript(base, node, scope)
        key = self.eval(node.slice, scope)
        key = self.resolve(key, node.slice)
        if _is_ssa(key):
            self.fail(node.slice, f"cannot index a Python value with {describe(key)}")
        if not isinstance(base, list | tuple | dict | str | range):
            self.fail(node, f"cannot index {describe(base)}")
        try:
            return base[key]
        except (TypeError, IndexError, KeyError) as e:
            self.fail(node, f"cannot index {describe(base)} with {describe(key)} ({e})")

    def tensor_subscript(self, base: SSAValue, node: ast.Subscript, scope: Scope) -> SSAValue:
        """`x[a:b, :]` is `pypto.view(x, [b - a, ...], [a, 0, ...])`; an integer index
        keeps a size-1 dim that a reshape then drops, as PyPTO's `Tensor.__getitem__`."""
        shape = self.shape_of(base, node)
        rank = len(shape)
        items: list[ast.expr | None] = list(
            node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        )
        ellipsis = [
            i for i, it in enumerate(items) if isinstance(it, ast.Constant) and it.value is Ellipsis
        ]
        if len(ellipsis) > 1:
            self.fail(node.slice, "an index can have only one `...`")
        if ellipsis:
            e = ellipsis[0]
            items = [*items[:e], *[None] * (rank - len(items) + 1), *items[e + 1 :]]
        if len(items) > rank:
            self.fail(node.slice, f"{len(items)} indices for a rank-{rank} tensor")
        items += [None] * (rank - len(items))
        offsets: list[Any] = []
        sizes: list[Any] = []
        keep: list[bool] = []
        for d, it in enumerate(items):
            dim = shape[d]
            where: ast.AST = it if it is not None else node
            if it is None or isinstance(it, ast.Slice):
                if it is not None and it.step is not None:
                    step = self.resolve(self.eval(it.step, scope), it.step)
                    if step != 1:
                        self.fail(it.step, "tensor slices with a step are not supported")
                lo = 0
                hi: Any = dim
                if it is not None and it.lower is not None:
                    lo = self.resolve(self.eval(it.lower, scope), it.lower)
                if it is not None and it.upper is not None:
                    hi = self.resolve(self.eval(it.upper, scope), it.upper)
                lo, hi = self.slice_bound(lo, dim, where), self.slice_bound(hi, dim, where)
                if isinstance(hi, int) and isinstance(dim, int):
                    hi = min(hi, dim)
                offsets.append(lo)
                sizes.append(self.difference(hi, lo, where))
                keep.append(True)
            else:
                v = self.slice_bound(self.resolve(self.eval(it, scope), it), dim, it)
                offsets.append(v)
                sizes.append(1)
                keep.append(False)
        if not any(keep):
            self.fail(node, "reading one element out of a tensor (`x[i, j]`) is not supported")
        for size in sizes:
            if isinstance(size, int) and size <= 0:
                self.fail(node, f"the slice is empty (size {size})")
        view = self.read_call(
            "view",
            {"input": base, "shape": sizes, "offsets": offsets, "valid_shape": None, "dtype": None},
            node,
        )
        if all(keep):
            return view
        kept = [s for s, k in zip(sizes, keep) if k]
        return self.read_call(
            "reshape", {"input": view, "shape": kept, "valid_shape": None, "inplace": False}, node
        )

    def difference(self, hi: Any, lo: Any, node: ast.AST) -> Any:
        """`hi - lo`, an int when the two differ by a constant (`(i + 1) * T - i * T`)."""
        a, b = _linear(hi), _linear(lo)
        if a is not None and b is not None:
            terms = {k: a[0].get(k, 0) - b[0].get(k, 0) for k in {*a[0], *b[0]}}
            if not any(terms.values()):
                return a[1] - b[1]
        return self.binop("-", hi, lo, node)

    def slice_bound(self, v: Any, dim: int | SSAValue, node: ast.AST) -> Any:
        """A slice bound or index: Python negatives count from the end, as in Python."""
        if isinstance(v, bool) or not (isinstance(v, int) or _is_index(v)):
            self.fail(node, f"tensor indices must be integers or index values, got {describe(v)}")
        if isinstance(v, int) and v < 0:
            if not isinstance(dim, int):
                self.fail(node, "a negative index needs a static dim")
            v += dim
            if v < 0:
                self.fail(node, f"index {v - dim} is out of range for a dim of size {dim}")
        return v

    def expr_Slice(self, node: ast.Slice, scope: Scope) -> slice:
        parts = [
            None if p is None else self.resolve(self.eval(p, scope), p)
            for p in (node.lower, node.upper, node.step)
        ]
        if any(_is_ssa(p) for p in parts):
            self.fail(node, "slices of Python lists need constant bounds")
        return slice(*parts)

    def expr_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        values = [self.resolve(self.eval(v, scope), v) for v in node.values]
        if not any(_is_ssa(v) for v in values):
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
        if _is_cond(v):
            return v
        if isinstance(v, bool | int):
            return self.emit(arith.ConstantOp(IntegerAttr(int(bool(v)), i1)), node).results[0]
        self.fail(node, f"expected a condition, got {describe(v)}")

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        v = self.resolve(self.eval(node.operand, scope), node.operand)
        if isinstance(node.op, ast.Not):
            if _is_ssa(v):
                c = self.cond(v, node)
                true = self.cond(True, node)
                return self.emit(arith.XOrIOp(c, true), node).results[0]
            return not v
        if isinstance(node.op, ast.USub):
            if _is_tile(v) or _is_mem(v):
                return self.emit(pto.NegOp(self.tile(v, node)), node).results[0]
            if _is_index(v):
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
        if any(_is_tile(v) or _is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"operator {sym} is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if _is_index(left) or _is_index(right):
            op_cls = index_ops.BY_OPERATOR.get(sym)
            if op_cls is None:
                hint = " (use // for index division)" if sym == "/" else ""
                self.fail(node, f"operator {sym} is not supported on runtime index values{hint}")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(op_cls(a, b), node).results[0]
        if _is_ssa(left) or _is_ssa(right):
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
        if not any(_is_ssa(r) for r in results):
            return all(results)
        acc = self.cond(results[0], node)
        for r in results[1:]:
            acc = self.emit(arith.AndIOp(acc, self.cond(r, node)), node).results[0]
        return acc

    def compare(self, sym: str, left: Any, right: Any, node: ast.AST) -> Any:
        if any(_is_tile(v) or _is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"`{sym}` is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if _is_index(left) or _is_index(right):
            if sym not in index_ops.COMPARISONS:
                self.fail(node, f"`{sym}` is not supported on runtime index values")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(arith.CmpiOp(a, b, index_ops.COMPARISONS[sym]), node).results[0]
        if _is_ssa(left) or _is_ssa(right):
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
        return self.call(callee, args, kwargs, node)

    def call(self, callee: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(callee, PyptoRef):
            return self.call_pypto(callee, args, kwargs, node)
        if isinstance(callee, BoundMethod):
            return self.call_method(callee, args, kwargs, node)
        if isinstance(callee, Helper):
            return self.inline(callee, args, kwargs, node)
        if isinstance(callee, KernelDef):
            self.fail(
                node, f"calling the kernel `{callee.node.name}` from a kernel is not supported"
            )
        if callee in (min, max, builtins.min, builtins.max) and any(
            _is_index(self.resolve(a, node)) or isinstance(a, Dynamic) for a in args
        ):
            return self.scalar_func(callee.__name__, args, kwargs, node)
        if callable(callee) and not _is_ssa(callee):
            resolved = [self.resolve(a, node) for a in args]
            if any(_is_ssa(a) for a in resolved) and callee is not len:
                name = getattr(callee, "__name__", "this function")
                self.fail(
                    node,
                    f"{name}() cannot take {describe(next(a for a in resolved if _is_ssa(a)))}",
                )
            if callee is len and any(_is_tile(a) or _is_mem(a) for a in resolved):
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
            bound = sig.bind(*args, **kwargs)
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
        self.frames.append(_Frame(fn.name, self.region_depth, False, helper.pypto_function))
        try:
            self.exec_body(fn.body, scope)
        except _Return as r:
            return r.value
        except _LoopControl as c:
            self.fail(c.node, f"`{c.kind}` outside a loop")
        finally:
            self.frames.pop()
        return None

    def call_method(
        self, m: BoundMethod, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        if m.name == "__rank__":
            return len(_shape(m.receiver.type))
        if m.name == "move":
            bound = self.bind(lambda other: None, args, kwargs, node, "Tensor.move")
            if not _is_mem(m.receiver):
                self.fail(node, "Tensor.move needs a tensor in memory as its receiver")
            src = self.tile(bound["other"], node)
            self.emit(pto.AssembleOp(src, m.receiver, [0] * len(_shape(m.receiver.type))), node)
            return None
        return self.call_pypto(PyptoRef((m.name,)), [m.receiver, *args], kwargs, node)

    def scalar_func(
        self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        bound = self.bind(_sig_scalar2, args, kwargs, node, f"pypto.{name}")
        a, b = self.resolve(bound["a"], node), self.resolve(bound["b"], node)
        if not _is_ssa(a) and not _is_ssa(b):
            if name == "ceildiv":
                return self.py_op(lambda: -(-a // b), node=node)
            return self.py_op(
                lambda: builtins.min(a, b) if name == "min" else builtins.max(a, b), node=node
            )
        op_cls = index_ops.BY_FUNCTION[name]
        return self.emit(op_cls(self.index(a, node), self.index(b, node)), node).results[0]

    # ----------------------------------------------------------------------- pypto calls

    def call_pypto(
        self, ref: PyptoRef, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        path = ref.path
        if path == ("Tensor",):
            return self.make_tensor_spec(args, kwargs, node)
        if path == ("frontend", "dynamic"):
            name = self.bind(_sig_dynamic, args, kwargs, node, "pypto.frontend.dynamic")["name"]
            if not isinstance(name, str):
                self.fail(node, "pypto.frontend.dynamic() takes the dim's name as a string")
            return Dynamic(name)
        if path == ("cond",):
            return self.bind(_sig_cond, args, kwargs, node, "pypto.cond")["scalar"]
        if path in (("loop",), ("loop_unroll",)):
            self.fail(node, f"pypto.{path[0]}() is only supported as the iterable of a `for`")
        if len(path) == 1 and path[0] in _SCALAR_FUNCS:
            return self.scalar_func(path[0], args, kwargs, node)
        name = path[-1] if path else "pypto"
        binding = bindings.BY_PYPTO.get(name) if len(path) == 1 else None
        if binding is None:
            self.fail(node, f"{ref.dotted}() is not supported by the tileir frontend")
        if self.builder is None:
            self.fail(node, f"{ref.dotted}() needs a kernel: it cannot run at module level")
        return binding.read(
            self, self.bind(binding.signature, args, kwargs, node, ref.dotted), node
        )

    def read_call(self, name: str, args: dict[str, Any], node: ast.AST) -> Any:
        """`pypto.<name>(**args)` (all parameters given), for the syntax that means a
        call (`x[a:b]` is a view)."""
        return bindings.BY_PYPTO[name].read(self, args, node)

    describe = staticmethod(describe)
    short = staticmethod(_short)

    @staticmethod
    def pypto_path(v: Any) -> tuple[str, ...] | None:
        """The dotted path of a name inside `pypto` (`("CastMode", "CAST_RINT")`), or
        None for any other value."""
        return v.path if isinstance(v, PyptoRef) else None

    def make_tensor_spec(
        self, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> TensorSpec:
        bound = self.bind(_sig_tensor_spec, args, kwargs, node, "pypto.Tensor")
        shape = bound["shape"]
        if not isinstance(shape, list | tuple) or not shape:
            self.fail(
                node,
                f"pypto.Tensor needs a non-empty shape list, got {describe(shape)} (tileir "
                "builds a kernel for one shape; name run-time sizes with pypto.frontend.dynamic)",
            )
        dims: list[int | Dynamic | PyptoRef] = []
        for d in shape:
            if isinstance(d, Poison):
                self.fail(node, d.reason)
            if d == PyptoRef(("STATIC",)):
                self.fail(
                    node,
                    "pypto.STATIC takes its size from the call, but tileir builds a kernel for "
                    "known shapes: write the size, or name a run-time size with "
                    "pypto.frontend.dynamic",
                )
            if isinstance(d, bool) or not (
                isinstance(d, int | Dynamic) or d == PyptoRef(("DYNAMIC",)) or d is Ellipsis
            ):
                self.fail(
                    node,
                    f"pypto.Tensor shape entries must be ints or dynamic dims, got {describe(d)}",
                )
            if isinstance(d, int) and d <= 0:
                self.fail(node, f"pypto.Tensor shape {list(shape)} has a dim <= 0")
            dims.append(PyptoRef(("DYNAMIC",)) if d is Ellipsis else d)
        dt = bound["dtype"]
        elem = dtypes.BY_PYPTO["DT_FP32"] if dt is None else self.dtype(dt, node)
        return TensorSpec(tuple(dims), elem)


def _mentions(body: Sequence[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for stmt in body for n in ast.walk(stmt))


def _linear(v: Any, depth: int = 8) -> tuple[dict[SSAValue, int], int] | None:
    """An index value as `sum(coeff * atom) + const` through arith add / sub / mul by a
    constant, or None when it is not of that form."""
    if isinstance(v, int) and not isinstance(v, bool):
        return {}, v
    if not _is_index(v) or depth == 0:
        return None
    c = pto.constant_index(v)
    if c is not None:
        return {}, c
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(op, arith.AddiOp) else -1
        terms = dict(a[0])
        for k, x in b[0].items():
            terms[k] = terms.get(k, 0) + sign * x
        return terms, a[1] + sign * b[1]
    if isinstance(op, arith.MuliOp):
        a, b = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if a is not None and b is not None and (not a[0] or not b[0]):
            scale, (terms, const) = (a[1], b) if not a[0] else (b[1], a)
            return {k: x * scale for k, x in terms.items()}, const * scale
    return {v: 1}, 0


class _Missing:
    pass


_MISSING = _Missing()


def _int_or_index(v: Any) -> bool:
    return _is_index(v) or (isinstance(v, int) and not isinstance(v, bool))


def _same_python(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def translate(source: str, filename: str, only: str | None = None) -> ModuleOp:
    """Build the module of every kernel in `source` (or only the kernel `only`)."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise TileirError(
            f"{filename}:{e.lineno or 0}:{e.offset or 0}: error: invalid Python: {e.msg}"
        ) from None
    except (RecursionError, MemoryError):
        raise TileirError(
            f"{filename}: error: the file nests too deeply for Python's parser "
            f"(tileir's limit is {MAX_EXPRESSION_DEPTH} levels in an expression)"
        ) from None
    tr = Translator(source, filename)
    if (deep := too_deep(tree)) is not None:
        raise tr.error(*deep)
    try:
        tr.run_module(tree)
        if only is not None:
            tr.kernels = [k for k in tr.kernels if k.node.name == only]
            if not tr.kernels:
                raise TileirError(
                    f"{filename}: error: no @pypto.frontend.jit kernel named {only!r}"
                )
        return tr.build_module()
    except TileirError:
        raise
    except RecursionError:
        raise tr.error(tr.current, "the kernel nests too deeply (recursive helper?)") from None
    except Exception as e:  # a frontend bug must still name the user's line
        raise tr.error(
            tr.current, f"internal error while translating this ({type(e).__name__}: {e})"
        ) from e
