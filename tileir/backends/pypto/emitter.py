"""The PyPTO emitter: `pto` IR -> a Python module of `@pypto.frontend.jit` kernels.

The output is written the way PyPTO-Gym kernels are written (`pypto.loop`, `view`,
`set_vec_tile_shapes`, `assemble` ...), so that a PyPTO developer can read it, the real
`pypto==0.2.0` package compiles it, and tileir's own frontend reads it back.

Emitting is two steps:

1. `lower_for_pypto(module)` (IR -> IR, on a clone) turns the structure that only tileir
   has into PyPTO's flat, statement-ordered form, and adds the settings PyPTO 0.2.0
   needs:

   - `pto.stage` / `pto.stitch` bodies are inlined (their results become the yielded
     values), `pto.transfer` is the identity. A stage's `label` / `tile` / `cube`
     attributes become `set_semantic_label` / `set_vec_tile_shapes` /
     `set_cube_tile_shapes` statements right before the stage's first tile op, but only
     where that setting is not already in force there (the user's own settings inside
     the stage body count; at the top of a loop body nothing counts as in force, since
     PyPTO traces a body once per unroll factor). The stitch group size goes to PyPTO through the kernel's
     `jit_options.runtime_options.stitch_function_max_num`, which the `stitch` pass sets.
   - PyPTO 0.2.0 fails with only `Run pass failed` when the vector tile shape in force
     has a different rank than an op's result. Before every tile op (except `view`,
     `reshape` and the Cube's `matmul`, which PyPTO does not check) whose rank differs
     from the shape in force, a `set_vec_tile_shapes` is inserted: the user's last
     shape cut to its last dims or padded with leading 1s (the last dim, which the
     32-byte rule is about, is kept), or the result shape where the user set none.
     Within a loop body the shape in force at the top is the one before the loop, and,
     when the body changes it, also the one at the end of the body (PyPTO traces the
     body once per unroll factor with the settings left by the previous trace).

2. The writer prints the flat IR, one Python statement per op in program order. Index
   arithmetic gets its own statements too, so that the frontend rebuilds it in the same
   order; constants are inlined. A whole-tensor write (`assemble` at offset 0 of a tile
   of the tensor's shape) is written `dst[:] = t`, as the seed kernels write it: PyPTO
   0.2.0 rejects the equal `assemble` into a workspace written in both branches of an
   `if` (`F21007 Operation already in a group`). A whole-tensor view used only by the
   next op is written as the tensor's name (`pypto.maximum(mi, m)`), which is how the
   frontend reads that name.

Where PyPTO 0.2.0 lacks an op or gets it wrong, a plain module-level helper (PyPTO's
frontend inlines plain Python functions) is written and called instead, and tileir's
frontend reads the call back as the op (`HELPER_OPS`):

- `tileir_tanh(x)`: no `pypto.tanh`; `2 / (1 + exp(-2x)) - 1` (relative error ~2e-7);
- `tileir_erf(x)`: no `pypto.erf`; Abramowitz-Stegun 7.1.26 (absolute error < 1.5e-7);
- `tileir_sigmoid(x)` for a tile that may be a tail tile: `pypto.sigmoid` builds a
  ones tensor of the full tile shape and fails (`DIVOpError`) when the valid shape is
  smaller; `reciprocal(1 + exp(-x))` has no such tensor and is exact to 1 ulp.

An `if` is written only on `pypto.is_loop_begin / is_loop_end` (written in the `if`
itself, as PyPTO requires) or on a comparison of `pypto.loop_unroll` chunk lengths with
constants (Python ints while PyPTO traces each factor); any other condition, such as
the `arith.cmpi` that `loop-unroll` makes of `is_loop_begin` on a loop with dynamic
bounds, is a located error: PyPTO 0.2.0 has no run-time `if` inside a kernel.

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
from collections.abc import Iterator, Sequence
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
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.target import Target

from tileir.diagnostics import TileirError, error_at
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.dialect.optable import BY_OP, HELPER_OPS

__all__ = [
    "HELPER_OPS",
    "PyptoTarget",
    "emit",
    "emit_module",
    "lower_for_pypto",
    "sanitize",
]

INDENT = "    "
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"pypto", "float"}
"""Names the emitted code must not rebind: keywords, the module, and `float` (used for
infinities). Other builtins may be shadowed: the emitted code never calls them."""

_ENUM_PATH = re.compile(r"^pypto(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_INT_KEY = re.compile(r"^-?[0-9]+$")

HELPERS: dict[str, list[str]] = {
    "tileir_tanh": [
        "def tileir_tanh(x):",
        '    """tanh(x) = 2 / (1 + exp(-2x)) - 1 (PyPTO 0.2.0 has no tanh)."""',
        "    e = pypto.exp(pypto.mul(x, -2.0))",
        "    return pypto.sub(pypto.mul(pypto.reciprocal(pypto.add(e, 1.0)), 2.0), 1.0)",
    ],
    "tileir_erf": [
        "def tileir_erf(x):",
        '    """erf by Abramowitz-Stegun 7.1.26, |error| < 1.5e-7 (PyPTO 0.2.0 has no erf)."""',
        "    t = pypto.reciprocal(pypto.add(pypto.mul(pypto.abs(x), 0.3275911), 1.0))",
        "    poly = pypto.add(pypto.mul(t, 1.061405429), -1.453152027)",
        "    poly = pypto.add(pypto.mul(poly, t), 1.421413741)",
        "    poly = pypto.add(pypto.mul(poly, t), -0.284496736)",
        "    poly = pypto.add(pypto.mul(poly, t), 0.254829592)",
        "    tail = pypto.mul(pypto.mul(poly, t), pypto.exp(pypto.neg(pypto.mul(x, x))))",
        "    return pypto.mul(pypto.sign(x), pypto.add(pypto.neg(tail), 1.0))",
    ],
    "tileir_sigmoid": [
        "def tileir_sigmoid(x):",
        '    """sigmoid of a tile that may be a tail tile: 1 / (1 + exp(-x)) (PyPTO 0.2.0\'s',
        '    sigmoid builds a ones tensor of the full tile shape and fails on tails)."""',
        "    return pypto.reciprocal(pypto.add(pypto.exp(pypto.neg(x)), 1.0))",
    ],
}
"""Plain Python helpers for ops PyPTO 0.2.0 lacks or gets wrong; PyPTO's frontend
inlines them."""

