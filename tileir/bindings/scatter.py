"""Writing by index: `pypto.scatter_update` (the paged KV-cache write), `scatter` /
`scatter_` (torch.scatter), `index_put_` and `index_add` / `index_add_`.

The `pto` ops are out of place (tiles are values): the result is the updated input.
PyPTO's in-place forms (`scatter_`, `index_put_`, `x.scatter_(...)`) read as the op
plus, on a tensor in memory (a kernel argument or a `pypto.tensor` workspace), a write
of the result back into it: what PyPTO's `input.Move(...)` does; on a computed tile held
by a local variable, the variable takes the result (see the frontend's
`update_in_place`).

PyPTO 0.2.0 work-around: `index_put_` exists only in place, so the writer emits
`tileir_index_put(input, indices, values, accumulate)`, which clones the input, puts
into the clone and returns it; the frontend reads a call of it back as the op.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xdsl.ir import Operation, SSAValue

from tileir.backends.numpy.rules import scatter as rules
from tileir.bindings.binding import BY_OP, HELPER_OPS, Binding, Helper, alias, register
from tileir.bindings.reading import is_index, is_mem, is_number, is_tile, shape
from tileir.dialect import dtypes, pto, shapes


def _sig_scatter_update(input, dim, index, src): ...
def _sig_scatter(input, dim, index, src, *, reduce=None): ...
def _sig_index_put(input, indices, values, accumulate=False): ...
def _sig_index_add(input, dim, index, source, *, alpha=1): ...


INDEX_PUT = Helper(
    "tileir_index_put",
    (
        "def tileir_index_put(input, indices, values, accumulate=False):",
        '    """pypto.index_put_ on a copy of `input`, returned (tileir\'s pto.index_put is',
        '    out of place; PyPTO 0.2.0 has only the in-place form)."""',
        "    out = pypto.clone(input)",
        "    pypto.index_put_(out, indices, values, accumulate)",
        "    return out",
    ),
)


def _in_place(fe: Any, name: str, target: Any, op: Operation, node: ast.AST) -> Any:
    """Emit `op` (the out-of-place form of `pypto.<name>` on `target`) and give PyPTO's
    in-place meaning (the frontend's `update_in_place`)."""
    result = fe.emit(op, node).results[0]
    return fe.update_in_place(name, target, result, node, fe.call_receiver)


# --------------------------------------------------------------------------- scatter_update


