"""The PyPTO emitter: `pto` IR -> a Python module of `@pypto.frontend.jit` kernels.

The output is written the way PyPTO-Gym kernels are written (`pypto.loop`, `view`,
`set_vec_tile_shapes`, `assemble` ...), so that a PyPTO developer can read it, the real
`pypto` package can compile it, and tileir's own frontend reads it back.

Every name in the output is either a sanitized identifier or a Python literal made by
`repr`, so no name, label or string attribute of the IR can inject code.

Where PyPTO 0.2.0 lacks an op, the emitter writes an equivalent and says so in a comment:
`tanh(x)` is `2*sigmoid(2x) - 1` (exact to ~2e-7), `erf(x)` is Abramowitz-Stegun 7.1.26
(absolute error below 1.5e-7).
"""

from __future__ import annotations

import builtins
import json
import keyword
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
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from tileir.diagnostics import TileirError, error_at
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.dialect.optable import BY_OP

INDENT = "    "
RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"pypto"}
_ENUM_PATH = re.compile(r"^pypto(\.[A-Za-z_][A-Za-z0-9_]*)+$")

_INDEX_BINARY = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.FloorDivSIOp: "//",
    arith.DivSIOp: "//",
    arith.DivUIOp: "//",
    arith.RemSIOp: "%",
}
_INDEX_CALL = {arith.MinSIOp: "pypto.min", arith.MaxSIOp: "pypto.max"}
_CAST_MODE = {m: f"pypto.CastMode.CAST_{m.upper()}" for m in pto.CAST_MODES}