_INDEX_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.FloorDivSIOp: "//",
    arith.RemSIOp: "%",
}
_INDEX_CALL: dict[type[Operation], str] = {
    arith.MinSIOp: "pypto.min",
    arith.MaxSIOp: "pypto.max",
    arith.CeilDivSIOp: "pypto.ceildiv",
}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
_CAST_MODE = {m: f"pypto.CastMode.CAST_{m.upper()}" for m in pto.CAST_MODES}

_RANK_EXEMPT = (pto.ViewOp, pto.ReshapeOp, pto.MatmulOp, pto.TransferOp)
"""Tile ops whose result rank PyPTO 0.2.0 does not check against the vector tile shape
(the seed kernels view and reshape across ranks; matmul runs on the Cube tiles)."""

_SETTINGS = (pto.SetVecTileShapesOp, pto.SetCubeTileShapesOp, pto.SetSemanticLabelOp)


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


# =========================================================================== lowering


_UNKNOWN = ("?",)
"""A setting whose value differs between the ways control can reach a point."""


@dataclass
class _Settings:
    """The settings in force at a point of the program, as PyPTO traces it."""

    vec: tuple = ()
    cube: tuple = ()
    label: tuple = ()

    def copy(self) -> _Settings:
        return _Settings(self.vec, self.cube, self.label)

    def apply(self, op: Operation) -> bool:
        if isinstance(op, pto.SetVecTileShapesOp):
            self.vec = tuple(op.shape.get_values())
        elif isinstance(op, pto.SetCubeTileShapesOp):
            self.cube = _cube_values(op)
        elif isinstance(op, pto.SetSemanticLabelOp):
            self.label = (op.label.data,)
        else:
            return False
        return True

    def join(self, other: _Settings) -> _Settings:
        def meet(a: tuple, b: tuple) -> tuple:
            return a if a == b else _UNKNOWN

        return _Settings(
            meet(self.vec, other.vec), meet(self.cube, other.cube), meet(self.label, other.label)
        )


def _cube_values(op: pto.SetCubeTileShapesOp) -> tuple:
    vals = [*op.m.get_values(), *op.k.get_values(), *op.n.get_values()]
    return (*vals, op.enable_split_k is not None)


def _is_tile_op(op: Operation) -> bool:
    """An op that works on tiles (a unit op in PyPTO's sense): it has a tensor operand
    or result and is not a setting, a transfer or a region."""
    if isinstance(op, _SETTINGS) or op.regions:
        return False
    values = [*op.operands, *op.results]
    return any(isinstance(v.type, TensorType) for v in values)


