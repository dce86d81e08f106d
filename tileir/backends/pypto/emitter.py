"""The PyPTO emitter: `pto` IR -> a Python module of `@pypto.frontend.jit` kernels.

The output is written the way PyPTO-Gym kernels are written (`pypto.loop`, `view`,
`set_vec_tile_shapes`, `assemble` ...), so that a PyPTO developer can read it, the real
`pypto==0.2.0` package compiles it, and tileir's own frontend reads it back.

Emitting is two steps:

1. `pypto-legalize` (`tileir.backends.pypto.legalize`, on a clone) turns the structure
   that only tileir has into PyPTO's flat, statement-ordered form and adds the settings
   PyPTO 0.2.0 needs; its output is verified.

2. The writer prints the flat IR, one Python statement per op in program order; each
   op is written by its binding (`tileir.bindings`), which also names the module-level
   helper functions that work around PyPTO 0.2.0 (`tileir_tanh` ...). Index arithmetic
   gets its own statements too, so that the frontend rebuilds it in the same order;
   constants and reads of fixed facts (`x.shape[0]`, `pypto.is_loop_begin(i)`,
   comparisons) are inlined where used, in parentheses where Python's precedence would
   otherwise regroup them (`(i < 1) * t`). A whole-tensor view used only by the next op
   is written as the tensor's name (`pypto.maximum(mi, m)`), which is how the frontend
   reads that name.

An `if` is written as the user wrote it: on `pypto.is_loop_begin / is_loop_end`
(written in the `if` itself, as PyPTO requires), on a comparison of `pypto.loop_unroll`
chunk lengths with constants (Python ints while PyPTO traces each factor), or on a
run-time condition (a comparison of loop indices, sizes or element reads), which PyPTO
0.2.0 traces once per branch and runs as written (measured: inside and outside a
`pypto.loop`, with and without values leaving the branches, nested).

Not worked around: `pypto.concat` of tail tiles drops the valid shape, and assembling
the result then fails; kernels must re-window it with `pypto.view(..., valid_shape=)`
themselves (the seed kernels do), because the emitter cannot always name the valid
shape of a concat result.

Names: every name in the output is a sanitized identifier or a string literal written
by `json.dumps`, so no name, label or string attribute of the IR can inject code.
Jit option dictionaries are written back as Python literals: strings of the form
`pypto.X.Y` are PyPTO enum members (the frontend stores `pypto.RunMode.NPU` so), `None`
is a unit attribute, and dictionary keys that spell an integer are integers (the
frontend stores keys as strings; PyPTO's `pass_options` such as
`cube_l1_reuse_setting` are keyed by ints).
"""

from __future__ import annotations

import json
import keyword
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from tileir.backends.pypto.legalize import lower_for_pypto, regions_of
from tileir.bindings import BY_OP, HELPER_OPS, HELPERS
from tileir.bindings import index as index_ops
from tileir.diagnostics import TileirError, error_at
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type

__all__ = [
    "HELPER_OPS",
    "PyptoTarget",
    "emit",
    "emit_module",
    "lower_for_pypto",
    "sanitize",
]

INDENT = "    "
RESERVED = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | {
        "pypto",
        "float",
        "__debug__",
    }
)
"""Names the emitted code must not rebind: keywords, `__debug__` (Python refuses to bind
it), the module, and `float` (used for infinities). Other builtins may be shadowed: the emitted code never calls them."""

