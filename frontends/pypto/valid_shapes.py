"""`t.valid_shape`: the valid shape PyPTO gives a tensor at trace time.

PyPTO's `Tensor.valid_shape` (`GetValidShape`) is a list of `SymbolicScalar`s that the
kernel's Python may use like `t.shape` (`l = gate.valid_shape[0]`, then `gate[l - 1:l,
:]`). The frontend answers it from the IR built so far, following how PyPTO 0.2.0
propagates valid shapes through its ops (measured by printing `valid_shape` while it
traced kernels):

| tensor | valid shape |
| --- | --- |
| a kernel argument, a `pypto.tensor` workspace, an inplace reshape of one | its shape |
| `pypto.view(x, shape, offsets, valid_shape=v)`, `reshape(..., valid_shape=v)`, `full(..., valid_shape=v)` | `v` |
| a view / slice without `valid_shape` | per dim `max(0, min(size, valid(x) - offset))` (a window reaching past the source is clamped so) |
| unary ops, casts, `clone`, `logical_not` | the operand's |
| binary ops, compares, `where` | per dim the first tensor operand's, unless that operand is broadcast there (size 1) |
| `scatter` / `gather` | the input's / the index's |
| `gathermask` | the input's, the last dim divided (floor) by the pattern's stride |
| `view(x, dtype=...)` | the input's, the last dim `valid * size / new_size` (element bytes) |
| `sum` / `amax` / `amin` | the operand's, the reduced dim 1 (keepdim) or dropped |
| `transpose` / `unsqueeze` | the operand's, swapped / a 1 inserted |
| `matmul` | M of `a`, N of `b` (per the trans flags), batch dims of `a` |
| `topk` | the operand's, `k` in the dim |
| `reshape` / `full` without `valid_shape`, `concat`, `expand_clone`, `fillpad`, `index_select`, `arange` | the result shape |

Values are Python ints where known at trace time, else index values (the view's own
operands, or `arith` ops computing the clamp). Anything else (a tile from a runtime
`if`, an op not listed) is a located error. PyPTO 0.2.0 builds `sigmoid` from other ops
and reports the whole tile as valid; it is read here as the unary op newer PyPTO has.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Operation, SSAValue

from frontends.pypto.kinds import describe, is_mem, static_shape
from tileir.dialect import dtypes, pto, shapes

if TYPE_CHECKING:
    from frontends.pypto.translator import Translator

Dim = int | SSAValue

_SAME_AS_OPERAND = (pto.UnaryOp, pto.CastOp, pto.LogicalNotOp)
_RESULT_SHAPE = (pto.ConcatOp, pto.ExpandCloneOp, pto.FillpadOp, pto.IndexSelectOp, pto.ArangeOp)


def valid_shape(fe: Translator, v: SSAValue, node: ast.AST) -> list[Dim]:
    """The valid shape of a tile or a tensor in memory, as PyPTO reports it."""
    if is_mem(v):
        return fe.shape_of(v, node)
    op = v.owner
    if not isinstance(op, Operation):
        fe.fail(node, f"tileir cannot tell the valid shape of {describe(v)} (a block argument)")
    if isinstance(op, pto.ViewOp):
        given = op.mixed_valid_shape
        if given is not None:
            return list(given)
        return _window(fe, op, node)
    if isinstance(op, pto.ReshapeOp | pto.FullOp):
        given = op.mixed_valid_shape
        return list(given) if given is not None else fe.shape_of(v, node)
    if isinstance(op, _SAME_AS_OPERAND):
        return valid_shape(fe, op.operands[0], node)
    if isinstance(op, pto.ScatterOp):
        return valid_shape(fe, op.input, node)
    if isinstance(op, pto.GatherOp):
        return valid_shape(fe, op.index, node)
    if isinstance(op, pto.GathermaskOp):
        dims = valid_shape(fe, op.input, node)
        stride = shapes.gathermask_stride(op.pattern_mode.value.data)
        last = dims[-1]
        if stride > 1:
            last = (
                last // stride
                if isinstance(last, int)
                else _emit(fe, arith.FloorDivSIOp, last, stride, node)
            )
        return dims[:-1] + [last]
    if isinstance(op, pto.ViewTypeOp):
        dims = valid_shape(fe, op.input, node)
        size = dtypes.element_type(op.input.type.get_element_type()).numpy.itemsize
        new = dtypes.element_type(op.result.type.get_element_type()).numpy.itemsize
        last = dims[-1]
        if isinstance(last, int):
            last = last * size // new
        else:
            wide = _emit(fe, arith.MuliOp, last, size, node) if size > 1 else last
            last = _emit(fe, arith.FloorDivSIOp, wide, new, node) if new > 1 else wide
        return dims[:-1] + [last]
    if isinstance(op, pto.BinaryOp | pto.WhereOp):
        return _elementwise(fe, op, v, node)
    if isinstance(op, pto.ReduceOp):
        dims = valid_shape(fe, op.input, node)
        d = op.dim.value.data % len(dims)
        return dims[:d] + ([1] if op.keepdim is not None else []) + dims[d + 1 :]
    if isinstance(op, pto.TransposeOp):
        dims = valid_shape(fe, op.input, node)
        a, b = (x.value.data % len(dims) for x in (op.dim0, op.dim1))
        dims[a], dims[b] = dims[b], dims[a]
        return dims
    if isinstance(op, pto.UnsqueezeOp):
        dims = valid_shape(fe, op.input, node)
        d = op.dim.value.data % (len(dims) + 1)
        return dims[:d] + [1] + dims[d:]
    if isinstance(op, pto.MatmulOp):
        a, b = valid_shape(fe, op.a, node), valid_shape(fe, op.b, node)
        m = a[-1] if op.a_trans is not None else a[-2]
        n = b[-2] if op.b_trans is not None else b[-1]
        return a[:-2] + [m, n]
    if isinstance(op, pto.TopkOp):
        dims = valid_shape(fe, op.input, node)
        d = op.dim.value.data % len(dims)
        dims[d] = static_shape(v.type)[d]
        return dims
    if isinstance(op, _RESULT_SHAPE):
        return fe.shape_of(v, node)
    fe.fail(
        node,
        f"tileir does not know the valid shape PyPTO gives the result of '{op.name}' "
        f"({describe(v)}); known: views, reshape, full, elementwise ops, casts, "
        "reductions, transpose, unsqueeze, matmul, topk, gather, gathermask, scatter, "
        "concat, expand_clone, fillpad, index_select, arange",
    )


def _window(fe: Translator, op: pto.ViewOp, node: ast.AST) -> list[Dim]:
    """A view without `valid_shape`: `window_valid_shape` of its window."""
    sizes = iter(op.sizes)
    extents: list[Dim] = [
        next(sizes) if size == DYNAMIC_INDEX else size for size in static_shape(op.result.type)
    ]
    return window_valid_shape(fe, op.source, op.mixed_offsets, extents, node)


def window_valid_shape(
    fe: Translator, source: SSAValue, offsets: list[Dim], extents: list[Dim], node: ast.AST
) -> list[Dim]:
    """What of a window (`offsets`, `extents`) lies inside the source's valid region,
    `max(0, min(size, valid - offset))` per dim (PyPTO's `GetViewValidShapeDim`): the
    valid shape PyPTO gives a view without `valid_shape`."""
    out: list[Dim] = []
    for valid, offset, extent in zip(valid_shape(fe, source, node), offsets, extents):
        if isinstance(valid, int) and isinstance(offset, int) and isinstance(extent, int):
            out.append(max(0, min(extent, valid - offset)))
        elif offset == 0 and (valid is extent or (isinstance(valid, int) and valid == extent)):
            out.append(valid)
        else:
            rest = valid if offset == 0 else _emit(fe, arith.SubiOp, valid, offset, node)
            inside = _emit(fe, arith.MinSIOp, rest, extent, node)
            out.append(inside if offset == 0 else _emit(fe, arith.MaxSIOp, inside, 0, node))
    return out


def _elementwise(fe: Translator, op: Operation, v: SSAValue, node: ast.AST) -> list[Dim]:
    """Per dim, the first tile operand's valid size (for `where`, the condition's),
    unless that operand is broadcast along the dim (size 1, or missing, where the result
    is larger): then the next's."""
    result = static_shape(v.type)
    tiles = [
        (static_shape(x.type), valid_shape(fe, x, node))
        for x in op.operands
        if isinstance(x.type, TensorType)
    ]
    out: list[Dim] = []
    for d, size in enumerate(result):
        back = len(result) - d
        dim: Dim | None = None
        for shape, valid in tiles:
            if back <= len(shape) and (shape[-back] == size or size == 1):
                dim = valid[-back]
                break
        out.append(size if dim is None else dim)
    return out


def _emit(fe: Translator, cls: type[Operation], a: Dim, b: Dim, node: ast.AST) -> SSAValue:
    return fe.emit(cls(fe.index(a, node), fe.index(b, node)), node).results[0]
