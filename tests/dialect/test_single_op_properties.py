"""The verifier is the contract, op by op (issue 13).

Hypothesis writes one kernel around one op of every kind: random shapes, element types
and attributes, most of them valid, some deliberately not (a wrong result shape or
element type, an out-of-range dim, a bad mode). Whatever verifies must run on the numpy
back end and emit as PyPTO (Python that compiles) without an internal error; whatever
does not verify must be refused with a located message naming the op.

The kernel around the op is built so that only the op under test can be wrong: inputs
are whole-tensor views of kernel arguments and every result is assembled into an
argument of exactly its type, so the first op the verifier refuses is the one drawn.

Example counts follow the hypothesis profile (`ci` in CI, `deep` for long runs).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from tileir import bindings, parse_module
from tileir.backends.numpy import run
from tileir.backends.numpy.semantics import SemanticsError
from tileir.backends.pypto import emit
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.dialect.pto import CAST_MODES
from tileir.dialect.shapes import (
    MATMUL_OUT_DTYPES,
    SCALED_MM_IN_DTYPES,
    SCALED_MM_OUT_DTYPES,
    SCALED_MM_SCALE_DTYPE,
)
from tileir.testing import random_inputs

FLOATS = ("f32", "f16", "bf16")
INTS = ("i8", "i16", "i32", "i64")
ALL = (*FLOATS, *INTS, "i1", "f8E4M3FN", "f8E5M2")
SIZES = (1, 2, 3, 4, 8, 16)

Shape = tuple[int, ...]


def ty(kind: str, shape: Shape, dtype: str) -> str:
    return f"{kind}<{'x'.join(map(str, shape))}x{dtype}>"


@dataclass
class Case:
    """One kernel around one op: the op's text, its inputs and its result types."""

    op: str
    inputs: list[tuple[str, Shape, str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    results: list[tuple[str, Shape, str]] = field(default_factory=list)
    index_ranges: dict[str, int] = field(default_factory=dict)
    """Input name -> exclusive upper bound of its (index) values."""

    def tile(self, shape: Shape, dtype: str) -> str:
        name = f"in{len(self.inputs)}"
        self.inputs.append((name, shape, dtype))
        return f"%{name}_t"

    def text(self) -> str:
        args = [f"%{n}: {ty('memref', s, d)}" for n, s, d in self.inputs]
        args += [f"%out{i}: {ty('memref', s, d)}" for i, (_, s, d) in enumerate(self.results)]
        body = [
            f"  %{n}_t = pto.view %{n}[{', '.join('0' * len(s))}] : "
            f"{ty('memref', s, d)} -> {ty('tensor', s, d)}"
            for n, s, d in self.inputs
        ]
        body += [f"  {line}" for line in self.lines]
        for i, (v, s, d) in enumerate(self.results):
            body.append(
                f"  pto.assemble {v} into %out{i}[{', '.join('0' * len(s))}] : "
                f"{ty('tensor', s, d)}, {ty('memref', s, d)}"
            )
        return f"pto.kernel @k({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"


shapes_st = st.lists(st.sampled_from(SIZES), min_size=1, max_size=4).map(tuple)


def maybe(draw: st.DrawFn, good, bad, p_bad: float = 0.15):
    """`good`, or (rarely) one of the `bad` alternatives: an invalid variant."""
    if bad and draw(st.integers(0, 99)) < 100 * p_bad:
        return draw(st.sampled_from(bad))
    return good


def wrong_shapes(shape: Shape) -> list[Shape]:
    out = [(*shape[:-1], shape[-1] + 1), (*shape, 2)[:5]]
    return [s for s in out if s != shape]


def scalar(c: Case, dtype: str) -> str:
    name = f"%s{len(c.lines)}"
    value = "2" if dtype in INTS or dtype in ("i1", "index") else "2.5"
    typed = f"{value} : {dtype}" if dtype != "i1" else "true"
    c.lines.append(f"{name} = arith.constant {typed}")
    return name


def broadcastable(draw: st.DrawFn, shape: Shape) -> Shape:
    """A shape that broadcasts against `shape` (some dims 1, leading dims dropped)."""
    dims = [d if draw(st.booleans()) else 1 for d in shape]
    drop = draw(st.integers(0, len(dims) - 1))
    return tuple(dims[drop:])


def broadcast(a: Shape, b: Shape) -> Shape:
    return tuple(np.broadcast_shapes(a, b))


def family(base: type, but: type | None = None) -> list[str]:
    """The names (without `pto.`) of the bound ops on `base`: a new binding of a family
    with a generic case (unary, binary, compare, reduce) is drawn without a change here."""
    return sorted(
        op.name.removeprefix("pto.")
        for op in bindings.BY_OP
        if issubclass(op, base) and not (but is not None and issubclass(op, but))
    )


UNARY = family(pto.UnaryOp)
BINARY = family(pto.BinaryOp, but=pto.CompareOp)
COMPARE = family(pto.CompareOp)
REDUCE = family(pto.ReduceOp)
LAYOUT = ["transpose", "unsqueeze", "expand_clone", "reshape", "concat"]
INDEXING = ["gathermask", "gather", "index_select", "topk"]


@st.composite
def unary(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(UNARY))
    c = Case(f"pto.{name}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    # A result type other than the operand's cannot even be written in the custom form
    # (one type for both): that variant is a parse error at the op.
    out_dtype = maybe(draw, dtype, [d for d in ALL if d != dtype], p_bad=0.05)
    c.lines.append(f"%r = pto.{name} {x} : {ty('tensor', shape, out_dtype)}")
    c.results.append(("%r", shape, out_dtype))
    return c


@st.composite
def binary(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(BINARY + COMPARE))
    c = Case(f"pto.{name}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    form = draw(st.sampled_from(["tile", "scalar", "scalar-first"]))
    if form == "tile":
        other = maybe(draw, broadcastable(draw, shape), [(shape[-1] + 1,)])
        y_dtype = maybe(draw, dtype, [d for d in ALL if d != dtype])
        y, y_type = c.tile(other, y_dtype), ty("tensor", other, y_dtype)
        out = broadcast(shape, other) if other[-1] in (1, shape[-1]) else shape
    else:
        s_dtype = draw(st.sampled_from(["f32", "i32", "index", dtype]))
        y, y_type, out = scalar(c, s_dtype), s_dtype, shape
    res_dtype = "i1" if name in COMPARE else dtype
    res_dtype = maybe(draw, res_dtype, [d for d in ALL if d != res_dtype])
    out = maybe(draw, out, wrong_shapes(out))
    operands, types = [x, y], [ty("tensor", shape, dtype), y_type]
    if form == "scalar-first":
        operands, types = operands[::-1], types[::-1]
    c.lines.append(
        f"%r = pto.{name} {operands[0]}, {operands[1]} : {types[0]}, {types[1]} -> "
        f"{ty('tensor', out, res_dtype)}"
    )
    c.results.append(("%r", out, res_dtype))
    return c


@st.composite
def where(draw: st.DrawFn) -> Case:
    c = Case("pto.where")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    cond_dtype = maybe(draw, "i1", ["f32", "i8"])
    cond = c.tile(shape, cond_dtype)
    x = c.tile(broadcastable(draw, shape), dtype)
    x_type = ty("tensor", c.inputs[-1][1], dtype)
    if draw(st.booleans()):
        y, y_type = (
            scalar(c, "f32" if dtype in FLOATS else "i32"),
            ("f32" if dtype in FLOATS else "i32"),
        )
    else:
        y, y_type = c.tile(shape, dtype), ty("tensor", shape, dtype)
    out = maybe(draw, shape, wrong_shapes(shape))
    c.lines.append(
        f"%r = pto.where {cond}, {x}, {y} : {ty('tensor', shape, cond_dtype)}, {x_type}, "
        f"{y_type} -> {ty('tensor', out, dtype)}"
    )
    c.results.append(("%r", out, dtype))
    return c


@st.composite
def cast(draw: st.DrawFn) -> Case:
    c = Case("pto.cast")
    shape = draw(shapes_st)
    src, dst = draw(st.sampled_from(ALL)), draw(st.sampled_from(ALL))
    x = c.tile(shape, src)
    mode = maybe(draw, draw(st.sampled_from(CAST_MODES)), ["nearest"])
    sat = " sat" if draw(st.booleans()) else ""
    out = maybe(draw, shape, wrong_shapes(shape))
    mode_text = f" mode {mode}" if mode != "none" else ""
    c.lines.append(
        f"%r = pto.cast {x}{mode_text}{sat} : {ty('tensor', shape, src)} -> "
        f"{ty('tensor', out, dst)}"
    )
    c.results.append(("%r", out, dst))
    return c


BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
BYTES |= {"f8E4M3FN": 1, "f8E5M2": 1}


@st.composite
def view_type(draw: st.DrawFn) -> Case:
    """`pto.view_type`: the bytes read as another dtype, the last dim scaled (i1, a last
    dim of bytes that are not whole elements, a wrong shape: refused)."""
    c = Case("pto.view_type")
    shape = draw(shapes_st)
    src, dst = draw(st.sampled_from(ALL)), draw(st.sampled_from(ALL))
    x = c.tile(shape, src)
    out = shape
    if "i1" not in (src, dst):
        last = shape[-1] * BYTES[src] / BYTES[dst]
        out = (*shape[:-1], int(last) if last == int(last) and last >= 1 else shape[-1])
    out = maybe(draw, out, wrong_shapes(out))
    c.lines.append(
        f"%r = pto.view_type {x} : {ty('tensor', shape, src)} -> {ty('tensor', out, dst)}"
    )
    c.results.append(("%r", out, dst))
    return c


@st.composite
def reduce(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(REDUCE))
    c = Case(f"pto.{name}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    rank = len(shape)
    dim = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank, -rank - 1])
    keep = draw(st.booleans())
    out = list(shape)
    d = dim % rank
    if keep:
        out[d] = 1
    else:
        del out[d]
    out_t = tuple(out) or (1,)
    out_t = maybe(draw, out_t, wrong_shapes(out_t))
    c.lines.append(
        f"%r = pto.{name} {x}, {dim}{' keepdim' if keep else ''} : "
        f"{ty('tensor', shape, dtype)} -> {ty('tensor', out_t, dtype)}"
    )
    c.results.append(("%r", out_t, dtype))
    return c


@st.composite
def layout(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(LAYOUT))
    c = Case(f"pto.{kind}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    rank = len(shape)
    t_in = ty("tensor", shape, dtype)
    if kind == "transpose":
        d0 = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank])
        d1 = draw(st.integers(-rank, rank - 1))
        out = list(shape)
        if -rank <= d0 < rank:
            out[d0], out[d1] = out[d1], out[d0]
        out_t = tuple(out)
        line = f"%r = pto.transpose {x}, {d0}, {d1} : {t_in} -> "
    elif kind == "unsqueeze":
        dim = maybe(draw, draw(st.integers(-rank - 1, rank)), [rank + 2])
        out = list(shape)
        out.insert(dim % (rank + 1) if -rank - 1 <= dim <= rank else 0, 1)
        out_t = tuple(out)
        line = f"%r = pto.unsqueeze {x}, {dim} : {t_in} -> "
    elif kind == "expand_clone":
        out_t = tuple(draw(st.sampled_from(SIZES)) if s == 1 else s for s in shape)
        line = f"%r = pto.expand_clone {x} : {t_in} -> "
    elif kind == "reshape":
        n = int(np.prod(shape))
        splits = [(n,), (1, n)] + [(a, n // a) for a in (2, 4, 8) if n % a == 0]
        out_t = draw(st.sampled_from(splits))
        inplace = " inplace" if draw(st.integers(0, 9)) == 0 else ""
        line = f"%r = pto.reshape {x}{inplace} : {t_in} -> "
    else:
        dim = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank])
        others = []
        for _ in range(draw(st.integers(0, 2))):
            s = list(shape)
            if -rank <= dim < rank:
                s[dim] = draw(st.sampled_from(SIZES))
            others.append(tuple(s))
        operands = [x] + [c.tile(s, dtype) for s in others]
        types = [t_in] + [ty("tensor", s, dtype) for s in others]
        out = list(shape)
        if -rank <= dim < rank:
            out[dim] = sum(s[dim] for s in [shape, *others])
        out_t = tuple(out)
        line = f"%r = pto.concat dim {dim}, {', '.join(operands)} : {', '.join(types)} -> "
    out_t = maybe(draw, out_t, wrong_shapes(out_t))
    c.lines.append(line + ty("tensor", out_t, dtype))
    c.results.append(("%r", out_t, dtype))
    return c


@st.composite
def full(draw: st.DrawFn) -> Case:
    c = Case("pto.full")
    shape, dtype = draw(st.one_of(shapes_st, st.just((1, 1, 1, 1, 2)))), draw(st.sampled_from(ALL))
    c.inputs.append(("unused", (1,), "f32"))  # a kernel with no argument is not a case
    value_type = draw(st.sampled_from(["f32", "i32", "index", "i1"]))
    v = scalar(c, value_type)
    valid = ""
    if draw(st.booleans()):
        vs = [draw(st.integers(0, s + 1)) if i == 0 else s for i, s in enumerate(shape)]
        valid = f" valid [{', '.join(map(str, vs))}]"
    c.lines.append(f"%r = pto.full {v}{valid} : {value_type} -> {ty('tensor', shape, dtype)}")
    if len(shape) <= 4:
        c.results.append(("%r", shape, dtype))
    return c


@st.composite
def view(draw: st.DrawFn) -> Case:
    c = Case("pto.view")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    c.inputs.append(("src", shape, dtype))
    tile = tuple(draw(st.integers(1, s)) for s in shape)
    offsets = [draw(st.integers(0, s - t)) for s, t in zip(shape, tile)]
    offsets = maybe(draw, offsets, [[shape[0]] + offsets[1:]])
    valid = ""
    if draw(st.booleans()):
        vs = [draw(st.integers(0, t)) for t in tile]
        vs = maybe(draw, vs, [[tile[0] + 1] + vs[1:]])
        valid = f" valid [{', '.join(map(str, vs))}]"
    c.lines.append(
        f"%r = pto.view %src[{', '.join(map(str, offsets))}]{valid} : "
        f"{ty('memref', shape, dtype)} -> {ty('tensor', tile, dtype)}"
    )
    c.results.append(("%r", tile, dtype))
    return c


@st.composite
def get_tensor_data(draw: st.DrawFn) -> Case:
    """`pto.get_tensor_data`: one element of an integer table (in memory or a tile,
    indices static or constant operands) used as the offset of a view."""
    c = Case("pto.get_tensor_data")
    shape = draw(shapes_st)
    elem = maybe(draw, draw(st.sampled_from(INTS)), ["f32", "i1", "bf16"])
    rows, width = draw(st.integers(1, 8)), draw(st.sampled_from(SIZES))
    c.inputs.append(("table", shape, elem))
    c.index_ranges["table"] = rows
    c.inputs.append(("data", (rows, width), "f32"))
    idx: list[int | str] = [draw(st.integers(0, s - 1)) for s in shape]
    idx = maybe(draw, idx, [[shape[0], *idx[1:]], [*idx, 0]])
    if draw(st.booleans()):
        c.lines.append(f"%i0 = arith.constant {idx[0]} : index")
        idx[0] = "%i0"
    source, source_t = (
        ("%table", ty("memref", shape, elem))
        if draw(st.booleans())
        else ("%table_t", ty("tensor", shape, elem))
    )
    c.lines.append(f"%e = pto.get_tensor_data {source}[{', '.join(map(str, idx))}] : {source_t}")
    c.lines.append(
        f"%r = pto.view %data[%e, 0] : {ty('memref', (rows, width), 'f32')} -> "
        f"{ty('tensor', (1, width), 'f32')}"
    )
    c.results.append(("%r", (1, width), "f32"))
    return c


@st.composite
def assemble(draw: st.DrawFn) -> Case:
    c = Case("pto.assemble")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    tile = tuple(draw(st.integers(1, s)) for s in shape)
    x = c.tile(tile, dtype)
    c.inputs.append(("dst", shape, dtype))
    offsets = [draw(st.integers(0, s - t)) for s, t in zip(shape, tile)]
    offsets = maybe(draw, offsets, [[shape[0]] + offsets[1:]])
    c.lines.append(
        f"pto.assemble {x} into %dst[{', '.join(map(str, offsets))}] : "
        f"{ty('tensor', tile, dtype)}, {ty('memref', shape, dtype)}"
    )
    return c


@st.composite
def reshape_mem(draw: st.DrawFn) -> Case:
    """`pto.reshape_mem`: a kernel argument read whole through another shape."""
    c = Case("pto.reshape_mem")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    c.inputs.append(("src", shape, dtype))
    n = int(np.prod(shape))
    splits = [(n,), (1, n), shape[::-1]] + [(a, n // a) for a in (2, 4, 8) if n % a == 0]
    target = maybe(draw, draw(st.sampled_from(splits)), wrong_shapes(shape))
    zeros = ", ".join("0" * len(target))
    m_src, m_dst = ty("memref", shape, dtype), ty("memref", target, dtype)
    c.lines += [
        f"%m = pto.reshape_mem %src : {m_src} -> {m_dst}",
        f"%r = pto.view %m[{zeros}] : {m_dst} -> {ty('tensor', target, dtype)}",
    ]
    c.results.append(("%r", target, dtype))
    return c


@st.composite
def workspace(draw: st.DrawFn) -> Case:
    """`pto.tensor`: a workspace written and read back (its name is any string)."""
    c = Case("pto.tensor")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    ws_shape = maybe(draw, shape, [(*shape[:-1], 0), (*shape[:-1], -1)])
    name = draw(st.sampled_from(["ws", "a b", 'q"x', ""]))
    zeros = ", ".join("0" * len(shape))
    c.lines += [
        f"%w = pto.tensor {json.dumps(name)} : {ty('memref', ws_shape, dtype)}",
        f"pto.assemble {x} into %w[{zeros}] : {ty('tensor', shape, dtype)}, "
        f"{ty('memref', ws_shape, dtype)}",
        f"%r = pto.view %w[{zeros}] : {ty('memref', ws_shape, dtype)} -> "
        f"{ty('tensor', shape, dtype)}",
    ]
    c.results.append(("%r", shape, dtype))
    return c


@st.composite
def matmul(draw: st.DrawFn) -> Case:
    c = Case("pto.matmul")
    m, k, n = (draw(st.sampled_from(SIZES)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (1,)]))
    b_batch = maybe(draw, batch if not batch or draw(st.booleans()) else (1,), [(), (2, 1)])
    a_trans, b_trans = draw(st.booleans()), draw(st.booleans())
    a_shape = (*batch, *((k, m) if a_trans else (m, k)))
    b_shape = (*b_batch, *((n, k) if b_trans else (k, n)))
    dtype = draw(st.sampled_from(list(MATMUL_OUT_DTYPES) + ["i16"]))
    b_dtype = maybe(draw, dtype, ["f32", "f8E5M2"])
    out_dtype = maybe(draw, draw(st.sampled_from(MATMUL_OUT_DTYPES.get(dtype, ("f32",)))), ALL)
    a, b = c.tile(a_shape, dtype), c.tile(b_shape, b_dtype)
    bias = bias_type = ""
    if draw(st.booleans()):
        b_dt = draw(st.sampled_from(MATMUL_OUT_DTYPES.get(dtype, ("f32",))))
        bs = draw(st.sampled_from([(n,), (1, n), (1, 1, n), (2, n)]))
        bias = f" bias {c.tile(bs, b_dt)}"
        bias_type = f", {ty('tensor', bs, b_dt)}"
    out_batch = batch if len(batch) >= len(b_batch) else b_batch
    out = maybe(draw, (*out_batch, m, n), [(*out_batch, m, n + 1)])
    flags = (" a_trans" if a_trans else "") + (" b_trans" if b_trans else "")
    c.lines.append(
        f"%r = pto.matmul {a}, {b}{bias}{flags} : {ty('tensor', a_shape, dtype)}, "
        f"{ty('tensor', b_shape, b_dtype)}{bias_type} -> {ty('tensor', out, out_dtype)}"
    )
    c.results.append(("%r", out, out_dtype))
    return c


@st.composite
def scaled_mm(draw: st.DrawFn) -> Case:
    c = Case("pto.scaled_mm")
    m, n = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES))
    k0 = draw(st.sampled_from([1, 2]))
    k = maybe(draw, 64 * k0, [32, 64 * k0 + 1])
    flags = {
        f: draw(st.booleans()) for f in ("a_trans", "b_trans", "scale_a_trans", "scale_b_trans")
    }
    a_shape = (k, m) if flags["a_trans"] else (m, k)
    b_shape = (n, k) if flags["b_trans"] else (k, n)
    sa_shape = maybe(
        draw, (k0, m, 2) if flags["scale_a_trans"] else (m, k0, 2), [(m, k0), (m, k0, 1)]
    )
    sb_shape = maybe(draw, (n, k0, 2) if flags["scale_b_trans"] else (k0, n, 2), [(k0 + 1, n, 2)])
    a_dt, b_dt = (
        maybe(draw, draw(st.sampled_from(SCALED_MM_IN_DTYPES)), ["bf16", "i8"]) for _ in "ab"
    )
    s_dt = maybe(draw, SCALED_MM_SCALE_DTYPE, ["f8E4M3FN", "f32"])
    out_dt = maybe(draw, draw(st.sampled_from(SCALED_MM_OUT_DTYPES)), ["i8", "i32"])
    tiles = [
        c.tile(sh, dt)
        for sh, dt in ((a_shape, a_dt), (b_shape, b_dt), (sa_shape, s_dt), (sb_shape, s_dt))
    ]
    types = [
        ty("tensor", a_shape, a_dt),
        ty("tensor", b_shape, b_dt),
        ty("tensor", sa_shape, s_dt),
        ty("tensor", sb_shape, s_dt),
    ]
    bias = ""
    if draw(st.booleans()):
        bs = maybe(draw, draw(st.sampled_from([(n,), (1, n)])), [(2, n)])
        b_ty = draw(st.sampled_from(SCALED_MM_OUT_DTYPES))
        bias = f" bias {c.tile(bs, b_ty)}"
        types.append(ty("tensor", bs, b_ty))
    out = maybe(draw, (m, n), [(m, n + 1)])
    words = "".join(f" {f}" for f, on in flags.items() if on)
    c.lines.append(
        f"%r = pto.scaled_mm {tiles[0]}, {tiles[1]} scales {tiles[2]}, {tiles[3]}{bias}{words} : "
        f"{', '.join(types)} -> {ty('tensor', out, out_dt)}"
    )
    c.results.append(("%r", out, out_dt))
    return c


@st.composite
def quant_mx(draw: st.DrawFn) -> Case:
    c = Case("pto.quant_mx")
    dtype = maybe(draw, draw(st.sampled_from(["f32", "f16", "bf16"])), ["i32", "f8E4M3FN"])
    lead = draw(st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=2))
    unit = 64 if dtype == "f32" else 128
    n = maybe(draw, unit * draw(st.integers(1, 2)), [32, unit + 64 if unit == 128 else 96])
    shape = (*lead, n)
    x = c.tile(shape, dtype)
    q_dt = maybe(draw, "f8E4M3FN", ["f8E5M2", "bf16"])
    s_dt = maybe(draw, "f8E8M0FNU", ["f8E4M3FN"])
    q_shape = maybe(draw, shape, wrong_shapes(shape))
    blocks = max(n // 64, 1)  # n may be a wrong 32: keep every dim >= 1
    s_shape = maybe(draw, (*lead, blocks, 2), [(*lead, max(n // 32, 1)), (*lead, blocks, 1)])
    mode = draw(st.sampled_from(["", " performance_mode"]))
    c.lines.append(
        f"%q, %s = pto.quant_mx {x}{mode} : {ty('tensor', shape, dtype)} -> "
        f"{ty('tensor', q_shape, q_dt)}, {ty('tensor', s_shape, s_dt)}"
    )
    c.results += [("%q", q_shape, q_dt), ("%s", s_shape, s_dt)]
    return c


@st.composite
def indexing(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(INDEXING))
    c = Case(f"pto.{kind}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    x = c.tile(shape, dtype)
    rank = len(shape)
    t_in = ty("tensor", shape, dtype)
    index_dtype = maybe(draw, draw(st.sampled_from(["i32", "i64", "i16"])), ["i8", "i1", "f32"])
    if kind == "gathermask":
        mode = maybe(draw, draw(st.integers(1, 7)), [0, 8])
        step = 2 if mode in (1, 2) else 4 if mode in (3, 4, 5, 6) else 1
        out = (*shape[:-1], max(shape[-1] // step, 1))
        out = maybe(draw, out, wrong_shapes(out))
        c.lines.append(f"%r = pto.gathermask {x}, {mode} : {t_in} -> {ty('tensor', out, dtype)}")
        c.results.append(("%r", out, dtype))
        return c
    dim = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank])
    d = dim % rank
    if kind == "topk":
        k = maybe(draw, draw(st.integers(1, shape[d])), [shape[d] + 1])
        out = list(shape)
        out[d] = k
        largest = draw(st.sampled_from(["", " largest true", " largest false"]))
        c.lines.append(
            f"%v, %j = pto.topk {x}, {k} dim {dim}{largest} : {t_in} -> "
            f"{ty('tensor', tuple(out), dtype)}, {ty('tensor', tuple(out), index_dtype)}"
        )
        c.results += [("%v", tuple(out), dtype), ("%j", tuple(out), index_dtype)]
        return c
    if kind == "gather":
        index_shape = tuple(
            draw(st.integers(1, s)) if i != d else draw(st.sampled_from(SIZES))
            for i, s in enumerate(shape)
        )
        out = index_shape
    else:
        index_shape = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=2).map(tuple))
        out = (*shape[:d], *index_shape, *shape[d + 1 :])
    out = maybe(draw, out, wrong_shapes(out))
    j = c.tile(index_shape, index_dtype)
    c.index_ranges[c.inputs[-1][0]] = shape[d]
    c.lines.append(
        f"%r = pto.{kind} {x}, {dim}, {j} : {t_in}, {ty('tensor', index_shape, index_dtype)} "
        f"-> {ty('tensor', out, dtype)}"
    )
    c.results.append(("%r", out, dtype))
    return c


@st.composite
def settings_ops(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(["vec", "cube", "label", "options"]))
    pair = st.lists(st.integers(0, 64), min_size=1, max_size=3)
    if kind == "vec":
        c = Case("pto.set_vec_tile_shapes")
        dims = draw(st.lists(st.integers(0, 64), min_size=1, max_size=5))
        c.lines.append(f"pto.set_vec_tile_shapes [{', '.join(map(str, dims))}]")
    elif kind == "cube":
        c = Case("pto.set_cube_tile_shapes")
        m, k, n = (draw(pair) for _ in range(3))
        split = " split_k" if draw(st.booleans()) else ""
        c.lines.append(f"pto.set_cube_tile_shapes m {m} k {k} n {n}{split}")
    elif kind == "options":
        c = Case("pto.set_options")
        which = maybe(draw, draw(st.sampled_from(sorted(pto.OPTION_FUNCTIONS))), ["other"])
        key = maybe(draw, draw(st.sampled_from(["vec_nbuffer_setting", "x"])), ["class", "a b"])
        value = draw(st.sampled_from(["1 : i64", "true", '"pypto.X.Y"', "[1, 2]", "2.5 : f32"]))
        c.lines.append(f'pto.set_options "{which}" {{{json.dumps(key)} = {value}}}')
    else:
        c = Case("pto.set_semantic_label")
        label = draw(st.sampled_from(["", "attn", "a b", 'q"x', "x\\n"]))
        c.lines.append(f'pto.set_semantic_label "{label}"')
    return c


@st.composite
def loop(draw: st.DrawFn) -> Case:
    """A row loop with a tail: `pto.loop` (or `pto.loop_unroll`), its unroll list, and
    `is_loop_begin` / `is_loop_end` selecting what is written."""
    kind = draw(st.sampled_from(["loop", "loop_unroll"]))
    c = Case(f"pto.{kind}")
    rows, cols = draw(st.integers(1, 13)), draw(st.sampled_from(SIZES))
    step = maybe(draw, draw(st.integers(1, 4)), [0])
    factors = draw(st.sampled_from([None, [1], [2, 1], [4, 2, 1], [8, 1], [2, 4, 1]]))
    if kind == "loop_unroll" and factors is None:
        factors = maybe(draw, [2, 1], [None])
    c.inputs.append(("x", (rows, cols), "f32"))
    c.inputs.append(("y", (rows, cols), "f32"))
    unroll = f" unroll [{', '.join(map(str, factors))}]" if factors else ""
    args = "%i, %n" if kind == "loop_unroll" else "%i"
    c.lines += [
        "%c0 = arith.constant 0 : index",
        f"%cs = arith.constant {step} : index",
        f"%cr = arith.constant {rows} : index",
        "%one = arith.constant 1 : index",
        f"pto.{kind} {args} = %c0 to %cr step %cs{unroll} {{",
        f"  %t = pto.view %x[%i, 0] valid [%one, {cols}] : "
        f"{ty('memref', (rows, cols), 'f32')} -> {ty('tensor', (1, cols), 'f32')}",
        f"  %e = pto.exp %t : {ty('tensor', (1, cols), 'f32')}",
        "  %b = pto.is_loop_begin %i",
        "  %z = pto.is_loop_end %i",
        f"  pto.assemble %e into %y[%i, 0] : {ty('tensor', (1, cols), 'f32')}, "
        f"{ty('memref', (rows, cols), 'f32')}",
        "}",
    ]
    return c


@st.composite
def jit_ops(draw: st.DrawFn) -> Case:
    """The ops added for the JIT frontend: clone / silu / logical_not / fillpad / arange /
    scatter_update / scatter / index_put."""
    kind = draw(
        st.sampled_from(
            [
                "clone",
                "silu",
                "logical_not",
                "fillpad",
                "arange",
                "scatter_update",
                "scatter",
                "index_put",
                "index_add",
            ]
        )
    )
    c = Case(f"pto.{kind}")
    shape, dtype = draw(shapes_st), draw(st.sampled_from(ALL))
    if kind in ("clone", "silu"):
        x = c.tile(shape, dtype)
        c.lines.append(f"%r = pto.{kind} {x} : {ty('tensor', shape, dtype)}")
        c.results.append(("%r", shape, dtype))
    elif kind == "logical_not":
        x = c.tile(shape, dtype)
        out = maybe(draw, shape, wrong_shapes(shape))
        res = maybe(draw, "i1", ["i8", "f32"])
        c.lines.append(
            f"%r = pto.logical_not {x} : {ty('tensor', shape, dtype)} -> {ty('tensor', out, res)}"
        )
        c.results.append(("%r", out, res))
    elif kind == "fillpad":
        x = c.tile(shape, dtype)
        value = maybe(draw, draw(st.sampled_from(["0.0", "inf", "-inf"])), ["1.0", "nan"])
        t = ty("tensor", shape, dtype)
        c.lines.append(f'%r = pto.fillpad {x} value "{value}" : {t} -> {t}')
        c.results.append(("%r", shape, dtype))
    elif kind == "arange":
        c.inputs.append(("unused", (1,), "f32"))
        elem = maybe(draw, draw(st.sampled_from(["i32", "i64", "f32"])), ["f16", "i8"])
        start = draw(st.integers(-8, 8))
        step = maybe(draw, draw(st.sampled_from([1, 2, 3, -1, 0.5])), [0])
        n = draw(st.integers(1, 16))
        end = start + n * step
        if elem in ("i32", "i64") and isinstance(step, float):
            step, end = 1, start + n
        n = maybe(draw, n, [n + 1])
        out = (n,) if step else (1,)
        c.lines.append(
            f"%r = pto.arange {float(start)} to {float(end)} step {float(step)} : "
            f"{ty('tensor', out, elem)}"
        )
        c.results.append(("%r", out, elem))
    elif kind == "scatter_update":
        d = draw(st.sampled_from([1, 2, 4, 8]))
        dtype = maybe(draw, draw(st.sampled_from(["f32", "f16", "bf16", "i32", "i16"])), ["i8"])
        b, s_ = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        index_dtype = maybe(draw, draw(st.sampled_from(["i64", "i32", "i16"])), ["f32"])
        if draw(st.booleans()):
            nb, bs = draw(st.integers(1, 3)), draw(st.integers(1, 4))
            in_shape, src_shape, rows = (nb, bs, 1, d), (b, s_, 1, d), nb * bs
        else:
            rows = draw(st.integers(1, 12))
            in_shape, src_shape = (rows, d), (b * s_, d)
        src_shape = maybe(draw, src_shape, [(*src_shape[:-1], d + 1)])
        x = c.tile(in_shape, dtype)
        i = c.tile((b, s_), index_dtype)
        c.index_ranges[c.inputs[-1][0]] = rows
        src = c.tile(src_shape, dtype)
        t = ty("tensor", in_shape, dtype)
        c.lines.append(
            f"%r = pto.scatter_update {x}[{i}], {src} : {t}[{ty('tensor', (b, s_), index_dtype)}], "
            f"{ty('tensor', src_shape, dtype)} -> {t}"
        )
        c.results.append(("%r", in_shape, dtype))
    elif kind == "scatter":
        x = c.tile(shape, dtype)
        rank = len(shape)
        dim = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank])
        index_shape = tuple(draw(st.integers(1, s)) for s in shape)
        index_dtype = maybe(draw, draw(st.sampled_from(["i32", "i64"])), ["i16"])
        i = c.tile(index_shape, index_dtype)
        c.index_ranges[c.inputs[-1][0]] = shape[dim % rank] if -rank <= dim < rank else 1
        reduce = draw(st.sampled_from(["", ' reduce "add"', ' reduce "multiply"']))
        if draw(st.booleans()):
            src, src_t = c.tile(index_shape, dtype), ty("tensor", index_shape, dtype)
        else:
            s_dtype = "i32" if dtype in INTS else ("i1" if dtype == "i1" else "f32")
            src, src_t = scalar(c, s_dtype), s_dtype
        t = ty("tensor", shape, dtype)
        c.lines.append(
            f"%r = pto.scatter {x}, {dim}, {i}, {src}{reduce} : {t}, "
            f"{ty('tensor', index_shape, index_dtype)}, {src_t} -> {t}"
        )
        c.results.append(("%r", shape, dtype))
    elif kind == "index_add":
        x = c.tile(shape, dtype)
        rank = len(shape)
        dim = maybe(draw, draw(st.integers(-rank, rank - 1)), [rank])
        d = dim % rank
        n = draw(st.integers(1, 6))
        index_dtype = maybe(draw, draw(st.sampled_from(["i32", "i64"])), ["i16", "f32"])
        i = c.tile((n,), index_dtype)
        c.index_ranges[c.inputs[-1][0]] = shape[d]
        src_shape = maybe(
            draw, (*shape[:d], n, *shape[d + 1 :]), [(*shape[:d], n + 1, *shape[d + 1 :])]
        )
        src_dtype = maybe(draw, dtype, ["f32", "i32"])
        src = c.tile(src_shape, src_dtype)
        alpha = draw(
            st.sampled_from(["", " alpha 2.000000e+00 : f64", " alpha 5.000000e-01 : f64"])
        )
        t = ty("tensor", shape, dtype)
        c.lines.append(
            f"%r = pto.index_add {x}, {dim}, {i}, {src}{alpha} : {t}, "
            f"{ty('tensor', (n,), index_dtype)}, {ty('tensor', src_shape, src_dtype)} -> {t}"
        )
        c.results.append(("%r", shape, dtype))
    elif kind == "deinterleave":
        shape = (*shape[:-1], maybe(draw, 2 * shape[-1], [2 * shape[-1] + 1]))
        x = c.tile(shape, dtype)
        t = ty("tensor", shape, dtype)
        if draw(st.booleans()):
            y = c.tile(shape, dtype)
            out = shape
            c.lines.append(
                f"%e, %o = pto.deinterleave {x}, {y} : {t}, {t} -> {ty('tensor', out, dtype)}, {ty('tensor', out, dtype)}"
            )
        else:
            out = (*shape[:-1], shape[-1] // 2)
            c.lines.append(
                f"%e, %o = pto.deinterleave {x} : {t} -> {ty('tensor', out, dtype)}, {ty('tensor', out, dtype)}"
            )
        c.results += [("%e", out, dtype), ("%o", out, dtype)]
    else:
        x = c.tile(shape, dtype)
        k = draw(st.integers(1, len(shape)))
        n = draw(st.integers(1, 4))
        index_dtype = maybe(draw, draw(st.sampled_from(["i32", "i64"])), ["i8"])
        idx = []
        for d in range(k):
            idx.append(c.tile((n,), index_dtype))
            c.index_ranges[c.inputs[-1][0]] = shape[d]
        v_shape = maybe(draw, (n, *shape[k:]), [(n + 1, *shape[k:])])
        v = c.tile(v_shape, dtype)
        acc = " accumulate" if draw(st.booleans()) else ""
        t = ty("tensor", shape, dtype)
        itypes = ", ".join(ty("tensor", (n,), index_dtype) for _ in idx)
        c.lines.append(
            f"%r = pto.index_put {x}[{', '.join(idx)}], {v}{acc} : {t}[{itypes}], "
            f"{ty('tensor', v_shape, dtype)} -> {t}"
        )
        c.results.append(("%r", shape, dtype))
    return c


CASES = {
    "unary": unary(),
    "binary": binary(),
    "where": where(),
    "cast": cast(),
    "view_type": view_type(),
    "reduce": reduce(),
    "layout": layout(),
    "full": full(),
    "view": view(),
    "get_tensor_data": get_tensor_data(),
    "assemble": assemble(),
    "workspace": workspace(),
    "reshape_mem": reshape_mem(),
    "matmul": matmul(),
    "scaled_mm": scaled_mm(),
    "quant_mx": quant_mx(),
    "indexing": indexing(),
    "settings": settings_ops(),
    "loop": loop(),
    "jit_ops": jit_ops(),
}

COVERS: dict[str, list[str]] = {
    "unary": UNARY,
    "binary": BINARY + COMPARE,
    "where": ["where"],
    "cast": ["cast"],
    "view_type": ["view_type"],
    "reduce": REDUCE,
    "layout": LAYOUT,
    "full": ["full"],
    "view": ["view"],
    "get_tensor_data": ["get_tensor_data"],
    "assemble": ["assemble"],
    "workspace": ["tensor"],
    "reshape_mem": ["reshape_mem"],
    "matmul": ["matmul"],
    "scaled_mm": ["scaled_mm"],
    "quant_mx": ["quant_mx"],
    "indexing": INDEXING,
    "settings": [
        "set_vec_tile_shapes",
        "set_cube_tile_shapes",
        "set_semantic_label",
        "set_options",
    ],
    "loop": ["loop", "loop_unroll", "is_loop_begin", "is_loop_end"],
    "jit_ops": [
        "clone",
        "silu",
        "logical_not",
        "fillpad",
        "arange",
        "scatter_update",
        "scatter",
        "index_put",
        "index_add",
        "deinterleave",
    ],
}
"""The ops each case draws (`loop` draws the loop-state ops in its body)."""


def test_every_binding_has_a_case() -> None:
    """A new binding is drawn here, or this test says where to add its case."""
    drawn = {f"pto.{n}" for names in COVERS.values() for n in names}
    assert COVERS.keys() == CASES.keys()
    missing = sorted(op.name for op in bindings.BY_OP if op.name not in drawn)
    assert not missing, (
        f"{missing} have a binding but no single-op case: add them to a case in "
        "tests/dialect/test_single_op_properties.py (and to COVERS)"
    )


STATS: Counter[str] = Counter()


def inputs_for(c: Case, module, seed: int) -> dict[str, np.ndarray]:
    arrays = random_inputs(module, "k", seed=seed)
    rng = np.random.default_rng(seed)
    for name, bound in c.index_ranges.items():
        arrays[name] = rng.integers(0, bound, size=arrays[name].shape).astype(arrays[name].dtype)
    if c.op in ("pto.div", "pto.pow"):
        # An integer zero divisor or negative exponent is refused at run time with a
        # located error: it depends on the data, which no verifier can rule out. The test
        # checks programs, so it gives integer operands on which the op is defined.
        for name, a in arrays.items():
            if a.dtype.kind in "iu":
                arrays[name] = (np.abs(a.astype(np.int64)) % 4 + 1).astype(a.dtype)
    return arrays


def check_case(c: Case, seed: int = 0) -> str:
    """'valid' or 'invalid'; raises AssertionError on a broken contract."""
    text = c.text()
    note(text)
    try:
        module = parse_module(text, "case.mlir")
    except TileirError as e:
        message = str(e)
        assert message.startswith("case.mlir:"), message
        # A verifier error quotes the op ('pto.neg'); a parse error (a type the custom
        # syntax cannot even state) shows the op's line.
        assert c.op in message, f"refused without naming {c.op}: {message}"
        return "invalid"
    try:
        run(module, inputs_for(c, module, seed), "k")
    except (SemanticsError, TileirError) as e:
        # Index values are drawn in range; anything else refused here verified, so the
        # verifier is missing a rule.
        raise AssertionError(f"verified, but the numpy back end refused it: {e}") from e
    source = emit(module)
    compile(source, "emitted.py", "exec")
    return "valid"


def _test(kind: str) -> Callable[[], None]:
    @given(c=CASES[kind], seed=st.integers(0, 3))
    def test(c: Case, seed: int) -> None:
        outcome = check_case(c, seed)
        event(outcome)
        STATS[f"{kind}:{outcome}"] += 1

    test.__name__ = f"test_single_op_{kind}"
    return test


for _kind in CASES:
    globals()[f"test_single_op_{_kind}"] = _test(_kind)


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    if STATS:
        print("\nsingle-op examples:", dict(sorted(STATS.items())))