def _regions_of(op: Operation) -> Iterator[Block]:
    for region in op.regions:
        yield from region.blocks


def _flatten(block: Block, state: _Settings) -> _Settings:
    """Inline the stages and stitch groups of `block` (see `lower_for_pypto`)."""
    for op in list(block.ops):
        if state.apply(op):
            continue
        if isinstance(op, pto.TransferOp):
            op.result.replace_all_uses_with(op.input)
            Rewriter.erase_op(op)
        elif isinstance(op, pto.StageOp):
            _materialise_stage_settings(op, state.copy())
            state = _flatten(op.body.block, state)
            _inline(op)
        elif isinstance(op, pto.StitchOp):
            state = _flatten(op.body.block, state)
            _inline(op)
        elif isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            # PyPTO traces a body once per unroll factor / path, each trace starting
            # with the settings the previous one left: unknown here.
            _flatten(op.body.block, _Settings(_UNKNOWN, _UNKNOWN, _UNKNOWN))
            state = _Settings(_UNKNOWN, _UNKNOWN, _UNKNOWN)
        elif isinstance(op, scf.IfOp):
            ends = [_flatten(b, state.copy()) for b in _regions_of(op)]
            if len(ends) == 1:
                ends.append(state)
            state = ends[0].join(ends[1])
    return state


def _materialise_stage_settings(stage: pto.StageOp, state: _Settings) -> None:
    """Insert the stage's settings before its first tile op where not in force."""
    first = None
    for op in stage.body.block.ops:
        if state.apply(op):
            continue
        if op.regions or (_is_tile_op(op) and not isinstance(op, pto.TransferOp)):
            first = op
            break
    if first is None:
        return
    wanted: list[Operation] = []
    if stage.label is not None and state.label != (stage.label.data,):
        wanted.append(pto.SetSemanticLabelOp(stage.label.data))
    if stage.tile_shape is not None and state.vec != tuple(stage.tile_shape.get_values()):
        wanted.append(pto.SetVecTileShapesOp(stage.tile_shape.get_values()))
    if stage.cube_tile is not None:
        v = list(stage.cube_tile.get_values())
        if state.cube[:6] != tuple(v) or state.cube == _UNKNOWN:
            wanted.append(pto.SetCubeTileShapesOp(v[0:2], v[2:4], v[4:6]))
    Rewriter.insert_op(wanted, InsertPoint.before(first))


def _inline(op: pto.StageOp | pto.StitchOp) -> None:
    block = op.body.block
    term = block.last_op
    yielded = list(term.operands) if isinstance(term, pto.YieldOp) else []
    for res, val in zip(op.results, yielded, strict=True):
        res.replace_all_uses_with(val)
    for inner in list(block.ops):
        if inner is term:
            continue
        inner.detach()
        Rewriter.insert_op(inner, InsertPoint.before(op))
    Rewriter.erase_op(op)


@dataclass
class _RankState:
    user: tuple[int, ...] | None
    """The vector tile shape the program set last (inserted shapes do not count)."""
    current: tuple | None
    """The shape in force; `_UNKNOWN` where paths disagree, None before any."""


def _adapt(shape: Sequence[int], rank: int) -> list[int]:
    shape = list(shape)
    if len(shape) >= rank:
        return shape[len(shape) - rank :]
    return [1] * (rank - len(shape)) + shape


def _fix_ranks(block: Block, state: _RankState) -> _RankState:
    """Insert `set_vec_tile_shapes` where an op's rank differs from the shape in force."""
    for op in list(block.ops):
        if isinstance(op, pto.SetVecTileShapesOp):
            shape = tuple(op.shape.get_values())
            state = _RankState(shape, shape)
            continue
        if isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            body = op.body.block
            end = _fix_ranks(body, _RankState(state.user, state.current))
            if end.current != state.current:
                # A later trace of the body starts where the previous one ended.
                _fix_ranks(body, _RankState(end.user, _UNKNOWN))
                state = _RankState(end.user, _UNKNOWN)
            else:
                state = end
            continue
        if isinstance(op, scf.IfOp):
            ends = [_fix_ranks(b, _RankState(state.user, state.current)) for b in _regions_of(op)]
            if len(ends) == 1:
                ends.append(state)
            same = ends[0].current == ends[1].current
            state = _RankState(ends[0].user, ends[0].current if same else _UNKNOWN)
            continue
        if isinstance(op, _RANK_EXEMPT) or not _is_tile_op(op):
            continue
        results = [r for r in op.results if isinstance(r.type, TensorType)]
        if not results:
            continue
        shape = results[0].type.get_shape()
        if state.current is not None and state.current != _UNKNOWN:
            if len(state.current) == len(shape):
                continue
        base = state.user if state.user is not None else [1 if d < 0 else d for d in shape]
        new = tuple(_adapt(base, len(shape)))
        Rewriter.insert_op(pto.SetVecTileShapesOp(new), InsertPoint.before(op))
        state = _RankState(state.user, new)
    return state


