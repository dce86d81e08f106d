"""The one table: PyPTO API name <-> `pto` op class <-> numpy semantics function.

The frontend reads `pypto.<name>(...)` calls through it, the emitter writes them back
through it, and the numpy back end finds each op's semantics function in
`tileir.backends.numpy.semantics` by the name given here. Adding an op is one row here,
its class in `pto.py`, and its semantics function.

Where PyPTO 0.2.0 lacks an op or mishandles it (tanh, erf; sigmoid on tail tiles), the
PyPTO emitter writes a module-level helper function instead (`tileir_tanh(x)`); `helper`
names it, and the frontend reads a call of it back as the op (`HELPER_OPS`).

`kind` says how the call's arguments map onto the op, so that the families (unary,
binary, compare, reduce) need no per-op code anywhere:

| kind      | PyPTO call                       | op                                  |
|-----------|----------------------------------|-------------------------------------|
| unary     | `pypto.exp(x)`                   | `pto.exp %x`                        |
| binary    | `pypto.add(x, y)`, `x + y`       | `pto.add %x, %y` (tile or scalar)   |
| compare   | `pypto.lt(x, y)`                 | `pto.lt %x, %y` -> i1 tile          |
| reduce    | `pypto.sum(x, dim, keepdim)`     | `pto.sum %x, dim keepdim`           |
| special   | anything else                    | handled by name                     |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.irdl import IRDLOperation

from tileir.dialect import pto

Kind = Literal["unary", "binary", "compare", "reduce", "special"]


@dataclass(frozen=True)
class OpSpec:
    pypto: str
    """Name of the function in the `pypto` module."""
    op: type[IRDLOperation]
    kind: Kind
    semantics: str
    """Name of the function in `tileir.backends.numpy.semantics`."""
    python_operator: str | None = None
    """The Python operator that means the same on PyPTO tensors (`+` for add)."""
    helper: str | None = None
    """The module-level helper function the emitter writes for this op where PyPTO
    0.2.0 cannot run `pypto.<name>` (the helper's source text is the emitter's)."""


def _row(
    pypto: str,
    op: type[IRDLOperation],
    kind: Kind,
    operator: str | None = None,
    *,
    helper: bool = False,
) -> OpSpec:
    return OpSpec(pypto, op, kind, pypto, operator, f"tileir_{pypto}" if helper else None)


OPS: tuple[OpSpec, ...] = (
    # memory and layout
    _row("tensor", pto.TensorOp, "special"),
    _row("view", pto.ViewOp, "special"),
    _row("assemble", pto.AssembleOp, "special"),
    _row("reshape", pto.ReshapeOp, "special"),
    _row("transpose", pto.TransposeOp, "special"),
    _row("concat", pto.ConcatOp, "special"),
    _row("unsqueeze", pto.UnsqueezeOp, "special"),
    _row("expand_clone", pto.ExpandCloneOp, "special"),
    _row("cast", pto.CastOp, "special"),
    # elementwise
    _row("neg", pto.NegOp, "unary"),
    _row("exp", pto.ExpOp, "unary"),
    _row("log", pto.LogOp, "unary"),
    _row("sqrt", pto.SqrtOp, "unary"),
    _row("rsqrt", pto.RsqrtOp, "unary"),
    _row("tanh", pto.TanhOp, "unary", helper=True),
    _row("erf", pto.ErfOp, "unary", helper=True),
    _row("sigmoid", pto.SigmoidOp, "unary", helper=True),
    _row("abs", pto.AbsOp, "unary"),
    _row("reciprocal", pto.ReciprocalOp, "unary"),
    _row("relu", pto.ReluOp, "unary"),
    _row("add", pto.AddOp, "binary", "+"),
    _row("sub", pto.SubOp, "binary", "-"),
    _row("mul", pto.MulOp, "binary", "*"),
    _row("div", pto.DivOp, "binary", "/"),
    _row("maximum", pto.MaximumOp, "binary"),
    _row("minimum", pto.MinimumOp, "binary"),
    _row("pow", pto.PowOp, "binary", "**"),
    _row("eq", pto.EqOp, "compare", "=="),
    _row("ne", pto.NeOp, "compare", "!="),
    _row("lt", pto.LtOp, "compare", "<"),
    _row("le", pto.LeOp, "compare", "<="),
    _row("gt", pto.GtOp, "compare", ">"),
    _row("ge", pto.GeOp, "compare", ">="),
    _row("full", pto.FullOp, "special"),
    _row("where", pto.WhereOp, "special"),
    # reductions
    _row("sum", pto.SumOp, "reduce"),
    _row("amax", pto.AmaxOp, "reduce"),
    _row("amin", pto.AminOp, "reduce"),
    # cube and indexing
    _row("matmul", pto.MatmulOp, "special"),
    _row("gathermask", pto.GathermaskOp, "special"),
    _row("gather", pto.GatherOp, "special"),
    _row("index_select", pto.IndexSelectOp, "special"),
    _row("topk", pto.TopkOp, "special"),
    # loops, loop state and settings
    _row("loop", pto.LoopOp, "special"),
    _row("loop_unroll", pto.LoopUnrollOp, "special"),
    _row("is_loop_begin", pto.IsLoopBeginOp, "special"),
    _row("is_loop_end", pto.IsLoopEndOp, "special"),
    _row("set_vec_tile_shapes", pto.SetVecTileShapesOp, "special"),
    _row("set_cube_tile_shapes", pto.SetCubeTileShapesOp, "special"),
    _row("set_semantic_label", pto.SetSemanticLabelOp, "special"),
)

BY_PYPTO: dict[str, OpSpec] = {s.pypto: s for s in OPS}
BY_OP: dict[type[IRDLOperation], OpSpec] = {s.op: s for s in OPS}
BY_OPERATOR: dict[str, OpSpec] = {s.python_operator: s for s in OPS if s.python_operator}
HELPER_OPS: dict[str, str] = {s.helper: s.pypto for s in OPS if s.helper}
"""Helper function name -> the PyPTO op it stands for (`tileir_tanh` -> `tanh`)."""
