"""Builds `pto` IR from the AST of a PyPTO kernel file.

The translator is a small tracing interpreter, as PyPTO's own frontend is: it walks the
kernel's AST, runs the Python parts (constants, list arithmetic, `range` loops, `if`
on constants, helper calls) and emits IR through xDSL's `Builder` for the parts PyPTO
records (tensor ops, `pypto.loop`, `if` on loop state, index arithmetic on loop
indices). It has no op semantics of its own: a `pypto.<name>` call is read by that
function's binding (`tileir.bindings`), which gives the result its type from
`tileir.dialect.shapes` (the verifiers' rules); this module is the reading kit the
bindings use (`tile`, `const_int`, `mixed`, `dtype`, `emit`, `fail` ...).

The kernel file has been imported (`frontends.pypto.loader`, with the stand-in `pypto`):
a kernel is a live function, and the translator reads its AST, resolving names through
the function's closure cells and globals, as PyPTO's JIT does. Python objects from there
(numbers, lists, config objects, NamedTuples, modules) are used as they are; functions
from the user's files are inlined, library functions are called.

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
import operator
import types
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

from frontends.pypto import specialise
from frontends.pypto.loader import SOURCES, KernelEntry, LoadedFile, is_user_file, looks_like_jit
from frontends.pypto.standin import PYPTO_FUNCTION, JitKernel, standin_path
from frontends.pypto.values import BoundMethod, Dynamic, Helper, Poison, PyptoRef, TensorSpec
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

_NEEDS_VALUE = ("index value", "constant", "known at trace time", "known when")
"""Error messages that say Python needed a value which the call's shapes would give."""


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
    filename: str = ""


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
        return f"function {_short(v)}"
    if isinstance(v, JitKernel):
        return f"the kernel {v.fn.__name__}()"
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
    if isinstance(v, Helper):
        return f"{v.node.name}()" if isinstance(v.node, ast.FunctionDef) else "<lambda>"
    if isinstance(v, JitKernel):
        return f"{v.fn.__name__}()"
    if isinstance(v, BoundMethod):
        return f"<tensor method {v.name}>"
    if isinstance(v, types.ModuleType):
        return f"the module {v.__name__}"
    if isinstance(v, int | float | bool | str | type(None) | dict | range):
        return repr(v)
    if isinstance(v, types.ModuleType):
        return v.__name__
    t = type(v)
    return f"a {t.__module__.split('.')[0]}.{t.__qualname__} object"