_ENUM_PATH = re.compile(r"^pypto(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_INT_KEY = re.compile(r"^-?[0-9]+$")

# =========================================================================== names


def sanitize(name: str, fallback: str = "v") -> str:
    """A Python identifier close to `name` that the emitted code may bind."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    if ident in RESERVED:
        ident = f"{ident}_"
    return ident


def pystr(text: str) -> str:
    """A double-quoted Python string literal (JSON's escapes are Python's too)."""
    return json.dumps(text)


def pyfloat(value: float, type: Attribute | None = None) -> str:
    """A Python literal for a float, including infinities and NaN. A value of a narrow
    float `type` that it holds exactly is written in the shortest form that rounds back
    to it at that precision (`1e-06`, not `9.999999974752427e-07`)."""
    if not math.isfinite(value):
        return f'float("{value}")'
    if type is not None:
        try:
            scalar = element_type(type).numpy.type
        except (KeyError, TileirError):
            scalar = None
        if scalar is not None and float(scalar(value)) == value:
            short = str(scalar(value))
            if float(scalar(float(short))) == value:
                return short if any(c in short for c in ".en") else f"{short}.0"
    return repr(value)


def dtype_expr(attr: Attribute) -> str:
    return f"pypto.{element_type(attr).pypto}"


def literal(attr: Attribute) -> str:
    """A Python literal for an attribute value of a jit option dict (see the module
    docstring for how enum members, None and integer keys are written)."""
    if isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
        return "True" if attr.value.data else "False"
    if isinstance(attr, IntegerAttr):
        return repr(int(attr.value.data))
    if isinstance(attr, FloatAttr):
        return pyfloat(float(attr.value.data))
    if isinstance(attr, UnitAttr):
        return "None"
    if isinstance(attr, StringAttr):
        if _ENUM_PATH.match(attr.data):
            return attr.data
        return pystr(attr.data)
    if isinstance(attr, ArrayAttr):
        return "[" + ", ".join(literal(a) for a in attr.data) + "]"
    if isinstance(attr, DictionaryAttr):
        items = (
            f"{k if _INT_KEY.match(k) else pystr(k)}: {literal(v)}" for k, v in attr.data.items()
        )
        return "{" + ", ".join(items) + "}"
    raise TileirError(f"error: cannot write the jit option value {attr} as a Python literal")


# =========================================================================== writer


def _may_be_partial(value: SSAValue, memo: dict[SSAValue, bool]) -> bool:
    """Whether a tile may have a valid shape smaller than its shape at run time: it
    comes (through any chain of ops) from a view, full or reshape with `valid`."""
    if value in memo:
        return memo[value]
    memo[value] = False
    owner = value.owner
    result = False
    if isinstance(owner, pto.ViewOp | pto.FullOp | pto.ReshapeOp) and (
        owner.mixed_valid_shape is not None
    ):
        result = True
    elif isinstance(owner, scf.IfOp):
        idx = owner.results.index(value)
        for block in regions_of(owner):
            term = block.last_op
            if isinstance(term, scf.YieldOp) and _may_be_partial(term.operands[idx], memo):
                result = True
    elif isinstance(owner, Operation):
        result = any(
            isinstance(o.type, TensorType) and _may_be_partial(o, memo) for o in owner.operands
        )
    memo[value] = result
    return result


def _written_shape(memory: SSAValue) -> tuple[int | None, ...]:
    """The shape a memref value has in the emitted Python: a workspace's `?` dims sized
    by constants are written as those numbers (`pypto.tensor([1, 64], ...)`), so they are
    static there (and when the file is read back); other `?` dims are None."""
    shape = tuple(memory.type.get_shape())
    if DYNAMIC_INDEX not in shape:
        return shape
    if not isinstance(memory.owner, pto.TensorOp):
        return tuple(None if d == DYNAMIC_INDEX else d for d in shape)
    sizes = iter(memory.owner.sizes)
    return tuple(pto.constant_index(next(sizes)) if d == DYNAMIC_INDEX else d for d in shape)


def _whole_tensor_read(op: Operation) -> bool:
    """A view of a whole tensor (offset 0, same shape, no valid shape) used once, by
    the very next op: the frontend's reading of a tensor name used as a tile, so it is
    written as the name."""
    if not isinstance(op, pto.ViewOp) or not isinstance(op.source.type, MemRefType):
        return False
    if op.sizes or op.mixed_valid_shape is not None or any(o != 0 for o in op.mixed_offsets):
        return False
    if _written_shape(op.source) != tuple(op.result.type.get_shape()):
        return False
    uses = list(op.result.uses)
    return len(uses) == 1 and uses[0].operation is op.next_op


PYTHON_MAX_LOOPS = 20
"""Python compiles at most 20 nested `for` loops in a function ("too many statically
nested blocks")."""
PYTHON_MAX_BLOCKS = 98
"""... and at most 98 nested blocks of any kind ("too many levels of indentation")."""


def _check_python_nesting(kernel: pto.KernelOp) -> None:
    """Refuse, at the op, nesting the emitted Python could not compile."""
    for op in kernel.walk():
        if not op.regions or op is kernel:
            continue
        loops = blocks = 0
        current: Operation | None = op
        while current is not None and current is not kernel:
            loops += isinstance(current, pto.LoopOp | pto.LoopUnrollOp)
            blocks += bool(current.regions)
            current = current.parent_op()
        if loops > PYTHON_MAX_LOOPS:
            raise error_at(
                op,
                f"the PyPTO emitter can write at most {PYTHON_MAX_LOOPS} nested loops "
                "(Python's limit on nested blocks); this loop is nested deeper",
            )
        if blocks > PYTHON_MAX_BLOCKS:
            raise error_at(
                op,
                f"the PyPTO emitter can write at most {PYTHON_MAX_BLOCKS} nested loops and "
                "ifs (Python's indentation limit); this op is nested deeper",
            )


@dataclass
class _KernelWriter:
    kernel: pto.KernelOp
    dynamic: dict[str, str]
    taken: set[str]
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    exprs: dict[SSAValue, index_ops.Expr] = field(default_factory=dict)
    """Values written where used: their expression and its precedence."""
    helpers: set[str] = field(default_factory=set)
    partial: dict[SSAValue, bool] = field(default_factory=dict)
    current: Operation | None = None
    """The op being written (for the location of an error)."""

    # ------------------------------------------------------------------ names

    def fresh(self, hint: str | None, fallback: str = "t") -> str:
        base = sanitize(hint, fallback) if hint else fallback
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def define(self, value: SSAValue, fallback: str = "t") -> str:
        name = self.fresh(value.name_hint, fallback)
        self.names[value] = name
        return name

    def use(self, value: SSAValue) -> str:
        """The Python expression of a value at a use (as a call argument)."""
        return self.expr(value)[0]

    def expr(self, value: SSAValue) -> index_ops.Expr:
        """The Python expression of a value at a use, with its precedence."""
        if value in self.names:
            return self.names[value], index_ops.ATOM
        if value in self.exprs:
            return self.exprs[value]
        op = value.owner
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            if isinstance(attr, FloatAttr):
                return index_ops.number(pyfloat(float(attr.value.data), attr.type))
            if isinstance(attr, IntegerAttr):
                if attr.type == IntegerType(1):
                    return ("True" if attr.value.data else "False"), index_ops.ATOM
                return index_ops.number(repr(int(attr.value.data)))
        if isinstance(op, Operation):
            raise error_at(op, f"the PyPTO emitter cannot write a use of '{op.name}' here")
        raise error_at(self.kernel, "the PyPTO emitter met a value defined outside the kernel")

    def mixed(self, values: Sequence[int | SSAValue]) -> str:
        return "[" + ", ".join(str(v) if isinstance(v, int) else self.use(v) for v in values) + "]"

    def shape_of(self, type: Attribute, sizes: Sequence[SSAValue] = ()) -> str:
        """`[8, n]`: a shape whose `?` dims are the `sizes` operands, in order."""
        assert isinstance(type, TensorType | MemRefType)
        if list(type.get_shape()).count(DYNAMIC_INDEX) > len(sizes):
            op = self.current
            name = op.name if op is not None else "this op"
            raise error_at(
                op or self.kernel,
                f"the PyPTO emitter cannot write '{name}' with the dynamic result type "
                f"{type}: the op holds no size for its '?' dims, and PyPTO 0.2.0 needs "
                "them as sizes; make the result shape static",
            )
        it = iter(sizes)
        dims = [self.use(next(it)) if d == DYNAMIC_INDEX else str(d) for d in type.get_shape()]
        return "[" + ", ".join(dims) + "]"

    def dtype(self, type: Attribute) -> str:
        """`pypto.DT_FP32`: the element type of a tensor / memref type."""
        assert isinstance(type, TensorType | MemRefType)
        return dtype_expr(type.get_element_type())

    def string(self, text: str) -> str:
        return pystr(text)

    def helper(self, name: str) -> None:
        """Write the module-level helper `name` (a binding's work-around) once."""
        self.helpers.add(name)

    def may_be_partial(self, value: SSAValue) -> bool:
        return _may_be_partial(value, self.partial)

    def line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    # ------------------------------------------------------------------ kernel

    def write(self) -> list[str]:
        k = self.kernel
        _check_python_nesting(k)
        params = []
        for arg, name in zip(k.body.block.args, k.names, strict=True):
            self.names[arg] = self.fresh(name, "arg")
            assert isinstance(arg.type, MemRefType)
            dyn = iter(k.dynamic_names(name))
            dims = [
                self.dynamic[next(dyn)] if d == DYNAMIC_INDEX else str(d)
                for d in arg.type.get_shape()
            ]
            dims = _as_written(k, name, dims)
            annotation = f"pypto.Tensor([{', '.join(dims)}], {dtype_expr(arg.type.element_type)}"
            fmt = k.attributes.get("tensor_formats")
            if isinstance(fmt, DictionaryAttr) and isinstance(fmt.data.get(name), StringAttr):
                annotation += f", format={_pypto_name(fmt.data[name].data)}"
            annotation += ")"
            params.append(f"{self.names[arg]}: {annotation}")
        options = k.jit_options.data if k.jit_options is not None else {}
        keys: dict[str, str] = {}
        for key in options:
            if keys.setdefault(sanitize(key), key) != key:
                raise error_at(
                    k,
                    f"jit options {keys[sanitize(key)]!r} and {key!r} would both be the "
                    f"keyword `{sanitize(key)}` in Python",
                )
        kwargs = ", ".join(f"{sanitize(key)}={literal(v)}" for key, v in options.items())
        head = [f"@pypto.frontend.jit({kwargs})", f"def {sanitize(k.sym_name.data, 'kernel')}("]
        head += [f"{INDENT}{p}," for p in params] + ["):"]
        self.cache_policies()
        self.body(k.body.block, 1)
        return head + self.lines

    def cache_policies(self) -> None:
        """`x.set_cache_policy(pypto.CachePolicy.P, flag)` for the kernel's
        `cache_policies`, first in the body (a property of the argument for PyPTO's
        compiler); policies PyPTO 0.2.0 lacks are named in a comment instead."""
        table = self.kernel.attributes.get("cache_policies")
        if not isinstance(table, DictionaryAttr):
            return
        args = dict(zip(self.kernel.names, self.kernel.body.block.args, strict=True))
        for name, policies in table.data.items():
            if name not in args or not isinstance(policies, DictionaryAttr):
                raise error_at(self.kernel, f"cache_policies names no argument {name!r}")
            for policy, flag in policies.data.items():
                member = _pypto_name(policy)
                value = "True" if isinstance(flag, IntegerAttr) and flag.value.data else "False"
                if member.removeprefix("pypto.CachePolicy.") in PYPTO_020_CACHE_POLICIES:
                    self.line(1, f"{self.names[args[name]]}.set_cache_policy({member}, {value})")
                else:
                    self.line(1, f"# tileir: PyPTO 0.2.0 has no {member}: left out")

    def body(self, block: Block, depth: int) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.op(op, depth)
        if len(self.lines) == start:
            self.line(depth, "pass")

    # ------------------------------------------------------------------ ops

    def op(self, op: Operation, depth: int) -> None:
        if isinstance(op, arith.ConstantOp | pto.YieldOp | scf.YieldOp):
            return
        self.current = op
        index = self.index_expr(op)
        if index is not None:
            result = op.results[0]
            if isinstance(
                op,
                memref.DimOp | tensor.DimOp | pto.IsLoopBeginOp | pto.IsLoopEndOp | arith.CmpiOp,
            ):
                # Reads of fixed facts, written where used (the frontend reads sizes once).
                self.exprs[result] = index
            else:
                self.line(depth, f"{self.define(result, 'idx')} = {index[0]}")
            return
        if isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            self.loop(op, depth)
            return
        if isinstance(op, scf.IfOp):
            self.if_(op, depth)
            return
        if isinstance(op, pto.StageOp | pto.StitchOp | pto.TransferOp):
            raise error_at(op, f"'{op.name}' must be lowered first (use emit_module)")
        if _whole_tensor_read(op):
            # `pypto.maximum(mi, x)`: PyPTO reads a global tensor used as a tile whole,
            # and an explicit full view next to a branch write fails with F21007.
            self.exprs[op.results[0]] = self.expr(op.operands[0])
            return
        binding = BY_OP.get(type(op))
        if binding is None:
            raise error_at(op, f"the PyPTO emitter cannot write '{op.name}'")
        call = binding.write(self, op)
        results = list(op.results)
        if not results:
            self.line(depth, call)
        else:
            targets = ", ".join(
                self.define(r, "idx" if isinstance(r.type, IndexType) else "t") for r in results
            )
            self.line(depth, f"{targets} = {call}")

    def index_expr(self, op: Operation) -> index_ops.Expr | None:
        """The Python expression of a scalar (index / i1) op, or None for other ops."""
        if type(op) in index_ops.OPERATORS:
            a, b = op.operands
            return index_ops.binary(index_ops.OPERATORS[type(op)], self.expr(a), self.expr(b))
        if type(op) in index_ops.FUNCTIONS:
            a, b = op.operands
            return f"pypto.{index_ops.FUNCTIONS[type(op)]}({self.use(a)}, {self.use(b)})", (
                index_ops.ATOM
            )
        if isinstance(op, arith.CmpiOp):
            a, b = op.operands
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            if pred not in index_ops.BY_PREDICATE:
                raise error_at(op, f"the PyPTO emitter cannot write the comparison '{pred}'")
            return index_ops.binary(index_ops.BY_PREDICATE[pred], self.expr(a), self.expr(b))
        if isinstance(op, arith.IndexCastOp):
            return self.expr(op.operands[0])
        if isinstance(op, arith.ExtUIOp) and op.operands[0].type == i1:
            # a comparison used as a number: PyPTO's comparison is a 0 / 1 symbolic scalar
            return self.expr(op.operands[0])
        if isinstance(op, memref.DimOp | tensor.DimOp):
            src, idx = op.operands
            return f"{self.use(src)}.shape[{self.use(idx)}]", index_ops.ATOM
        if isinstance(op, pto.IsLoopBeginOp | pto.IsLoopEndOp):
            return BY_OP[type(op)].write(self, op), index_ops.ATOM
        return None

    # ------------------------------------------------------------------ structure

    def loop(self, op: pto.LoopOp | pto.LoopUnrollOp, depth: int) -> None:
        args = [self.use(op.lower_bound), self.use(op.upper_bound), self.use(op.step)]
        if args[2] == "1":
            args.pop()
            if args[0] == "0":
                args.pop(0)
        kw = []
        if op.loop_name is not None:
            kw.append(f"name={pystr(op.loop_name.data)}")
        if op.idx_name is not None:
            kw.append(f"idx_name={pystr(op.idx_name.data)}")
        if op.unroll_list is not None:
            kw.append(f"unroll_list={op.factors}")
        if op.parallel is not None:
            # 0.2.0's loop takes **kwargs and ignores `parallel`: kept for newer PyPTO
            kw.append("parallel=True")
        hint = op.idx_name.data if op.idx_name is not None else None
        target = self.fresh(op.induction_var.name_hint or hint, "i")
        self.names[op.induction_var] = target
        fn = "loop"
        if isinstance(op, pto.LoopUnrollOp):
            fn = "loop_unroll"
            target = f"{target}, {self.define(op.chunk_length, 'unroll_len')}"
        self.line(depth, f"for {target} in pypto.{fn}({', '.join(args + kw)}):")
        self.body(op.body.block, depth + 1)

    def if_(self, op: scf.IfOp, depth: int) -> None:
        results = [self.define(r) for r in op.results]
        self.line(depth, f"if {self.use(op.cond)}:")
        self.branch(op.true_region.block, results, depth + 1)
        if op.false_region.blocks:
            block = op.false_region.block
            if results or any(not isinstance(o, scf.YieldOp) for o in block.ops):
                self.line(depth, "else:")
                self.branch(block, results, depth + 1)

    def branch(self, block: Block, results: list[str], depth: int) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.op(op, depth)
        term = block.last_op
        if isinstance(term, scf.YieldOp):
            for name, value in zip(results, term.arguments, strict=True):
                self.line(depth, f"{name} = {self.use(value)}")
        if len(self.lines) == start:
            self.line(depth, "pass")


# =========================================================================== module


def emit_module(module: ModuleOp, source: str | None = None) -> str:
    """The Python source of a module holding one jit function per `pto.kernel` of
    `module` (after `lower_for_pypto`); `source` names the input in the docstring."""
    flat = lower_for_pypto(module)
    kernels = [op for op in flat.walk() if isinstance(op, pto.KernelOp)]
    if not kernels:
        raise TileirError("error: the module has no pto.kernel to emit")
    taken = set(HELPER_OPS) | RESERVED
    kernel_names = []
    for k in kernels:
        name = sanitize(k.sym_name.data, "kernel")
        if name in taken:
            raise error_at(k, f"two kernels would both be named `{name}` in Python")
        taken.add(name)
        kernel_names.append(name)
    dynamic: dict[str, str] = {}
    for k in kernels:
        for arg in k.names:
            for sym in k.dynamic_names(arg):
                if sym not in dynamic:
                    var, n = sanitize(sym, "dim"), 1
                    while var in taken:
                        n += 1
                        var = f"{sanitize(sym, 'dim')}_{n}"
                    taken.add(var)
                    dynamic[sym] = var
    chunks: list[list[str]] = []
    helpers: set[str] = set()
    for k in kernels:
        writer = _KernelWriter(k, dynamic, taken=set(taken))
        chunks.append(writer.write())
        helpers |= writer.helpers
    doc = "PyPTO kernels generated by tileir" + (f" from {source}" if source else "") + "."
    lines = [f'"""{pystr(doc)[1:-1]}"""', "", "import pypto"]
    if dynamic:
        lines.append("")
        lines += [f"{var} = pypto.frontend.dynamic({pystr(sym)})" for sym, var in dynamic.items()]
    for name in sorted(helpers):
        lines += ["", "", *HELPERS[name].lines]
    for chunk in chunks:
        lines += ["", "", *chunk]
    text = "\n".join(lines) + "\n"
    try:
        compile(text, "<tileir-emitted>", "exec", dont_inherit=True)
    except SyntaxError as e:  # a bug of this emitter, never of the input
        raise TileirError(f"error: the PyPTO emitter wrote invalid Python: {e}") from None
    return text


def emit(module: ModuleOp) -> str:
    """The PyPTO Python source of `module`: `tileir-opt FILE -t pypto` as an API."""
    return emit_module(module)


@dataclass(frozen=True)
class PyptoTarget(Target):
    """`-t pypto`: print the module as PyPTO Python."""

    name: ClassVar[str] = "pypto"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_module(module))


PYPTO_020_CACHE_POLICIES = frozenset({"NONE_CACHEABLE"})
"""The `pypto.CachePolicy` members of PyPTO 0.2.0 (its `pypto_impl.pyi`)."""


def _pypto_name(dotted: str) -> str:
    """A `pypto.X.Y` name kept in the IR, checked before it is written as code."""
    if not dotted.startswith("pypto.") or not all(p.isidentifier() for p in dotted.split(".")):
        raise TileirError(f"error: {dotted!r} is not a pypto name")
    return dotted


def _as_written(k: pto.KernelOp, name: str, dims: list[str]) -> list[str]:
    """A kernel argument's dims as its source wrote them (`shape_annotations`, which the
    frontend keeps for `pypto.STATIC` / `pypto.DYNAMIC` / `...` / `[]` annotations): PyPTO
    then specialises the emitted kernel to the call as it did the original."""
    written = k.attributes.get("shape_annotations")
    if not isinstance(written, DictionaryAttr) or name not in written.data:
        return dims
    tokens = written.data[name]
    assert isinstance(tokens, ArrayAttr)
    out: list[str] = []
    for i, t in enumerate(tokens.data):
        text = t.data if isinstance(t, StringAttr) else ""
        if text == "...":
            return [*out, "..."]
        if text == "":
            out.append(dims[i])
        elif text.isdigit():
            out.append(text)
        else:
            out.append(_pypto_name(text))
    return out