def sanitize(name: str, fallback: str = "v") -> str:
    """A Python identifier close to `name` that is not a keyword or builtin."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    if ident in RESERVED:
        ident = f"{ident}_"
    return ident


def pystr(text: str) -> str:
    """A double-quoted Python string literal (JSON's escapes are Python's too)."""
    return json.dumps(text)


def dtype_expr(attr: Attribute) -> str:
    return f"pypto.{element_type(attr).pypto}"


def literal(attr: Attribute) -> str:
    """A Python literal for an attribute value of a jit option dict."""
    if isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
        return "True" if attr.value.data else "False"
    if isinstance(attr, IntegerAttr):
        return repr(int(attr.value.data))
    if isinstance(attr, FloatAttr):
        return repr(float(attr.value.data))
    if isinstance(attr, UnitAttr):
        return "True"
    if isinstance(attr, StringAttr):
        if _ENUM_PATH.match(attr.data):
            return attr.data
        return pystr(attr.data)
    if isinstance(attr, ArrayAttr):
        return "[" + ", ".join(literal(a) for a in attr.data) + "]"
    if isinstance(attr, DictionaryAttr):
        items = (f"{pystr(k)}: {literal(v)}" for k, v in attr.data.items())
        return "{" + ", ".join(items) + "}"
    raise TileirError(f"error: cannot write attribute {attr} as a Python literal")


@dataclass
class _KernelWriter:
    kernel: pto.KernelOp
    dynamic: dict[str, str]
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    exprs: dict[SSAValue, str] = field(default_factory=dict)
    helpers: set[str] = field(default_factory=set)

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
        """The Python expression of a value at a use."""
        if value in self.names:
            return self.names[value]
        if value in self.exprs:
            return self.exprs[value]
        op = value.owner
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            if isinstance(attr, FloatAttr):
                return repr(float(attr.value.data))
            if isinstance(attr, IntegerAttr):
                if attr.type == IntegerType(1):
                    return "True" if attr.value.data else "False"
                return repr(int(attr.value.data))
        if isinstance(op, Operation):
            raise error_at(op, f"emitter: '{op.name}' result used before it was written")
        raise TileirError("error: emitter: a value has no definition")

    def mixed(self, values: Sequence[int | SSAValue]) -> str:
        return "[" + ", ".join(str(v) if isinstance(v, int) else self.use(v) for v in values) + "]"

    def shape_of(self, type: Attribute, sizes: Sequence[SSAValue] = ()) -> str:
        assert isinstance(type, TensorType | MemRefType)
        it = iter(sizes)
        dims = [self.use(next(it)) if d == DYNAMIC_INDEX else str(d) for d in type.get_shape()]
        return "[" + ", ".join(dims) + "]"

    def line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    # ------------------------------------------------------------------ kernel

    def write(self) -> list[str]:
        k = self.kernel
        params = []
        for arg, name in zip(k.body.block.args, k.names):
            self.names[arg] = self.fresh(name, "arg")
            assert isinstance(arg.type, MemRefType)
            dyn = iter(k.dynamic_names(name))
            dims = [
                self.dynamic[next(dyn)] if d == DYNAMIC_INDEX else str(d)
                for d in arg.type.get_shape()
            ]
            annotation = f"pypto.Tensor([{', '.join(dims)}], {dtype_expr(arg.type.element_type)})"
            params.append(f"{self.names[arg]}: {annotation}")
        options = k.jit_options.data if k.jit_options is not None else {}
        kwargs = ", ".join(f"{sanitize(key)}={literal(v)}" for key, v in options.items())
        head = [f"@pypto.frontend.jit({kwargs})", f"def {sanitize(k.sym_name.data, 'kernel')}("]
        head += [f"{INDENT}{p}," for p in params] + ["):"]
        body_start = len(self.lines)
        self.block(k.body.block, 1)
        if len(self.lines) == body_start:
            self.line(1, "pass")
        return head + self.lines

    def block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    # ------------------------------------------------------------------ ops

    def op(self, op: Operation, depth: int) -> None:  # noqa: C901 - one dispatch
        if isinstance(op, arith.ConstantOp | pto.YieldOp | scf.YieldOp):
            return
        if isinstance(op, pto.TransferOp):
            self.names[op.result] = self.use(op.input)
            return
        if isinstance(op, tuple(_INDEX_BINARY)):
            sym = _INDEX_BINARY[type(op)]
            self.exprs[op.results[0]] = (
                f"({self.use(op.operands[0])} {sym} {self.use(op.operands[1])})"
            )
            return
        if isinstance(op, tuple(_INDEX_CALL)):
            fn = _INDEX_CALL[type(op)]
            self.exprs[op.results[0]] = (
                f"{fn}({self.use(op.operands[0])}, {self.use(op.operands[1])})"
            )
            return
        if isinstance(op, arith.CeilDivSIOp | arith.CeilDivUIOp):
            a, b = (self.use(v) for v in op.operands)
            self.exprs[op.results[0]] = f"(({a} + {b} - 1) // {b})"
            return
        if isinstance(op, arith.IndexCastOp):
            self.exprs[op.results[0]] = self.use(op.operands[0])
            return
        if isinstance(op, memref.DimOp | tensor.DimOp):
            src, idx = op.operands
            self.exprs[op.results[0]] = f"{self.use(src)}.shape[{self.use(idx)}]"
            return
        if isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            self.loop(op, depth)
            return
        if isinstance(op, scf.IfOp):
            self.if_(op, depth)
            return
        if isinstance(op, pto.IsLoopBeginOp | pto.IsLoopEndOp):
            fn = "is_loop_begin" if isinstance(op, pto.IsLoopBeginOp) else "is_loop_end"
            self.exprs[op.result] = f"pypto.{fn}({self.use(op.index)})"
            return
        if isinstance(op, pto.StageOp):
            self.stage(op, depth)
            return
        if type(op).__name__ == "StitchOp":
            for region in op.regions:
                self.block(region.block, depth)
            for res, val in zip(op.results, _yielded(op)):
                self.names[res] = self.use(val)
            return
        call = self.call(op)
        if call is None:
            raise error_at(op, f"the PyPTO emitter cannot write '{op.name}'")
        results = list(op.results)
        if not results:
            self.line(depth, call)
        else:
            targets = ", ".join(self.define(r) for r in results)
            self.line(depth, f"{targets} = {call}")

    def call(self, op: Operation) -> str | None:  # noqa: C901 - one dispatch
        u = self.use
        spec = BY_OP.get(type(op))
        if isinstance(op, pto.TanhOp | pto.ErfOp):
            name = BY_OP[type(op)].pypto
            self.helpers.add(name)
            return f"tileir_{name}({u(op.input)})"
        if spec is not None and spec.kind == "unary":
            return f"pypto.{spec.pypto}({u(op.operands[0])})"
        if spec is not None and spec.kind in ("binary", "compare"):
            lhs, rhs = op.operands
            if not isinstance(lhs.type, TensorType) and spec.python_operator in (
                "+",
                "-",
                "*",
                "/",
            ):
                # PyPTO's functions want the tile first; a scalar on the left is an operator.
                return f"({u(lhs)} {spec.python_operator} {u(rhs)})"
            return f"pypto.{spec.pypto}({u(lhs)}, {u(rhs)})"
        if isinstance(op, pto.ReduceOp):
            spec = BY_OP[type(op)]
            keep = ", keepdim=True" if op.keepdim is not None else ""
            return f"pypto.{spec.pypto}({u(op.input)}, dim={op.dim.value.data}{keep})"
        if isinstance(op, pto.TensorOp):
            t = op.result.type
            return f"pypto.tensor({self.shape_of(t)}, {dtype_expr(t.element_type)}, {pystr(op.buffer_name.data)})"
        if isinstance(op, pto.ViewOp):
            valid = op.mixed_valid_shape
            tail = f", valid_shape={self.mixed(valid)}" if valid is not None else ""
            return (
                f"pypto.view({u(op.source)}, {self.shape_of(op.result.type, op.sizes)}, "
                f"{self.mixed(op.mixed_offsets)}{tail})"
            )
        if isinstance(op, pto.AssembleOp):
            return f"pypto.assemble({u(op.src)}, {self.mixed(op.mixed_offsets)}, {u(op.dst)})"
        if isinstance(op, pto.ReshapeOp):
            valid = op.mixed_valid_shape
            extra = f", valid_shape={self.mixed(valid)}" if valid is not None else ""
            extra += ", inplace=True" if op.inplace is not None else ""
            return f"pypto.reshape({u(op.input)}, {self.shape_of(op.result.type)}{extra})"
        if isinstance(op, pto.TransposeOp):
            return f"pypto.transpose({u(op.input)}, {op.dim0.value.data}, {op.dim1.value.data})"
        if isinstance(op, pto.ConcatOp):
            parts = ", ".join(u(t) for t in op.tensors)
            return f"pypto.concat([{parts}], dim={op.dim.value.data})"
        if isinstance(op, pto.UnsqueezeOp):
            return f"pypto.unsqueeze({u(op.input)}, {op.dim.value.data})"
        if isinstance(op, pto.ExpandCloneOp):
            return f"pypto.expand_clone({u(op.input)}, {self.shape_of(op.result.type)})"
        if isinstance(op, pto.CastOp):
            args = [u(op.input), dtype_expr(op.result.type.element_type)]
            if op.mode.data != "none" or op.satmode is not None:
                args.append(_CAST_MODE[op.mode.data])
            if op.satmode is not None:
                args.append("pypto.SaturationMode.ON")
            return f"pypto.cast({', '.join(args)})"
        if isinstance(op, pto.FullOp):
            t = op.result.type
            valid = op.mixed_valid_shape
            tail = f", valid_shape={self.mixed(valid)}" if valid is not None else ""
            return (
                f"pypto.full({self.shape_of(t, op.sizes)}, {u(op.value)}, "
                f"{dtype_expr(t.element_type)}{tail})"
            )
        if isinstance(op, pto.WhereOp):
            return f"pypto.where({u(op.condition)}, {u(op.input)}, {u(op.other)})"
        if isinstance(op, pto.MatmulOp):
            args = [u(op.a), u(op.b), dtype_expr(op.result.type.element_type)]
            if op.a_trans is not None:
                args.append("a_trans=True")
            if op.b_trans is not None:
                args.append("b_trans=True")
            if op.bias is not None:
                args.append(f'extend_params={{"bias_tensor": {u(op.bias)}}}')
            return f"pypto.matmul({', '.join(args)})"
        if isinstance(op, pto.GathermaskOp):
            return f"pypto.gathermask({u(op.input)}, {op.pattern_mode.value.data})"
        if isinstance(op, pto.GatherOp | pto.IndexSelectOp):
            fn = BY_OP[type(op)].pypto
            return f"pypto.{fn}({u(op.input)}, {op.dim.value.data}, {u(op.index)})"
        if isinstance(op, pto.TopkOp):
            largest = "" if op.largest.value.data else ", largest=False"
            return f"pypto.topk({u(op.input)}, {op.k.value.data}, {op.dim.value.data}{largest})"
        if isinstance(op, pto.SetVecTileShapesOp):
            return f"pypto.set_vec_tile_shapes({', '.join(map(str, op.shape.get_values()))})"
        if isinstance(op, pto.SetCubeTileShapesOp):
            m, k, n = (list(getattr(op, x).get_values()) for x in ("m", "k", "n"))
            split = ", enable_split_k=True" if op.enable_split_k is not None else ""
            return f"pypto.set_cube_tile_shapes({m}, {k}, {n}{split})"
        if isinstance(op, pto.SetSemanticLabelOp):
            return f"pypto.set_semantic_label({pystr(op.label.data)})"
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
        hint = op.idx_name.data if op.idx_name is not None else None
        index = self.fresh(op.induction_var.name_hint or hint, "i")
        self.names[op.induction_var] = index
        fn = "loop"
        target = index
        if isinstance(op, pto.LoopUnrollOp):
            fn = "loop_unroll"
            target = f"{index}, {self.define(op.chunk_length, 'unroll_len')}"
        self.line(depth, f"for {target} in pypto.{fn}({', '.join(args + kw)}):")
        self.body(op.body.block, depth + 1)

    def body(self, block: Block, depth: int) -> None:
        start = len(self.lines)
        self.block(block, depth)
        if len(self.lines) == start:
            self.line(depth, "pass")

    def if_(self, op: scf.IfOp, depth: int) -> None:
        cond = op.cond.owner
        if not isinstance(cond, pto.IsLoopBeginOp | pto.IsLoopEndOp):
            raise error_at(
                op,
                "the PyPTO emitter can only write `if` on pypto.is_loop_begin / "
                "is_loop_end (PyPTO 0.2.0 rejects other conditions inside a jit kernel)",
            )
        results = [self.define(r) for r in op.results]
        self.line(depth, f"if {self.use(op.cond)}:")
        self.branch(op.true_region.block, results, depth + 1)
        if op.false_region.blocks and (op.false_region.block.ops or results):
            if not (len(op.false_region.block.ops) == 1 and not results):
                self.line(depth, "else:")
                self.branch(op.false_region.block, results, depth + 1)

    def branch(self, block: Block, results: list[str], depth: int) -> None:
        start = len(self.lines)
        self.block(block, depth)
        term = block.last_op
        if isinstance(term, scf.YieldOp):
            for name, value in zip(results, term.arguments):
                self.line(depth, f"{name} = {self.use(value)}")
        if len(self.lines) == start:
            self.line(depth, "pass")

    def stage(self, op: pto.StageOp, depth: int) -> None:
        if op.tile_shape is not None:
            shape = ", ".join(map(str, op.tile_shape.get_values()))
            self.line(depth, f"pypto.set_vec_tile_shapes({shape})")
        if op.cube_tile is not None:
            v = list(op.cube_tile.get_values())
            self.line(depth, f"pypto.set_cube_tile_shapes({v[0:2]}, {v[2:4]}, {v[4:6]})")
        if op.label is not None:
            self.line(depth, f"pypto.set_semantic_label({pystr(op.label.data)})")
        self.block(op.body.block, depth)
        for res, val in zip(op.outputs, _yielded(op)):
            self.names[res] = self.use(val)


def _yielded(op: Operation) -> list[SSAValue]:
    term = op.regions[0].block.last_op if op.regions and op.regions[0].blocks else None
    return list(term.operands) if term is not None else []


HELPERS = {
    "tanh": [
        "def tileir_tanh(x):",
        '    """PyPTO 0.2.0 has no tanh: 2 * sigmoid(2x) - 1, exact to ~2e-7."""',
        "    return pypto.sub(pypto.mul(pypto.sigmoid(pypto.mul(x, 2.0)), 2.0), 1.0)",
    ],
    "erf": [
        "def tileir_erf(x):",
        '    """PyPTO 0.2.0 has no erf: Abramowitz-Stegun 7.1.26, absolute error < 1.5e-7."""',
        "    t = pypto.reciprocal(pypto.add(pypto.mul(pypto.abs(x), 0.3275911), 1.0))",
        "    poly = pypto.mul(pypto.add(pypto.mul(t, 1.061405429), -1.453152027), t)",
        "    poly = pypto.mul(pypto.add(poly, 1.421413741), t)",
        "    poly = pypto.mul(pypto.add(poly, -0.284496736), t)",
        "    poly = pypto.mul(pypto.add(poly, 0.254829592), t)",
        "    tail = pypto.mul(poly, pypto.exp(pypto.neg(pypto.mul(x, x))))",
        "    return pypto.mul(pypto.sign(x), 1.0 - tail)",
    ],
}
"""Plain Python helpers for ops PyPTO 0.2.0 lacks; PyPTO's frontend inlines them."""