class Translator:
    """Translates kernels of one loaded file, each into a `pto.kernel`."""

    def __init__(self, filename: str):
        self.kernel_file = filename
        self.builder: Builder | None = None
        self.frames: list[_Frame] = []
        self.region_depth = 0
        self.helpers: dict[Any, Helper] = {}
        # per kernel
        self.dyn_values: dict[str, SSAValue] = {}
        self.dyn_sources: dict[str, tuple[SSAValue, int]] = {}
        self.entry_block: Block | None = None
        self.entry_last: Operation | None = None
        self.workspace_count = 0
        self.open_blocks: list[Block] = []
        self.current: ast.AST | None = None
        self.statement: ast.stmt | None = None
        """The statement being run (a binding's reader asks whether its call's value is
        dropped: `x.scatter_(...)` on its own line)."""
        """The node being translated, for the location of an unexpected failure."""
        self.index_constants: dict[tuple[int, int], SSAValue] = {}
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

    # ----------------------------------------------------------------------- kernels

    def jit_options(self, kernel: JitKernel, node: ast.AST) -> DictionaryAttr | None:
        options = {k: self.to_attr(v, node) for k, v in kernel.options.items()}
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

    def build_kernel(self, entry: KernelEntry, call: dict[str, Any]) -> pto.KernelOp:
        """`entry`'s kernel specialised to `call` (example arguments by parameter name)."""
        fn = entry.kernel.fn
        found = SOURCES.node_of(fn.__code__)
        if not isinstance(found, ast.FunctionDef):
            raise TileirError(
                f"{fn.__code__.co_filename}: error: cannot find the source of the kernel "
                f"{fn.__qualname__}()"
            )
        node = found
        self.frames = [_Frame(entry.name, 0, True, filename=fn.__code__.co_filename)]
        self.dyn_values = {}
        self.dyn_sources = {}
        self.workspace_count = 0
        self.call_hint = ""
        decorator = next(
            (d for d in node.decorator_list if looks_like_jit(d)),
            node.decorator_list[0] if node.decorator_list else node,
        )
        options = self.jit_options(entry.kernel, decorator)
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            bad = a.vararg or a.kwarg or a.kwonlyargs[0]
            self.fail(bad, "kernel parameters must be plain positional parameters")
        positional = [*a.posonlyargs, *a.args]
        try:
            values = specialise.call_values([p.arg for p in positional], call)
        except TileirError as e:
            self.fail(node, str(e))
        signature = inspect.signature(fn)
        args: list[tuple[str, MemRefType]] = []
        dyn_names: dict[str, list[str]] = {}
        written: dict[str, list[str]] = {}
        formats: dict[str, str] = {}
        needs_call: list[str] = []
        constants: dict[str, Any] = {}
        for arg in positional:
            param = signature.parameters[arg.arg]
            spec = self.annotation(fn, param, arg)
            value = values.get(arg.arg, _MISSING)
            example = self.example(value, arg)
            if spec is None and example is not None:
                spec = TensorSpec(None, None)  # an unannotated tensor: all from the call
            if not isinstance(spec, TensorSpec):
                # A scalar or config parameter: a constant of this specialisation.
                if example is not None:
                    self.fail(
                        arg, f"`{arg.arg}` is not a tensor parameter, but the call gives {example}"
                    )
                if value is _MISSING:
                    value = param.default
                if value is inspect.Parameter.empty:
                    value = Poison(
                        f"kernel parameter `{arg.arg}` has no value: the kernel is built for "
                        f"the scalars of a call; give it with --arg {arg.arg}=VALUE (in Python: "
                        f"load_function(kernel, ..., {arg.arg}=...))"
                    )
                constants[arg.arg] = value
                continue
            if value is not _MISSING and example is None:
                self.fail(
                    arg,
                    f"tensor parameter `{arg.arg}` needs a tensor, the call gives {describe(value)}",
                )
            try:
                tp = specialise.tensor_param(arg.arg, spec, example)
            except TileirError as e:
                self.fail(arg.annotation or arg, str(e))
            if tp.dynamic_names:
                dyn_names[arg.arg] = tp.dynamic_names
            if tp.written is not None:
                written[arg.arg] = tp.written
            if spec.format is not None:
                formats[arg.arg] = spec.format
            if tp.call_dims:
                needs_call.append(arg.arg)
            args.append((arg.arg, tp.type))
        if needs_call:
            given = ", ".join(f"--arg {n}=AxBx<dtype>" for n in needs_call)
            self.call_hint = (
                f" (the kernel was read without the call's shapes, so the pypto.STATIC dims of "
                f"{', '.join(f'`{n}`' for n in needs_call)} are run-time values here: give them "
                f"with {given})"
            )
        kernel = pto.KernelOp(entry.name, args, dynamic_dims=dyn_names or None, jit_options=options)
        kernel.location = self.loc(node)
        if written:
            kernel.attributes["shape_annotations"] = DictionaryAttr(
                {k: ArrayAttr([StringAttr(t) for t in v]) for k, v in sorted(written.items())}
            )
        if formats:
            kernel.attributes["tensor_formats"] = DictionaryAttr(
                {k: StringAttr(v) for k, v in sorted(formats.items())}
            )
        block = kernel.body.block
        scope = Scope(LiveScope(fn))
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

    def annotation(self, fn: types.FunctionType, param: inspect.Parameter, arg: ast.arg) -> Any:
        """A parameter's annotation as a value (a string one is evaluated in the
        function's globals, as `typing.get_type_hints` would)."""
        ann = param.annotation
        if ann is inspect.Parameter.empty:
            return None
        if isinstance(ann, str):
            try:
                ann = eval(ann, fn.__globals__)  # noqa: S307 - the user's own module code
            except Exception as e:
                self.fail(arg.annotation or arg, f"cannot evaluate the annotation: {e}")
        if ann in (int, float, bool, str, list, tuple, dict):
            return ann
        return self.live(ann)

    def example(self, value: Any, arg: ast.arg) -> specialise.ArgShape | None:
        try:
            return specialise.example_of(value)
        except TileirError as e:
            self.fail(arg, str(e).removeprefix("error: "))

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
        self.define_function(stmt, scope)

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
        return self.live(value)

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
        return ref

    def attribute(self, base: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(base, PyptoRef):
            return self.pypto_attr(PyptoRef((*base.path, attr)), node)
        if _is_index(base) and attr in ("min", "max"):
            # `(S - i * T).min(T)`: PyPTO's SymbolicScalar methods
            return BoundMethod(base, attr)
        if _is_tile(base) or _is_mem(base):
            if attr == "shape":
                return self.shape_of(base, node)
            if attr == "dtype":
                return dtypes.element_type(_elem(base.type))
            if attr == "dim":
                # An int in newer PyPTO (`rank = x.dim`), a method in 0.2.0 (`x.dim()`).
                return _Rank(len(_shape(base.type)))
            if attr in bindings.BY_PYPTO or attr == "move":
                return BoundMethod(base, attr)
            self.fail(node, f"tensors have no supported attribute `{attr}`")
        if isinstance(base, dtypes.ElementType):
            if attr == "name":
                return base.pypto
            self.fail(node, f"data types have no attribute `{attr}`")
        if isinstance(base, Poison):
            self.fail(node, base.reason)
        if _is_ssa(base) or isinstance(base, Helper | BoundMethod | TensorSpec | Dynamic):
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
            _is_index(self.resolve(a, node)) or isinstance(a, Dynamic) for a in args
        ):
            return self.scalar_func(callee.__name__, args, kwargs, node)
        if callable(callee) and not _is_ssa(callee):
            resolved = [self.resolve(a, node) for a in args]
            if any(_is_ssa(a) for a in resolved) and callee is not len:
                name = getattr(callee, "__name__", "this function")
                where = getattr(callee, "__module__", None) or "builtins"
                what = describe(next(a for a in resolved if _is_ssa(a)))
                if where == "builtins":
                    self.fail(node, f"{name}() cannot take {what}")
                self.fail(
                    node,
                    f"{where}.{name}() is library code: it runs as Python when the kernel "
                    f"is traced and cannot take {what}",
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
            _Frame(fn.name, self.region_depth, False, helper.pypto_function, helper.filename)
        )
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
        if _is_index(m.receiver):
            return self.scalar_func(m.name, [m.receiver, *args], kwargs, node)
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
        maker = bindings.VALUES.get(".".join(path))
        if maker is not None:  # `pypto.Element(...)`: a Python value, no op
            try:
                return maker(*(self.resolve(a, node) for a in args), **kwargs)
            except TypeError as e:
                self.fail(node, f"{ref.dotted}(): {e}")
        binding = bindings.BY_PYPTO.get(".".join(path)) or bindings.COMPOSITES.get(".".join(path))
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


