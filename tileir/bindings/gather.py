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
from tileir.bindings.binding import HELPER_OPS, HELPERS, Binding, Helper, register
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


# --------------------------------------------------------------------------- deinterleave
#
# PyPTO 0.2.0 has no `pypto.deinterleave`: the writer emits `tileir_deinterleave(x)`
# (gathermask modes 1 / 2 keep the first / second of every 2 elements of the last dim)
# or `tileir_deinterleave2(x, y)` (the same on `concat([x, y], -1)`).

DEINTERLEAVE = Helper(
    "tileir_deinterleave",
    (
        "def tileir_deinterleave(input):",
        '    """(even, odd) elements of the last dim (PyPTO 0.2.0 has no deinterleave)."""',
        "    return pypto.gathermask(input, 1), pypto.gathermask(input, 2)",
    ),
)
DEINTERLEAVE2 = Helper(
    "tileir_deinterleave2",
    (
        "def tileir_deinterleave2(input, other):",
        '    """deinterleave of the stream concat([input, other], -1) (PyPTO 0.2.0 has none)."""',
        "    stream = pypto.concat([input, other], -1)",
        "    return pypto.gathermask(stream, 1), pypto.gathermask(stream, 2)",
    ),
)


def _sig_deinterleave(input, other=None): ...


def _read_deinterleave(fe: Any, b: dict[str, Any], node: ast.AST) -> tuple[SSAValue, SSAValue]:
    x = fe.tile(b["input"], node)
    other = None if b["other"] is None else fe.tile(b["other"], node, "pypto.deinterleave other")
    try:
        out = shapes.deinterleave(shape(x), other is not None)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.deinterleave: {e}")
    op = fe.emit(pto.DeinterleaveOp(x, other, TensorType(elem(x), out)), node)
    return op.results[0], op.results[1]


def _write_deinterleave(w: Any, op: pto.DeinterleaveOp) -> str:
    if op.other is None:
        w.helper(DEINTERLEAVE.name)
        return f"{DEINTERLEAVE.name}({w.use(op.input)})"
    w.helper(DEINTERLEAVE2.name)
    return f"{DEINTERLEAVE2.name}({w.use(op.input)}, {w.use(op.other)})"


register(
    Binding(
        "deinterleave",
        pto.DeinterleaveOp,
        _sig_deinterleave,
        _read_deinterleave,
        _write_deinterleave,
        rules.deinterleave_rule,
        "deinterleave",
        None,
        DEINTERLEAVE,
    )
)
HELPERS[DEINTERLEAVE2.name] = DEINTERLEAVE2
HELPER_OPS[DEINTERLEAVE2.name] = "deinterleave"