def _read_scatter_update(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    x = fe.tile(b["input"], node, "pypto.scatter_update input")
    idx = fe.tile(b["index"], node, "pypto.scatter_update index")
    src = fe.tile(b["src"], node, "pypto.scatter_update src")
    dim = fe.const_int(b["dim"], node, "pypto.scatter_update dim")
    rank = len(shape(x))
    if dim not in (-2, rank - 2):
        fe.fail(node, f"pypto.scatter_update supports only dim=-2 (PyPTO's docs), got {dim}")
    try:
        shapes.scatter_update(shape(x), shape(idx), shape(src))
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.scatter_update: {e}")
    return fe.emit(pto.ScatterUpdateOp(x, idx, src), node).results[0]


def _write_scatter_update(w: Any, op: pto.ScatterUpdateOp) -> str:
    return f"pypto.scatter_update({w.use(op.input)}, -2, {w.use(op.index)}, {w.use(op.src)})"


# --------------------------------------------------------------------------- scatter

REDUCE = {None: "none", "add": "add", "multiply": "multiply"}


def _scatter_op(fe: Any, name: str, b: dict[str, Any], node: ast.AST) -> pto.ScatterOp:
    x = fe.tile(b["input"], node, f"pypto.{name} input")
    idx = fe.tile(b["index"], node, f"pypto.{name} index")
    dim = fe.const_int(b["dim"], node, f"pypto.{name} dim")
    reduce = b["reduce"]
    if reduce not in REDUCE:
        fe.fail(node, f"pypto.{name} reduce must be None, 'add' or 'multiply', got {reduce!r}")
    src = fe.resolve(b["src"], node)
    if is_mem(src):
        src = fe.tile(src, node)
    elif not is_tile(src):
        if not (is_number(src) or is_index(src)):
            fe.fail(node, f"pypto.{name} src must be a tensor or a number, got {fe.describe(src)}")
        src = fe.scalar(src, x.type.get_element_type(), node)
    try:
        shapes.scatter(shape(x), shape(idx), shape(src) if is_tile(src) else None, dim)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.{name}: {e}")
    return pto.ScatterOp(x, dim, idx, src, REDUCE[reduce])


def _read_scatter(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    return fe.emit(_scatter_op(fe, "scatter", b, node), node).results[0]


def _read_scatter_(fe: Any, b: dict[str, Any], node: ast.AST) -> Any:
    target = fe.resolve(b["input"], node)
    return _in_place(fe, "scatter_", target, _scatter_op(fe, "scatter_", b, node), node)


def _write_scatter(w: Any, op: pto.ScatterOp) -> str:
    reduce = "" if op.reduce.data == "none" else f", reduce={w.string(op.reduce.data)}"
    args = f"{w.use(op.input)}, {op.dim.value.data}, {w.use(op.index)}, {w.use(op.src)}"
    return f"pypto.scatter({args}{reduce})"


# --------------------------------------------------------------------------- index_put_


def _index_put_op(fe: Any, b: dict[str, Any], node: ast.AST) -> pto.IndexPutOp:
    x = fe.tile(b["input"], node, "pypto.index_put_ input")
    raw = fe.resolve(b["indices"], node)
    if not isinstance(raw, list | tuple) or not raw:
        fe.fail(
            node, f"pypto.index_put_ indices must be a tuple of tensors, got {fe.describe(raw)}"
        )
    indices = [fe.tile(i, node, "pypto.index_put_ index") for i in raw]
    values = fe.tile(b["values"], node, "pypto.index_put_ values")
    acc = fe.resolve(b["accumulate"], node)
    if not isinstance(acc, bool):
        fe.fail(node, f"pypto.index_put_ accumulate must be True or False, got {fe.describe(acc)}")
    try:
        shapes.index_put(shape(x), [shape(i) for i in indices], shape(values))
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.index_put_: {e}")
    return pto.IndexPutOp(x, indices, values, acc)


def _read_index_put(fe: Any, b: dict[str, Any], node: ast.AST) -> Any:
    target = fe.resolve(b["input"], node)
    result = _in_place(fe, "index_put_", target, _index_put_op(fe, b, node), node)
    return None if is_mem(target) else result


def _read_helper(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    """The writer's `tileir_index_put(...)`: out of place, whatever the input is."""
    return fe.emit(_index_put_op(fe, b, node), node).results[0]


def _write_index_put(w: Any, op: pto.IndexPutOp) -> str:
    w.helper(INDEX_PUT.name)
    indices = ", ".join(w.use(i) for i in op.indices)
    acc = ", True" if op.accumulate is not None else ""
    return f"{INDEX_PUT.name}({w.use(op.input)}, ({indices},), {w.use(op.values)}{acc})"


# --------------------------------------------------------------------------- index_add_


def _index_add_op(fe: Any, name: str, b: dict[str, Any], node: ast.AST) -> pto.IndexAddOp:
    x = fe.tile(b["input"], node, f"pypto.{name} input")
    dim = fe.const_int(b["dim"], node, f"pypto.{name} dim")
    idx = fe.tile(b["index"], node, f"pypto.{name} index")
    src = fe.tile(b["source"], node, f"pypto.{name} source")
    alpha = fe.resolve(b["alpha"], node)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha):
        fe.fail(
            node, f"pypto.{name} alpha must be a finite Python number, got {fe.describe(alpha)}"
        )
    if dtypes.element_type(x.type.get_element_type()).is_int and alpha != int(alpha):
        fe.fail(node, f"pypto.{name} alpha {alpha} must be an integer for an integer tensor")
    try:
        shapes.index_add(shape(x), shape(idx), shape(src), dim)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.{name}: {e}")
    return pto.IndexAddOp(x, dim, idx, src, None if alpha == 1 else float(alpha))


def _read_index_add(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    return fe.emit(_index_add_op(fe, "index_add", b, node), node).results[0]


def _read_index_add_(fe: Any, b: dict[str, Any], node: ast.AST) -> Any:
    target = fe.resolve(b["input"], node)
    return _in_place(fe, "index_add_", target, _index_add_op(fe, "index_add_", b, node), node)


def _write_index_add(w: Any, op: pto.IndexAddOp) -> str:
    args = f"{w.use(op.input)}, {op.dim.value.data}, {w.use(op.index)}, {w.use(op.source)}"
    alpha = f", alpha={op.alpha.value.data!r}" if op.alpha is not None else ""
    return f"pypto.index_add({args}{alpha})"


register(
    Binding(
        "index_add",
        pto.IndexAddOp,
        _sig_index_add,
        _read_index_add,
        _write_index_add,
        rules.index_add_rule,
        "index_add",
    ),
    Binding(
        "scatter_update",
        pto.ScatterUpdateOp,
        _sig_scatter_update,
        _read_scatter_update,
        _write_scatter_update,
        rules.scatter_update_rule,
        "scatter_update",
    ),
    Binding(
        "scatter",
        pto.ScatterOp,
        _sig_scatter,
        _read_scatter,
        _write_scatter,
        rules.scatter_rule,
        "scatter",
    ),
    Binding(
        "index_put_",
        pto.IndexPutOp,
        _sig_index_put,
        _read_index_put,
        _write_index_put,
        rules.index_put_rule,
        "index_put",
        None,
        INDEX_PUT,
    ),
)
alias(
    Binding(
        "scatter_",
        pto.ScatterOp,
        _sig_scatter,
        _read_scatter_,
        BY_OP[pto.ScatterOp].write,
        rules.scatter_rule,
        "scatter",
    )
)
alias(
    Binding(
        INDEX_PUT.name,
        pto.IndexPutOp,
        _sig_index_put,
        _read_helper,
        _write_index_put,
        rules.index_put_rule,
        "index_put",
    )
)
HELPER_OPS[INDEX_PUT.name] = INDEX_PUT.name
"""A call of the helper reads through its own (out-of-place) entry, not `index_put_`'s."""
alias(
    Binding(
        "index_add_",
        pto.IndexAddOp,
        _sig_index_add,
        _read_index_add_,
        _write_index_add,
        rules.index_add_rule,
        "index_add",
    )
)