def emit_module(module: ModuleOp, source: str | None = None) -> str:
    """The Python source of a module holding one jit function per `pto.kernel`."""
    kernels = [op for op in module.walk() if isinstance(op, pto.KernelOp)]
    if not kernels:
        raise TileirError("error: the module has no pto.kernel to emit")
    dynamic: dict[str, str] = {}
    for k in kernels:
        for name in k.names:
            for sym in k.dynamic_names(name):
                dynamic.setdefault(sym, sanitize(sym, "dim"))
    header = [
        '"""PyPTO kernels generated by tileir'
        + (f" from {pystr(source)}" if source else "")
        + '."""',
        "",
        "import pypto",
        "",
    ]
    for sym, var in dynamic.items():
        header.append(f"{var} = pypto.frontend.dynamic({pystr(sym)})")
    if dynamic:
        header.append("")
    taken = set(dynamic.values()) | {f"tileir_{h}" for h in HELPERS}
    body: list[str] = []
    helpers: set[str] = set()
    for k in kernels:
        writer = _KernelWriter(k, dynamic, taken=taken | {sanitize(k.sym_name.data, "kernel")})
        body += ["", "", *writer.write()]
        helpers |= writer.helpers
    for name in sorted(helpers):
        header += ["", *HELPERS[name], ""]
    return "\n".join(header + body).rstrip("\n") + "\n"


@dataclass(frozen=True)
class PyptoTarget(Target):
    """`-t pypto`: print the module as PyPTO Python."""

    name: ClassVar[str] = "pypto"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_module(module))