class _Rank(int):
    """`x.dim`: the rank, usable as an int and callable as `x.dim()`."""

    def __call__(self) -> int:
        return int(self)


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


def translate(
    loaded: LoadedFile, only: str | None = None, call: dict[str, Any] | None = None
) -> ModuleOp:
    """The module of every kernel of a loaded file (or only the kernel `only`), each
    specialised to `call` (example arguments by parameter name; a name applies to every
    kernel with that parameter, and must name a parameter of one)."""
    entries = loaded.select(only)
    call = dict(call or {})
    params = {n for e in entries for n in inspect.signature(e.kernel.fn).parameters}
    unknown = sorted(set(call) - params)
    if unknown:
        raise TileirError(
            f"{loaded.filename}: error: no kernel has a parameter `{unknown[0]}` "
            f"(given with --arg / --input / as a keyword)"
        )
    tr = Translator(loaded.filename)
    kernels = []
    for entry in entries:
        mine = {k: v for k, v in call.items() if k in inspect.signature(entry.kernel.fn).parameters}
        try:
            kernels.append(tr.build_kernel(entry, mine))
        except TileirError:
            raise
        except RecursionError:
            raise tr.error(tr.current, "the kernel nests too deeply (recursive helper?)") from None
        except Exception as e:  # a frontend bug must still name the user's line
            raise tr.error(
                tr.current, f"internal error while translating this ({type(e).__name__}: {e})"
            ) from e
    return ModuleOp(kernels)
