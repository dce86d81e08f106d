"""Reductions along one dim: `pypto.sum / amax / amin(x, dim, keepdim=False)`.

The result shape is `shapes.reduce`; the numpy rule reads only the valid part of the
reduced dim of a tail tile.
"""

from __future__ import annotations

import ast
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy.rules import reduce as rules
from tileir.bindings.binding import Binding, register
from tileir.bindings.reading import elem, shape
from tileir.dialect import pto, shapes


def _sig_reduce(input, dim, keepdim=False): ...


def reduction(pypto: str, op_cls: type[Operation]) -> Binding:
    """`pypto.sum(x, dim, keepdim)` <-> `pto.sum %x, dim keepdim`."""

    def read(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
        x = fe.tile(b["input"], node)
        dim = fe.const_int(fe.resolve(b["dim"], node), node, f"pypto.{pypto} dim")
        keepdim = bool(b["keepdim"])
        try:
            out = shapes.reduce(shape(x), dim, keepdim)
        except shapes.ShapeError as e:
            fe.fail(node, f"pypto.{pypto}: {e}")
        return fe.emit(op_cls(x, dim, keepdim, TensorType(elem(x), out)), node).results[0]

    def write(w: Any, op: Any) -> str:
        keep = ", keepdim=True" if op.keepdim is not None else ""
        return f"pypto.{pypto}({w.use(op.input)}, dim={op.dim.value.data}{keep})"

    return Binding(pypto, op_cls, _sig_reduce, read, write, rules.reduce_rule, pypto)


register(
    reduction("sum", pto.SumOp),
    reduction("amax", pto.AmaxOp),
    reduction("amin", pto.AminOp),
)
