"""`pypto.matmul` and `pypto.scaled_mm`: the ops that run on the Cube core; and
`pypto.quant_mx`, the Vector op that makes `scaled_mm`'s fp8 operands and e8m0 scales.

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

CUBE_OPS: tuple[type[Operation], ...] = (pto.MatmulOp, pto.ScaledMmOp)
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


# --------------------------------------------------------------------------- scaled_mm


def _sig_scaled_mm(
    mat_a,
    mat_b,
    out_dtype,
    scale_a,
    scale_b,
    *,
    a_trans=False,
    b_trans=False,
    scale_a_trans=False,
    scale_b_trans=False,
    c_matrix_nz=False,
    extend_params=None,
): ...


SCALED_MM_FLAGS = ("a_trans", "b_trans", "scale_a_trans", "scale_b_trans")

SCALED_MM_ARCH_NOTE = (
    "# tileir: PyPTO 0.2.0 compiles scaled_mm (fp8 operands) for DAV_3510 (Ascend 950) "
    "only; on DAV_2201 it reports FC3000"
)
"""The comment `-t pypto` writes on a `pypto.scaled_mm` line: PyPTO 0.2.0 has the function,
but its Cube checks refuse fp8 operands on any other architecture, the CPU's included."""


def _read_scaled_mm(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    a = fe.tile(b["mat_a"], node, "mat_a")
    m2 = fe.tile(b["mat_b"], node, "mat_b")
    out = fe.dtype(b["out_dtype"], node, "scaled_mm out_dtype")
    sa = fe.tile(b["scale_a"], node, "scale_a")
    sb = fe.tile(b["scale_b"], node, "scale_b")
    if b["c_matrix_nz"]:
        fe.fail(node, "pypto.scaled_mm c_matrix_nz=True is not supported")
    flags = {}
    for name in SCALED_MM_FLAGS:
        value = fe.resolve(b[name], node)
        if not isinstance(value, bool):  # PyPTO 0.2.0 checks a_trans / b_trans the same way
            fe.fail(node, f"pypto.scaled_mm {name} must be a bool, got {fe.describe(value)}")
        flags[name] = value
    bias = None
    params = fe.resolve(b["extend_params"], node)
    if params is not None:
        if not isinstance(params, dict):
            fe.fail(node, f"extend_params must be a dict, got {fe.describe(params)}")
        for key in params:
            if key != "bias_tensor":
                fe.fail(
                    node,
                    f"pypto.scaled_mm extend_params key {key!r} is not supported "
                    "(supported: 'bias_tensor')",
                )
        if "bias_tensor" in params:
            bias = fe.tile(params["bias_tensor"], node, "bias_tensor")
    short = [dtypes.element_type(v.type.element_type).short for v in (a, m2, sa, sb)]
    try:
        out_shape = shapes.scaled_mm(shape(a), shape(m2), shape(sa), shape(sb), **flags)
        shapes.scaled_mm_dtypes(
            *short,
            out.short,
            dtypes.element_type(bias.type.element_type).short if bias is not None else None,
        )
        if bias is not None:
            shapes.matmul_bias(shape(bias), out_shape)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.scaled_mm {e}")
    op = pto.ScaledMmOp(a, m2, sa, sb, TensorType(out.mlir, out_shape), bias=bias, **flags)
    return fe.emit(op, node).results[0]


def _write_scaled_mm(w: Any, op: pto.ScaledMmOp) -> str:
    args = [w.use(op.a), w.use(op.b), w.dtype(op.result.type), w.use(op.scale_a)]
    args.append(w.use(op.scale_b))
    args += [f"{name}=True" for name in SCALED_MM_FLAGS if getattr(op, name) is not None]
    if op.bias is not None:
        args.append(f'extend_params={{"bias_tensor": {w.use(op.bias)}}}')
    return f"pypto.scaled_mm({', '.join(args)})  {SCALED_MM_ARCH_NOTE}"


register(
    Binding(
        "scaled_mm",
        pto.ScaledMmOp,
        _sig_scaled_mm,
        _read_scaled_mm,
        _write_scaled_mm,
        rules.scaled_mm_rule,
        "scaled_mm",
    )
)


# --------------------------------------------------------------------------- quant_mx


def _sig_quant_mx(input, quant_dtype=None, mode=None, axis=-1, performance_mode=False): ...


QUANT_MX_MODES = (("ROUND_DOWN",), ("DequantScaleRoundingMode", "ROUND_DOWN"))
"""How `pypto.quant_mx`'s `mode` may be spelled; ROUND_DOWN is the only mode (the docs)."""

QUANT_MX_NOTE = "# tileir: not in PyPTO 0.2.0 (newer PyPTO, Ascend 950)"
"""The comment `-t pypto` writes on a `pypto.quant_mx` line."""


def _read_quant_mx(fe: Any, b: dict[str, Any], node: ast.AST) -> tuple[SSAValue, SSAValue]:
    """`pypto.quant_mx(input, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, performance_mode)`;
    every argument but `input` may be left out (the docs' defaults), and each takes only
    the value the docs allow today."""
    x = fe.tile(b["input"], node, "input")
    if b["quant_dtype"] is not None:
        out = fe.dtype(b["quant_dtype"], node, "quant_mx quant_dtype")
        if out.short != shapes.QUANT_MX_OUT_DTYPE:
            fe.fail(node, f"pypto.quant_mx quant_dtype must be pypto.DT_FP8E4M3, got {out.pypto}")
    if b["mode"] is not None and fe.pypto_path(b["mode"]) not in QUANT_MX_MODES:
        fe.fail(node, f"pypto.quant_mx mode must be pypto.ROUND_DOWN, got {fe.describe(b['mode'])}")
    rank = len(shape(x))
    axis = fe.const_int(b["axis"], node, "pypto.quant_mx axis")
    if axis not in (-1, rank - 1):
        fe.fail(node, f"pypto.quant_mx quantises the last dim only (axis -1), got axis {axis}")
    performance_mode = fe.resolve(b["performance_mode"], node)
    if not isinstance(performance_mode, bool):
        fe.fail(
            node,
            f"pypto.quant_mx performance_mode must be a bool, got {fe.describe(performance_mode)}",
        )
    try:
        q_shape, s_shape = shapes.quant_mx(shape(x), dtypes.element_type(x.type.element_type).short)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.quant_mx {e}")
    q_type = TensorType(dtypes.BY_SHORT[shapes.QUANT_MX_OUT_DTYPE].mlir, q_shape)
    s_type = TensorType(dtypes.BY_SHORT[shapes.SCALED_MM_SCALE_DTYPE].mlir, s_shape)
    op = fe.emit(pto.QuantMxOp(x, q_type, s_type, performance_mode=performance_mode), node)
    return op.results[0], op.results[1]


def _write_quant_mx(w: Any, op: pto.QuantMxOp) -> str:
    performance_mode = op.performance_mode is not None
    return (
        f"pypto.quant_mx({w.use(op.input)}, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, "
        f"{performance_mode})  {QUANT_MX_NOTE}"
    )


register(
    Binding(
        "quant_mx",
        pto.QuantMxOp,
        _sig_quant_mx,
        _read_quant_mx,
        _write_quant_mx,
        rules.quant_mx_rule,
        "quant_mx",
    )
)
