"""`pypto.matmul`: the one op that runs on the Cube core.

`CUBE_OPS` is where "matmul is Cube work" is written: the stage split, stitching and
the PyPTO writer's rank rule (PyPTO does not check a Cube op's rank against the vector
tile shape) read it. The result shape is `shapes.matmul`; `bias` comes from PyPTO's
`extend_params={"bias_tensor": b}`.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy.rules import matmul as rules
from tileir.bindings.binding import Binding, register
from tileir.bindings.reading import shape
from tileir.dialect import dtypes, pto, shapes

CUBE_OPS: tuple[type[Operation], ...] = (pto.MatmulOp,)
"""Ops that run on the Cube core; every other tile op is Vector work."""


def _sig_matmul(
    input, mat2, out_dtype, *, a_trans=False, b_trans=False, c_matrix_nz=False, extend_params=None
): ...


EXTEND_PARAMS = ("bias_tensor", "scale", "relu_type", "trans_mode")
"""The `extend_params` keys read (PyPTO's docs also list `scale_tensor`)."""


def _read_fixpipe(fe: Any, params: dict[str, Any], node: ast.AST) -> dict[str, Any]:
    """`scale`, `relu_type`, `trans_mode` of `extend_params` as `MatmulOp` arguments."""
    out: dict[str, Any] = {}
    scale = fe.resolve(params.get("scale", 0.0), node)
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        fe.fail(node, f"pypto.matmul scale must be a Python number, got {fe.describe(scale)}")
    if scale != 0.0:  # PyPTO's default, 0.0, is no scale
        out["scale"] = float(scale)
    for key, enum, default in (
        ("relu_type", "ReLuType", "NO_RELU"),
        ("trans_mode", "TransMode", "CAST_NONE"),
    ):
        if key not in params:
            continue
        path = fe.pypto_path(params[key]) or ()
        members = (default, "RELU") if key == "relu_type" else (default, *pto.TRANS_MODES)
        if len(path) != 2 or path[0] != enum or path[1] not in members:
            fe.fail(
                node,
                f"pypto.matmul {key} must be one of "
                f"{', '.join(f'pypto.{enum}.{m}' for m in members)}, got "
                f"{fe.describe(params[key])}",
            )
        if key == "relu_type" and path[1] == "RELU":
            out["relu"] = True
        if key == "trans_mode" and path[1] != default:
            out["trans_mode"] = path[1]
    return out


def _read_matmul(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    a = fe.tile(b["input"], node)
    m2 = fe.tile(b["mat2"], node)
    out = fe.dtype(b["out_dtype"], node, "matmul out_dtype")
    if b["c_matrix_nz"]:
        fe.fail(node, "pypto.matmul c_matrix_nz=True is not supported")
    bias = None
    fixpipe: dict[str, Any] = {}
    params = fe.resolve(b["extend_params"], node)
    if params is not None:
        if not isinstance(params, dict):
            fe.fail(node, f"extend_params must be a dict, got {fe.describe(params)}")
        for key in params:
            if key not in EXTEND_PARAMS:
                fe.fail(
                    node,
                    f"pypto.matmul extend_params key {key!r} is not supported (supported: "
                    f"{', '.join(map(repr, EXTEND_PARAMS))})",
                )
        if "bias_tensor" in params:
            bias = fe.tile(params["bias_tensor"], node, "bias_tensor")
        fixpipe = _read_fixpipe(fe, params, node)
    a_trans, b_trans = bool(b["a_trans"]), bool(b["b_trans"])
    try:
        out_shape = shapes.matmul(shape(a), shape(m2), a_trans=a_trans, b_trans=b_trans)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.matmul {e}")
    try:
        shapes.matmul_dtypes(
            dtypes.element_type(a.type.element_type).short,
            out.short,
            scaled=fixpipe.get("scale") is not None,
        )
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.matmul {e}")
    op = pto.MatmulOp(
        a,
        m2,
        TensorType(out.mlir, out_shape),
        bias=bias,
        a_trans=a_trans,
        b_trans=b_trans,
        **fixpipe,
    )
    return fe.emit(op, node).results[0]


def _write_matmul(w: Any, op: pto.MatmulOp) -> str:
    if dtypes.element_type(op.result.type.element_type).short == "i8":
        from tileir.diagnostics import error_at

        raise error_at(
            op,
            "PyPTO 0.2.0 has no int8 matmul output (a quantising matmul: its compiler "
            "reports FC3002 'Unsupported output data type'); -t pypto cannot write it",
        )
    args = [w.use(op.a), w.use(op.b), w.dtype(op.result.type)]
    if op.a_trans is not None:
        args.append("a_trans=True")
    if op.b_trans is not None:
        args.append("b_trans=True")
    params = []
    if op.bias is not None:
        params.append(f'"bias_tensor": {w.use(op.bias)}')
    if op.scale is not None:
        params.append(f'"scale": {op.scale.value.data!r}')
    if op.relu is not None:
        params.append('"relu_type": pypto.ReLuType.RELU')
    if op.trans_mode is not None:  # a verified member name
        params.append(f'"trans_mode": pypto.TransMode.{op.trans_mode.data}')
    if params:
        args.append(f"extend_params={{{', '.join(params)}}}")
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