def _loop_state_at_uses(kernel: pto.KernelOp) -> None:
    """Give each use of `is_loop_begin` / `is_loop_end` its own query right before it:
    PyPTO only accepts them written in the `if` itself, and they are pure, so passes
    may have moved them away from their `scf.if`."""
    for op in [o for o in kernel.walk() if isinstance(o, pto.IsLoopBeginOp | pto.IsLoopEndOp)]:
        for use in list(op.result.uses):
            if use.operation.prev_op is op and len(list(op.result.uses)) == 1:
                continue
            query = type(op)(op.index)
            Rewriter.insert_op(query, InsertPoint.before(use.operation))
            use.operation.operands[use.index] = query.result
        if not op.result.uses:
            Rewriter.erase_op(op)


def lower_for_pypto(module: ModuleOp) -> ModuleOp:
    """A copy of `module` in PyPTO's flat form, with the settings PyPTO 0.2.0 needs
    (see the module docstring). `emit_module(m)` prints exactly `lower_for_pypto(m)`,
    so this is what the frontend reads back from the emitted source."""
    out = module.clone()
    for kernel in [op for op in out.walk() if isinstance(op, pto.KernelOp)]:
        _flatten(kernel.body.block, _Settings())
        _loop_state_at_uses(kernel)
        _fix_ranks(kernel.body.block, _RankState(None, None))
    return out


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
        for block in _regions_of(owner):
            term = block.last_op
            if isinstance(term, scf.YieldOp) and _may_be_partial(term.operands[idx], memo):
                result = True
    elif isinstance(owner, Operation):
        result = any(
            isinstance(o.type, TensorType) and _may_be_partial(o, memo) for o in owner.operands
        )
    memo[value] = result
    return result


def _whole_tensor_read(op: Operation) -> bool:
    """A view of a whole tensor (offset 0, same shape, no valid shape) used once, by
    the very next op: the frontend's reading of a tensor name used as a tile, so it is
    written as the name."""
    if not isinstance(op, pto.ViewOp) or not isinstance(op.source.type, MemRefType):
        return False
    if op.sizes or op.mixed_valid_shape is not None or any(o != 0 for o in op.mixed_offsets):
        return False
    if op.source.type.get_shape() != op.result.type.get_shape():
        return False
    uses = list(op.result.uses)
    return len(uses) == 1 and uses[0].operation is op.next_op


def _trace_time(op: Operation | None) -> bool:
    """A comparison PyPTO evaluates while tracing: of `pypto.loop_unroll` chunk lengths
    (Python ints, one trace per factor) and constants."""
    if not isinstance(op, arith.CmpiOp):
        return False
    for v in op.operands:
        owner = v.owner
        if isinstance(owner, arith.ConstantOp):
            continue
        parent = v.block.parent_op() if not isinstance(owner, Operation) else None
        if isinstance(parent, pto.LoopUnrollOp) and v is parent.chunk_length:
            continue
        return False
    return True


