"""Loop state and settings: `pypto.is_loop_begin / is_loop_end` and the
`set_vec_tile_shapes / set_cube_tile_shapes / set_semantic_label` statements (and
`get_vec_tile_shapes / get_cube_tile_shapes`, which read the latest setting back as a
Python value at trace time, no op), and the
compiler options `set_pass_options / experimental.set_operation_options /
set_matrix_size / experimental.auto_mix_partition / set_codegen_options` (one op, `pto.set_options`, whose
`kind` says which function).

Settings change how PyPTO tiles and labels the ops after them and compute nothing, so
their numpy rule is a no-op. `pypto.loop` / `loop_unroll` are not bindings: the
frontend reads them as the iterable of a `for` (region building), see `INTERNAL`.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import replace
from typing import Any

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from tileir.backends.numpy.rules import control as rules
from tileir.bindings.binding import QUERIES, Binding, Query, alias, register
from tileir.dialect import pto


def _sig_loop_state(index): ...
def _sig_set_vec_tile_shapes(*shapes): ...
def _sig_set_cube_tile_shapes(m, k, n, enable_split_k=False): ...
def _sig_set_semantic_label(label): ...
def _sig_set_options(**options): ...
def _sig_set_matrix_size(size): ...
def _sig_auto_mix_partition(value): ...
def _sig_get_tile_shapes(): ...


def loop_state(pypto: str, op_cls: type[Operation]) -> Binding:
    """`pypto.is_loop_begin(i)` <-> `pto.is_loop_begin %i` (written in the `if` itself,
    as PyPTO requires: the writer inlines it where used)."""

    def read(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
        i = fe.resolve(b["index"], node)
        if not (
            isinstance(i, BlockArgument)
            and isinstance(i.block.parent_op(), pto.LoopOp | pto.LoopUnrollOp)
            and i.index == 0
        ):
            fe.fail(
                node,
                f"pypto.{pypto} takes the index of an enclosing pypto.loop, got {fe.describe(i)}",
            )
        return fe.emit(op_cls(i), node).results[0]

    def write(w: Any, op: Any) -> str:
        return f"pypto.{pypto}({w.use(op.index)})"

    return Binding(pypto, op_cls, _sig_loop_state, read, write, rules.loop_state_rule)


def _tile_size(v: Any) -> Any:
    """A tile-shape entry: the chunk length of a `pypto.loop_unroll` is a constant in
    each body PyPTO traces, but one SSA value in the single `pto.loop_unroll` body; tile
    shapes are sizing hints, so the largest factor stands for it."""
    if (
        isinstance(v, BlockArgument)
        and isinstance(v.block.parent_op(), pto.LoopUnrollOp)
        and v.index == 1
    ):
        loop = v.block.parent_op()
        assert isinstance(loop, pto.LoopUnrollOp)
        return max(loop.factors)
    return v


def _read_vec(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    sizes = [_tile_size(v) for v in b["shapes"]]
    shape = fe.static_ints(sizes, node, "pypto.set_vec_tile_shapes")
    if not 1 <= len(shape) <= pto.MAX_TILE_RANK or any(s <= 0 for s in shape):
        fe.fail(
            node,
            f"pypto.set_vec_tile_shapes{tuple(shape)}: a tile shape has 1 to "
            f"{pto.MAX_TILE_RANK} dims, each > 0",
        )
    fe.emit(pto.SetVecTileShapesOp(shape), node)
    fe.tile_settings["vec"] = list(shape)


def _write_vec(w: Any, op: pto.SetVecTileShapesOp) -> str:
    return f"pypto.set_vec_tile_shapes({', '.join(map(str, op.shape.get_values()))})"


def _read_cube(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    pairs = []
    for key in ("m", "k", "n"):
        value = b[key]
        if isinstance(value, list | tuple):
            value = [_tile_size(v) for v in value]
        pair = fe.static_ints(value, node, f"pypto.set_cube_tile_shapes {key}")
        # k may name A's and B's L1 sizes apart: [kL0, kL1a, kL1b] (PyPTO 0.2.0's CubeTile)
        sizes = (2, 3) if key == "k" else (2,)
        if len(pair) not in sizes or any(v <= 0 for v in pair):
            shape = "[L0, L1] or [L0, L1a, L1b]" if key == "k" else "an [L0, L1] pair"
            fe.fail(
                node,
                f"pypto.set_cube_tile_shapes {key} must be {shape} of positive sizes, got {pair}",
            )
        pairs.append(pair)
    fe.emit(pto.SetCubeTileShapesOp(*pairs, enable_split_k=bool(b["enable_split_k"])), node)
    m, k, n = pairs
    fe.tile_settings["cube"] = (m, k if len(k) == 3 else [*k, k[1]], n, bool(b["enable_split_k"]))


def _write_cube(w: Any, op: pto.SetCubeTileShapesOp) -> str:
    m, k, n = (list(getattr(op, x).get_values()) for x in ("m", "k", "n"))
    split = ", enable_split_k=True" if op.enable_split_k is not None else ""
    return f"pypto.set_cube_tile_shapes({m}, {k}, {n}{split})"


def _read_label(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    label = fe.resolve(b["label"], node)
    if not isinstance(label, str) or not label:
        fe.fail(
            node, f"pypto.set_semantic_label takes a non-empty string, got {fe.describe(label)}"
        )
    fe.emit(pto.SetSemanticLabelOp(label), node)


def _write_label(w: Any, op: pto.SetSemanticLabelOp) -> str:
    return f"pypto.set_semantic_label({w.string(op.label.data)})"


PYPTO_020_OPTIONS: dict[str, frozenset[str] | None] = {
    "pass_options": frozenset(
        {
            "pg_skip_partition",
            "pg_upper_bound",
            "vec_nbuffer_setting",
            "cube_l1_reuse_setting",
            "cube_nbuffer_setting",
            "sg_set_scope",
        }
    ),
    "operation_options": frozenset({"force_combine_axis", "combine_axis"}),
    "matrix_size": frozenset({"size"}),
    "auto_mix_partition": None,
    "codegen_options": frozenset({"support_dynamic_aligned"}),
}
"""The keywords PyPTO 0.2.0's `set_pass_options` / `experimental.set_operation_options` /
`set_codegen_options` take (from their signatures in 0.2.0); newer PyPTO has more (`ooo_sched_mode` ...).
None: 0.2.0 has no such function (`experimental.auto_mix_partition`)."""

_INT_KEYED = frozenset({"vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting"})
"""0.2.0 types these `Dict[int, int]` (newer PyPTO: `Dict[str, int]`)."""


def _compiles_in_020(kind: str, key: str, value: Attribute) -> bool:
    keys = PYPTO_020_OPTIONS[kind]
    if keys is None or key not in keys:
        return False
    if key in _INT_KEYED:
        return isinstance(value, DictionaryAttr) and all(
            k.lstrip("-").isdigit() for k in value.data
        )
    if key == "sg_set_scope":  # an int in 0.2.0; newer PyPTO also takes a tuple
        return isinstance(value, IntegerAttr)
    return True


def _reader_options(kind: str) -> Any:
    function = f"pypto.{pto.OPTION_FUNCTIONS[kind]}"

    def read(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
        attrs: dict[str, Attribute] = {}
        for key, value in b["options"].items():
            if not key.isidentifier() or keyword.iskeyword(key):
                fe.fail(node, f"{function}: option name {key!r} is not a Python keyword name")
            value = fe.resolve(value, node)
            if isinstance(value, SSAValue):
                fe.fail(
                    node,
                    f"{function}({key}=...): option values are Python constants, "
                    f"got {fe.describe(value)}",
                )
            attrs[key] = fe.to_attr(value, node)
        fe.emit(pto.SetOptionsOp(kind, DictionaryAttr(attrs)), node)

    return read


def _write_options(w: Any, op: pto.SetOptionsOp) -> str:
    """The call, with the options PyPTO 0.2.0 cannot compile left out and named in a
    comment (names are identifiers, values are not repeated there)."""
    from tileir.backends.pypto.emitter import literal, sanitize

    kind = op.kind.data
    function = pto.OPTION_FUNCTIONS[kind]
    if PYPTO_020_OPTIONS[kind] is None:
        # the kind is a verified table key, so the comment holds no user text
        return f"pass  # tileir: PyPTO 0.2.0 has no {function}: left out"
    kept, dropped = [], []
    for key, value in op.options.data.items():
        if _compiles_in_020(kind, key, value):
            kept.append(f"{sanitize(key)}={literal(value)}")
        else:
            dropped.append(sanitize(key))
    call = f"pypto.{function}({', '.join(kept)})" if kept else "pass"
    if dropped:
        call += f"  # tileir: PyPTO 0.2.0 cannot compile {', '.join(dropped)}: left out"
    return call


def _read_matrix_size(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    """`pypto.set_matrix_size([m, k, n])`: the matmul sizes PyPTO's Cube tiling assumes,
    kept as `pto.set_options "matrix_size" {size = [m, k, n]}`."""
    size = b["size"]
    if isinstance(size, list | tuple):
        size = [fe.resolve(v, node) for v in size]
    size = fe.static_ints(size, node, "pypto.set_matrix_size")
    fe.emit(pto.SetOptionsOp("matrix_size", DictionaryAttr({"size": fe.to_attr(size, node)})), node)


def _read_auto_mix_partition(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    """`pypto.experimental.auto_mix_partition(1)`: kept as `pto.set_options
    "auto_mix_partition" {value = 1}`; PyPTO accepts 0 (off) or 1 (on) only."""
    value = fe.resolve(b["value"], node)
    if not isinstance(value, int) or isinstance(value, bool) or value not in (0, 1):
        fe.fail(
            node,
            "pypto.experimental.auto_mix_partition takes 0 (disable) or 1 (enable), "
            f"got {fe.describe(value)}",
        )
    attrs = DictionaryAttr({"value": fe.to_attr(value, node)})
    fe.emit(pto.SetOptionsOp("auto_mix_partition", attrs), node)


def _get_vec(fe: Any, b: dict[str, Any], node: ast.AST) -> list[int]:
    """`pypto.get_vec_tile_shapes()`: the shape of the latest `set_vec_tile_shapes` of
    the kernel, a new list; `[]` before any (PyPTO 0.2.0, measured)."""
    return list(fe.tile_settings.get("vec", []))


def _get_cube(fe: Any, b: dict[str, Any], node: ast.AST) -> tuple[Any, ...]:
    """`pypto.get_cube_tile_shapes()`: `(m, k, n, enable_split_k)` of the latest
    `set_cube_tile_shapes`, `k` always `[kL0, kL1a, kL1b]` (a pair `[k0, k1]` reads back
    `[k0, k1, k1]`); `([0, 0], [0, 0, 0], [0, 0], False)` before any (PyPTO 0.2.0,
    measured)."""
    m, k, n, split = fe.tile_settings.get("cube", ([0, 0], [0, 0, 0], [0, 0], False))
    return (list(m), list(k), list(n), split)


QUERIES["get_vec_tile_shapes"] = Query("get_vec_tile_shapes", _sig_get_tile_shapes, _get_vec)
QUERIES["get_cube_tile_shapes"] = Query("get_cube_tile_shapes", _sig_get_tile_shapes, _get_cube)


_OPTIONS = Binding(
    "set_pass_options",
    pto.SetOptionsOp,
    _sig_set_options,
    _reader_options("pass_options"),
    _write_options,
    rules.noop_rule,
)

register(
    loop_state("is_loop_begin", pto.IsLoopBeginOp),
    loop_state("is_loop_end", pto.IsLoopEndOp),
    Binding(
        "set_vec_tile_shapes",
        pto.SetVecTileShapesOp,
        _sig_set_vec_tile_shapes,
        _read_vec,
        _write_vec,
        rules.noop_rule,
    ),
    Binding(
        "set_cube_tile_shapes",
        pto.SetCubeTileShapesOp,
        _sig_set_cube_tile_shapes,
        _read_cube,
        _write_cube,
        rules.noop_rule,
    ),
    Binding(
        "set_semantic_label",
        pto.SetSemanticLabelOp,
        _sig_set_semantic_label,
        _read_label,
        _write_label,
        rules.noop_rule,
    ),
    _OPTIONS,
)
alias(
    replace(
        _OPTIONS,
        pypto="experimental.set_operation_options",
        read=_reader_options("operation_options"),
    )
)
alias(
    replace(
        _OPTIONS, pypto="set_matrix_size", signature=_sig_set_matrix_size, read=_read_matrix_size
    )
)
alias(
    replace(
        _OPTIONS,
        pypto="experimental.auto_mix_partition",
        signature=_sig_auto_mix_partition,
        read=_read_auto_mix_partition,
    )
)
alias(replace(_OPTIONS, pypto="set_codegen_options", read=_reader_options("codegen_options")))
