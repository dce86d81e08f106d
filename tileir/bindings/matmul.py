"""`pypto.matmul`: the one op that runs on the Cube core.

`CUBE_OPS` is where "matmul is Cube work" is written: the stage split, stitching and
the PyPTO writer's rank rule (PyPTO does not check a Cube op's rank against the vector
tile shape) read it. The result shape is `shapes.matmul`; `bias` comes from PyPTO's
`extend_params={"bias_tensor": b}`.
"""

from __future__ import annotations

import ast
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy.rules import matmul as rules
from tileir.bindings.binding import Binding, register
from tileir.bindings.reading import shape
from tileir.dialect import pto, shapes

CUBE_OPS: tuple[type[Operation], ...] = (pto.MatmulOp,)
"""Ops that run on the Cube core; every other tile op is Vector work."""


def _sig_matmul(
    input, mat2, out_dtype, *, a_trans=False, b_trans=False, c_matrix_nz=False, extend_params=None
): ...


def _read_matmul(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    a = fe.tile(b["input"], node)
    m2 = fe.tile(b["mat2"], node)
    out = fe.dtype(b["out_dtype"], node, "matmul out_dtype")
    if b["c_matrix_nz"]:
        fe.fail(node, "pypto.matmul c_matrix_nz=True is not supported")
    bias = None
    params = fe.resolve(b["extend_params"], node)
    if params is not None:
        if not isinstance(params, dict):
            fe.fail(node, f"extend_params must be a dict, got {fe.describe(params)}")
        for key in params:
            if key != "bias_tensor":
                fe.fail(
                    node,
                    f"pypto.matmul extend_params key {key!r} is not supported (supported: "
                    "'bias_tensor')",
                )
        if "bias_tensor" in params:
            bias = fe.tile(params["bias_tensor"], node, "bias_tensor")
    a_trans, b_trans = bool(b["a_trans"]), bool(b["b_trans"])
    try:
        out_shape = shapes.matmul(shape(a), shape(m2), a_trans=a_trans, b_trans=b_trans)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.matmul {e}")
    op = pto.MatmulOp(
        a, m2, TensorType(out.mlir, out_shape), bias=bias, a_trans=a_trans, b_trans=b_trans
    )
    return fe.emit(op, node).results[0]


def _write_matmul(w: Any, op: pto.MatmulOp) -> str:
    args = [w.use(op.a), w.use(op.b), w.dtype(op.result.type)]
    if op.a_trans is not None:
        args.append("a_trans=True")
    if op.b_trans is not None:
        args.append("b_trans=True")
    if op.bias is not None:
        args.append(f'extend_params={{"bias_tensor": {w.use(op.bias)}}}')
    return f"pypto.matmul({', '.join(args)})"


register(
    Binding(
        "matmul",
        pto.MatmulOp,
        _sig_matmul,
        _read_matmul,
        _write_matmul,
        rules.matmul_rule,
        "matmul",
    )
)
