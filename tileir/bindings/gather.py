"""Indexing: `pypto.gathermask`, `gather`, `index_select` and `topk`.

Result shapes come from `shapes.gathermask / gather / index_select / topk`; the
gathermask pattern modes (first kept element and step) are `shapes.GATHERMASK_PATTERNS`.
"""

from __future__ import annotations

import ast
from typing import Any

from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy.rules import gather as rules
from tileir.bindings.binding import Binding, register
from tileir.bindings.reading import elem, read_tile_int, shape
from tileir.dialect import pto, shapes


def _sig_gathermask(input, pattern_mode): ...
def _sig_gather(input, dim, index): ...
def _sig_topk(input, k, dim=None, largest=True): ...


def _read_gathermask(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    return read_tile_int(
        fe,
        b,
        node,
        pto.GathermaskOp,
        "pattern_mode",
        "pattern_mode",
        shapes.gathermask,
        "pypto.gathermask",
    )


def _write_gathermask(w: Any, op: pto.GathermaskOp) -> str:
    return f"pypto.gathermask({w.use(op.input)}, {op.pattern_mode.value.data})"


def index_op(pypto: str, op_cls: type[Operation]) -> Binding:
    """`pypto.gather(x, dim, index)` / `pypto.index_select(x, dim, index)`."""
    rule = getattr(shapes, pypto)

    def read(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
        x = fe.tile(b["input"], node)
        idx = fe.tile(b["index"], node, f"pypto.{pypto} index")
        dim = fe.const_int(b["dim"], node, f"pypto.{pypto} dim")
        try:
            out = rule(shape(x), shape(idx), dim)
        except shapes.ShapeError as e:
            fe.fail(node, f"pypto.{pypto}: {e}")
        return fe.emit(op_cls(x, dim, idx, TensorType(elem(x), out)), node).results[0]

    def write(w: Any, op: Any) -> str:
        return f"pypto.{pypto}({w.use(op.input)}, {op.dim.value.data}, {w.use(op.index)})"

    return Binding(pypto, op_cls, _sig_gather, read, write, rules.index_rule, pypto)


def _read_topk(fe: Any, b: dict[str, Any], node: ast.AST) -> tuple[SSAValue, SSAValue]:
    x = fe.tile(b["input"], node)
    k = fe.const_int(b["k"], node, "pypto.topk k")
    dim = -1 if b["dim"] is None else fe.const_int(b["dim"], node, "pypto.topk dim")
    try:
        out = shapes.topk(shape(x), k, dim)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.topk {e}")
    op = pto.TopkOp(x, k, dim, bool(b["largest"]), TensorType(elem(x), out), TensorType(i32, out))
    fe.emit(op, node)
    return op.results[0], op.results[1]


def _write_topk(w: Any, op: pto.TopkOp) -> str:
    largest = "" if op.largest.value.data else ", largest=False"
    return f"pypto.topk({w.use(op.input)}, {op.k.value.data}, {op.dim.value.data}{largest})"


register(
    Binding(
        "gathermask",
        pto.GathermaskOp,
        _sig_gathermask,
        _read_gathermask,
        _write_gathermask,
        rules.gathermask_rule,
        "gathermask",
    ),
    index_op("gather", pto.GatherOp),
    index_op("index_select", pto.IndexSelectOp),
    Binding("topk", pto.TopkOp, _sig_topk, _read_topk, _write_topk, rules.topk_rule, "topk"),
)