@dataclass
class _KernelWriter:
    kernel: pto.KernelOp
    dynamic: dict[str, str]
    taken: set[str]
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    exprs: dict[SSAValue, str] = field(default_factory=dict)
    helpers: set[str] = field(default_factory=set)
    partial: dict[SSAValue, bool] = field(default_factory=dict)

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
                return pyfloat(float(attr.value.data), attr.type)
            if isinstance(attr, IntegerAttr):
                if attr.type == IntegerType(1):
                    return "True" if attr.value.data else "False"
                return repr(int(attr.value.data))
        if isinstance(op, Operation):
            raise error_at(op, f"the PyPTO emitter cannot write a use of '{op.name}' here")
        raise error_at(self.kernel, "the PyPTO emitter met a value defined outside the kernel")

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
        kwargs = ", ".join(f"{sanitize(key)}={literal(v)}" for key, v in options.items())
        head = [f"@pypto.frontend.jit({kwargs})", f"def {sanitize(k.sym_name.data, 'kernel')}("]
        head += [f"{INDENT}{p}," for p in params] + ["):"]
        self.body(k.body.block, 1)
        return head + self.lines

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
                self.line(depth, f"{self.define(result, 'idx')} = {index}")
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
            self.exprs[op.results[0]] = self.use(op.operands[0])
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

    def index_expr(self, op: Operation) -> str | None:
        """The Python expression of a scalar (index / i1) op, or None for other ops."""
        u = self.use
        if type(op) in _INDEX_BINARY:
            a, b = op.operands
            return f"{u(a)} {_INDEX_BINARY[type(op)]} {self.atom(b)}"
        if type(op) in _INDEX_CALL:
            a, b = op.operands
            return f"{_INDEX_CALL[type(op)]}({u(a)}, {u(b)})"
        if isinstance(op, arith.CmpiOp):
            a, b = op.operands
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            if pred not in _CMPI:
                raise error_at(op, f"the PyPTO emitter cannot write the comparison '{pred}'")
            return f"{u(a)} {_CMPI[pred]} {self.atom(b)}"
        if isinstance(op, arith.IndexCastOp):
            return u(op.operands[0])
        if isinstance(op, memref.DimOp | tensor.DimOp):
            src, idx = op.operands
            return f"{u(src)}.shape[{u(idx)}]"
        if isinstance(op, pto.IsLoopBeginOp | pto.IsLoopEndOp):
            fn = "is_loop_begin" if isinstance(op, pto.IsLoopBeginOp) else "is_loop_end"
            return f"pypto.{fn}({u(op.index)})"
        return None

    def atom(self, value: SSAValue) -> str:
        """A use as the right operand of a binary operator (negative constants bracketed)."""
        text = self.use(value)
        return f"({text})" if text.startswith("-") else text

    def call(self, op: Operation) -> str | None:  # noqa: C901 - one dispatch
        u = self.use
        spec = BY_OP.get(type(op))
        if isinstance(op, pto.TanhOp | pto.ErfOp) or (
            isinstance(op, pto.SigmoidOp) and _may_be_partial(op.input, self.partial)
        ):
            helper = BY_OP[type(op)].helper
            assert helper is not None
            self.helpers.add(helper)
            return f"{helper}({u(op.input)})"
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
                return f"{u(lhs)} {spec.python_operator} {u(rhs)}"
            return f"pypto.{spec.pypto}({u(lhs)}, {u(rhs)})"
        if isinstance(op, pto.ReduceOp):
            spec = BY_OP[type(op)]
            keep = ", keepdim=True" if op.keepdim is not None else ""
            return f"pypto.{spec.pypto}({u(op.input)}, dim={op.dim.value.data}{keep})"
        if isinstance(op, pto.TensorOp):
            t = op.result.type
            return (
                f"pypto.tensor({self.shape_of(t)}, {dtype_expr(t.element_type)}, "
                f"{pystr(op.buffer_name.data)})"
            )
        if isinstance(op, pto.ViewOp):
            valid = op.mixed_valid_shape
            tail = f", valid_shape={self.mixed(valid)}" if valid is not None else ""
            return (
                f"pypto.view({u(op.source)}, {self.shape_of(op.result.type, op.sizes)}, "
                f"{self.mixed(op.mixed_offsets)}{tail})"
            )
        if isinstance(op, pto.AssembleOp):
            if all(o == 0 for o in op.mixed_offsets) and (
                op.src.type.get_shape() == op.dst.type.get_shape()
            ):
                # A whole-tensor write: PyPTO 0.2.0 compiles `dst[:] = t` in branches
                # where the equal `assemble` fails (F21007 Operation already in a group).
                return f"{u(op.dst)}[:] = {u(op.src)}"
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
        target = self.fresh(op.induction_var.name_hint or hint, "i")
        self.names[op.induction_var] = target
        fn = "loop"
        if isinstance(op, pto.LoopUnrollOp):
            fn = "loop_unroll"
            target = f"{target}, {self.define(op.chunk_length, 'unroll_len')}"
        self.line(depth, f"for {target} in pypto.{fn}({', '.join(args + kw)}):")
        self.body(op.body.block, depth + 1)

    def if_(self, op: scf.IfOp, depth: int) -> None:
        cond = op.cond.owner
        if not (isinstance(cond, pto.IsLoopBeginOp | pto.IsLoopEndOp) or _trace_time(cond)):
            raise error_at(
                op,
                "the PyPTO emitter can only write `if` on pypto.is_loop_begin / "
                "is_loop_end or on a pypto.loop_unroll chunk length (PyPTO 0.2.0 rejects "
                "other conditions inside a jit kernel)",
            )
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
        lines += ["", "", *HELPERS[name]]
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
