"""Memory and layout: `pypto.tensor`, `view`, `assemble`, `Tensor.__getitem__` (one
element, `x[i, j]`), `reshape`, `transpose`, `concat`, `unsqueeze` and `expand_clone`.

`view` reads a window of a tensor (in memory or a tile) into a tile, `assemble` writes
a tile into a tensor in memory, `x[i, j]` reads one element of an integer tensor as a
run-time index value; the rest rearrange a tile. Result shapes come from
`shapes.reshape / transpose / concat / unsqueeze / expand`.

PyPTO 0.2.0 work-arounds: a whole-tensor write (`assemble` at offset 0 of a tile of the
tensor's shape) is written `dst[:] = t`, as the seed kernels write it: PyPTO 0.2.0
rejects the equal `assemble` into a workspace written in both branches of an `if`
(`F21007 Operation already in a group`). The frontend reads `dst[:] = t` back as the
assemble. PyPTO 0.2.0 reads one element only from a DT_INT32 tensor (the Gym also reads
DT_INT64 tables): another integer type is written `tileir_get_tensor_data(x, [i, j])`,
which reads the element from its window cast to DT_INT32.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType, i32
from xdsl.ir import SSAValue

from tileir.backends.numpy.rules import memory as rules
from tileir.bindings.binding import Binding, Helper, register
from tileir.bindings.reading import elem, is_mem, is_tile, read_tile_int, shape
from tileir.dialect import dtypes, pto, shapes


def _sig_tensor(shape, dtype=None, name=""): ...
def _sig_view(input, shape=None, offsets=None, *, valid_shape=None, dtype=None): ...
def _sig_assemble(src, offsets, dst): ...
def _sig_getitem(self, key): ...
def _sig_reshape(input, shape, *, valid_shape=None, inplace=False): ...
def _sig_transpose(input, dim0, dim1): ...
def _sig_concat(tensors, dim=0): ...
def _sig_unsqueeze(input, dim): ...
def _sig_expand_clone(input, shape, *, valid_shape=None): ...


def _valid(fe: Any, b: dict[str, Any], node: ast.AST) -> list[int | SSAValue] | None:
    return None if b["valid_shape"] is None else fe.mixed(b["valid_shape"], node, "valid_shape")


def _valid_kw(w: Any, op: Any) -> str:
    valid = op.mixed_valid_shape
    return f", valid_shape={w.mixed(valid)}" if valid is not None else ""


# --------------------------------------------------------------------------- tensor


def _read_tensor(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    # Run-time sizes (`x.shape[0]` of a DYNAMIC dim, a loop index, an element read) are
    # `?` dims sized by the op's `sizes`.
    dims = fe.mixed(b["shape"], node, "pypto.tensor shape")
    bad = [d for d in dims if isinstance(d, int) and d <= 0]
    if not dims or bad:
        fe.fail(node, f"pypto.tensor shape needs sizes > 0, got {bad[0] if bad else '[]'}")
    if b["dtype"] is None:
        fe.fail(node, "pypto.tensor needs a dtype")
    element = fe.dtype(b["dtype"], node)
    name = b["name"]
    if not isinstance(name, str):
        fe.fail(node, "pypto.tensor name must be a string")
    if not name:
        fe.workspace_count += 1
        name = f"ws{fe.workspace_count}"
    static = [d if isinstance(d, int) else DYNAMIC_INDEX for d in dims]
    sizes = [d for d in dims if isinstance(d, SSAValue)]
    return fe.emit(pto.TensorOp(name, MemRefType(element.mlir, static), sizes), node).results[0]


def _write_tensor(w: Any, op: pto.TensorOp) -> str:
    t = op.result.type
    shape = w.shape_of(t, op.sizes)
    return f"pypto.tensor({shape}, {w.dtype(t)}, {w.string(op.buffer_name.data)})"


# --------------------------------------------------------------------------- view


def _read_view(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    src = fe.resolve(b["input"], node)
    if not (is_tile(src) or is_mem(src)):
        fe.fail(node, f"pypto.view input must be a tensor, got {fe.describe(src)}")
    if b["dtype"] is not None:
        new = fe.dtype(b["dtype"], node)
        if new.mlir != elem(src):
            return _read_view_type(fe, b, src, new, node)
        if b["shape"] is None:
            return fe.tile(src, node, "pypto.view input")
    if b["shape"] is None:
        fe.fail(node, "pypto.view needs a shape (or a dtype to read the tensor as)")
    sizes = fe.mixed(b["shape"], node, "pypto.view shape")
    rank = len(shape(src))
    offsets = (
        [0] * rank if b["offsets"] is None else fe.mixed(b["offsets"], node, "pypto.view offsets")
    )
    if len(sizes) != rank or len(offsets) != rank:
        fe.fail(
            node,
            f"pypto.view of a rank-{rank} tensor needs {rank} sizes and {rank} offsets, got "
            f"{len(sizes)} and {len(offsets)}",
        )
    valid = _valid(fe, b, node)
    if valid is not None and len(valid) != rank:
        fe.fail(node, f"valid_shape has {len(valid)} entries for a rank-{rank} view")
    if valid is None:
        valid = _past_the_source(fe, src, offsets, sizes, node)
    ttype, dyn = fe.tensor_type(elem(src), sizes, node)
    op = pto.ViewOp(src, offsets, ttype, valid_shape=valid, sizes=dyn)
    return fe.emit(op, node).results[0]


def _read_view_type(
    fe: Any, b: dict[str, Any], src: SSAValue, new: dtypes.ElementType, node: ast.AST
) -> SSAValue:
    """`pypto.view(x, dtype=...)`: the whole tensor's bytes read as `new` (PyPTO's
    VIEW_TYPE), a tensor in memory read whole first."""
    if any(b[k] is not None for k in ("shape", "offsets", "valid_shape")):
        fe.fail(
            node,
            "pypto.view with a dtype reads the whole tensor as that dtype and takes no "
            "shape, offsets or valid_shape (PyPTO 0.2.0 ignores them); view the window first",
        )
    x = fe.tile(src, node, "pypto.view input")
    old = dtypes.element_type(elem(x))
    for t in (old, new):
        if t.mlir not in pto.ViewTypeOp.ELEMENTS:
            fe.fail(node, f"pypto.view cannot read pypto.{t.pypto} as bytes of another dtype")
    try:
        out = shapes.view_type(shape(x), old.numpy.itemsize, new.numpy.itemsize)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.view dtype=pypto.{new.pypto}: {e}")
    return fe.emit(pto.ViewTypeOp(x, TensorType(new.mlir, out)), node).results[0]


def _write_view_type(w: Any, op: pto.ViewTypeOp) -> str:
    return f"pypto.view({w.use(op.input)}, dtype={w.dtype(op.result.type)})"


def _past_the_source(
    fe: Any,
    src: SSAValue,
    offsets: list[int | SSAValue],
    sizes: list[int | SSAValue],
    node: ast.AST,
) -> list[int | SSAValue] | None:
    """A window without `valid_shape` that reaches past a static dim of its source
    (`pypto.view(table, [1, 1024], [b, 0])` of a [B, 16] table): PyPTO takes it, its valid
    shape the part inside the source (`max(0, min(size, valid - offset))`, measured in
    0.2.0: the rest of the tile is not read), so the IR gives that `valid_shape`. Of a
    tensor in memory only the dims that reach past change (the others stay whole, as in
    every view without `valid_shape`); of a tile every dim is clamped to its valid shape.
    None when the window fits."""
    dims = shape(src)
    past = [
        isinstance(o, int) and isinstance(s, int) and d != DYNAMIC_INDEX and o + s > d
        for o, s, d in zip(offsets, sizes, dims)
    ]
    if not any(past):
        return None
    for d, (o, size) in enumerate(zip(offsets, dims)):
        if isinstance(o, int) and size != DYNAMIC_INDEX and o >= size:
            fe.fail(
                node,
                f"pypto.view offset {o} in dim {d} is outside the source of size {size} "
                "(PyPTO: offsets must be smaller than the source's shape)",
            )
    if is_tile(src):
        return fe.window_valid_shape(src, offsets, sizes, node)
    return [max(0, min(s, d - o)) if p else s for p, o, s, d in zip(past, offsets, sizes, dims)]


def _write_view(w: Any, op: pto.ViewOp | pto.ViewTypeOp) -> str:
    if isinstance(op, pto.ViewTypeOp):
        return _write_view_type(w, op)
    return (
        f"pypto.view({w.use(op.source)}, {w.shape_of(op.result.type, op.sizes)}, "
        f"{w.mixed(op.mixed_offsets)}{_valid_kw(w, op)})"
    )


# --------------------------------------------------------------------------- assemble


def drop_unit_dims(fe: Any, src: SSAValue, rank: int, node: ast.AST) -> SSAValue:
    """A tile written into a tensor of lower rank (a [1, 1] row sum into a rank-1
    output, as PyPTO assembles it): reshaped to `rank` dims when the extra leading dims
    are all 1; any other tile as it is (the rank check then names the mismatch)."""
    dims = shape(src)
    extra = len(dims) - rank
    if extra <= 0 or rank == 0 or any(d != 1 for d in dims[:extra]) or DYNAMIC_INDEX in dims:
        return src
    return fe.read_call(
        "reshape",
        {"input": src, "shape": list(dims[extra:]), "valid_shape": None, "inplace": False},
        node,
    )


def _read_assemble(fe: Any, b: dict[str, Any], node: ast.AST) -> None:
    dst = fe.resolve(b["dst"], node)
    if not is_mem(dst):
        fe.fail(
            node,
            "pypto.assemble destination must be a tensor in memory (a kernel argument or a "
            f"pypto.tensor workspace), got {fe.describe(dst)}",
        )
    src = fe.tile(b["src"], node, "pypto.assemble source")
    offsets = fe.mixed(b["offsets"], node, "pypto.assemble offsets")
    src = drop_unit_dims(fe, src, len(shape(dst)), node)
    if len(offsets) != len(shape(dst)) or len(shape(src)) != len(offsets):
        fe.fail(
            node,
            f"pypto.assemble of {fe.describe(src)} into {fe.describe(dst)} with {len(offsets)} "
            "offsets: the ranks must agree",
        )
    if elem(src) != elem(dst):
        fe.fail(
            node,
            f"pypto.assemble writes a {dtypes.element_type(elem(src)).short} tile into a "
            f"{dtypes.element_type(elem(dst)).short} tensor; cast it first",
        )
    fe.emit(pto.AssembleOp(src, dst, offsets), node)


def _known_shape(t: SSAValue) -> tuple[int, ...]:
    """The shape of a memref, with a workspace's `?` dims that a constant sizes."""
    if not isinstance(t.owner, pto.TensorOp):
        return shape(t)
    sizes = iter(t.owner.sizes)
    return tuple(
        (pto.constant_index(next(sizes)) or DYNAMIC_INDEX) if s == DYNAMIC_INDEX else s
        for s in shape(t)
    )


def _write_assemble(w: Any, op: pto.AssembleOp) -> str:
    if pto.is_alias(op.dst):
        from tileir.diagnostics import error_at

        raise error_at(
            op,
            "'pto.assemble' writes through an inplace reshape of a tensor in memory "
            "(pto.reshape_mem), which PyPTO 0.2.0 compiles but loses (the tensor stays "
            "unwritten: measured, and its guides say so); -t pypto cannot write it: "
            "assemble into the tensor in its own shape (the numpy back end runs it as written)",
        )
    if all(o == 0 for o in op.mixed_offsets) and shape(op.src) == _known_shape(op.dst):
        return f"{w.use(op.dst)}[:] = {w.use(op.src)}"
    return f"pypto.assemble({w.use(op.src)}, {w.mixed(op.mixed_offsets)}, {w.use(op.dst)})"


# --------------------------------------------------------------------------- x[i, j]


def _read_getitem(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    """`x[i, j]` with every index a scalar (the frontend's subscript reader gives the
    indices with negatives already counted from the end): PyPTO's `GetTensorData`, an
    index value."""
    src = fe.resolve(b["self"], node)
    if not (is_tile(src) or is_mem(src)):
        fe.fail(node, f"reading one element needs a tensor, got {fe.describe(src)}")
    key = b["key"] if isinstance(b["key"], list | tuple) else [b["key"]]
    indices = fe.mixed(key, node, "the indices of a one-element read")
    dims = shape(src)
    if len(indices) != len(dims):
        fe.fail(node, f"{len(indices)} indices for a rank-{len(dims)} tensor")
    if elem(src) not in pto.GetTensorDataOp.ELEMENTS:
        fe.fail(
            node,
            "reading one element (`x[i, j]`) gives an index value (PyPTO's SymbolicScalar), "
            f"so it needs an integer tensor, got {fe.describe(src)}",
        )
    # static indices out of range: the op's verifier names them, at this line
    return fe.emit(pto.GetTensorDataOp(src, indices), node).results[0]


GET_TENSOR_DATA = Helper(
    "tileir_get_tensor_data",
    (
        "def tileir_get_tensor_data(x, key):",
        '    """x[key] of an integer tensor other than DT_INT32 (PyPTO 0.2.0 reads one element',
        "    only from DT_INT32): the element's [1, ..., 1] window cast to DT_INT32, read",
        '    there; the vector tile shapes in force are kept."""',
        "    shapes = pypto.get_vec_tile_shapes()",
        "    pypto.set_vec_tile_shapes(*([1] * len(key)))",
        "    one = pypto.cast(pypto.view(x, [1] * len(key), key), pypto.DT_INT32)",
        "    if shapes:",
        "        pypto.set_vec_tile_shapes(*shapes)",
        "    return one[(0,) * len(key)]",
    ),
)


def _write_getitem(w: Any, op: pto.GetTensorDataOp) -> str:
    if elem(op.source) == i32:
        return f"{w.use(op.source)}{w.mixed(op.mixed_indices)}"
    w.helper(GET_TENSOR_DATA.name)
    return f"{GET_TENSOR_DATA.name}({w.use(op.source)}, {w.mixed(op.mixed_indices)})"


# --------------------------------------------------------------------------- reshape


def _infer_minus_one(
    fe: Any, x: SSAValue, sizes: list[int | SSAValue], node: ast.AST
) -> list[int | SSAValue]:
    """One `-1` in a reshape's shape is whatever size keeps the element count."""
    if sizes.count(-1) == 0:
        return sizes
    known = [s for s in sizes if s != -1]
    total = 1
    for s in shape(x):
        total = total * s if s != DYNAMIC_INDEX else -1
    if sizes.count(-1) > 1 or total < 0 or not all(isinstance(s, int) for s in known):
        fe.fail(node, "a -1 in a reshape needs static sizes and only one -1")
    rest = math.prod(known)  # type: ignore[arg-type]
    if rest <= 0 or total % rest:
        fe.fail(node, f"cannot reshape {shapes.fmt(shape(x))} to {fe.short(sizes)}")
    return [total // rest if s == -1 else s for s in sizes]


def _read_reshape(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    src = fe.resolve(b["input"], node)
    sizes = fe.mixed(b["shape"], node, "pypto.reshape shape")
    if is_mem(src) and (DYNAMIC_INDEX in shape(src) or any(isinstance(s, SSAValue) for s in sizes)):
        return _read_reshape_mem(fe, b, src, sizes, node)
    # A tensor in memory of a static shape is read whole first; the reshape of that copy
    # needs no `inplace` (it is what PyPTO's inplace reshape of a global tensor computes).
    inplace = bool(b["inplace"]) and not is_mem(src)
    x = fe.tile(src, node)
    ttype, _ = fe.tensor_type(elem(x), _infer_minus_one(fe, x, sizes, node), node)
    try:
        shapes.reshape(shape(x), ttype.get_shape())
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.reshape {e}")
    valid = _valid(fe, b, node)
    if valid is not None and len(valid) != len(sizes):
        fe.fail(node, f"valid_shape has {len(valid)} entries for a rank-{len(sizes)} reshape")
    if not inplace and DYNAMIC_INDEX in (*shape(x), *ttype.get_shape()):
        fe.fail(
            node,
            "a reshape with a dynamic shape must be inplace=True (PyPTO: inplace=False "
            "takes static shapes only)",
        )
    op = pto.ReshapeOp(x, ttype, valid_shape=valid, inplace=inplace)
    return fe.emit(op, node).results[0]


def _read_reshape_mem(
    fe: Any, b: dict[str, Any], src: SSAValue, sizes: list[int | SSAValue], node: ast.AST
) -> SSAValue:
    """A dynamic reshape of a tensor in memory: the same memory in the new shape
    (`pto.reshape_mem`), which views and assembles then read and write."""
    if not b["inplace"]:
        fe.fail(
            node,
            "a reshape of a tensor in memory with a dynamic shape must be inplace=True "
            "(PyPTO: inplace=False takes static shapes only)",
        )
    if b["valid_shape"] is not None:
        fe.fail(node, "valid_shape on an inplace reshape of a tensor in memory is not supported")
    if -1 in sizes:
        fe.fail(node, "a -1 in a reshape needs static sizes; give every size (PyPTO rule)")
    bad = [s for s in sizes if isinstance(s, int) and s <= 0]
    if not sizes or bad:
        fe.fail(node, f"pypto.reshape shape {fe.short(sizes)} needs sizes > 0")
    static = [s if isinstance(s, int) else DYNAMIC_INDEX for s in sizes]
    known = math.prod(s for s in shape(src) if s != DYNAMIC_INDEX)
    wanted = math.prod(s for s in static if s != DYNAMIC_INDEX)
    if DYNAMIC_INDEX not in shape(src) and (
        known % wanted or (DYNAMIC_INDEX not in static and known != wanted)
    ):
        fe.fail(node, f"cannot reshape {shapes.fmt(shape(src))} to {fe.short(sizes)}")
    dyn = [s for s in sizes if isinstance(s, SSAValue)]
    op = pto.ReshapeMemOp(src, MemRefType(elem(src), static), dyn)
    return fe.emit(op, node).results[0]


def _write_reshape(w: Any, op: pto.ReshapeOp | pto.ReshapeMemOp) -> str:
    if isinstance(op, pto.ReshapeMemOp):
        sizes = w.shape_of(op.result.type, op.sizes)
        return f"pypto.reshape({w.use(op.source)}, {sizes}, inplace=True)"
    extra = _valid_kw(w, op) + (", inplace=True" if op.inplace is not None else "")
    sizes = _reshaped_window_size(w, op)
    return f"pypto.reshape({w.use(op.input)}, {w.shape_of(op.result.type, sizes)}{extra})"


def _reshaped_window_size(w: Any, op: pto.ReshapeOp) -> list[SSAValue]:
    """The `?` size of a tile reshape of a window with one run-time size (`view(x, [n, 1,
    4], ...)` reshaped to `[n, 4, 1]`, PyPTO-Gym's mhc_post in a `loop_unroll`): the tile
    op holds no size, but when the other dims hold as many elements on both sides the
    `?` dim is the window's own size. Else none (the writer then says what is missing)."""
    view = op.input.owner
    if not isinstance(view, pto.ViewOp) or len(view.sizes) != 1:
        return []
    dims_in, dims_out = shape(op.input), shape(op.result)
    if dims_in.count(DYNAMIC_INDEX) != 1 or dims_out.count(DYNAMIC_INDEX) != 1:
        return []
    if math.prod(d for d in dims_in if d != DYNAMIC_INDEX) != math.prod(
        d for d in dims_out if d != DYNAMIC_INDEX
    ):
        return []
    return [view.sizes[0]]


# --------------------------------------------------------------------------- rearranging


def _read_transpose(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    x = fe.tile(b["input"], node)
    d0 = fe.const_int(b["dim0"], node, "dim0")
    d1 = fe.const_int(b["dim1"], node, "dim1")
    try:
        out = shapes.transpose(shape(x), d0, d1)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.transpose: {e}")
    return fe.emit(pto.TransposeOp(x, d0, d1, TensorType(elem(x), out)), node).results[0]


def _write_transpose(w: Any, op: pto.TransposeOp) -> str:
    return f"pypto.transpose({w.use(op.input)}, {op.dim0.value.data}, {op.dim1.value.data})"


def _read_concat(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    ts = fe.resolve(b["tensors"], node)
    if not isinstance(ts, list | tuple) or not ts:
        fe.fail(node, "pypto.concat takes a non-empty list of tensors")
    tiles = [fe.tile(t, node) for t in ts]
    dim = fe.const_int(b["dim"], node, "pypto.concat dim")
    elems = {elem(t) for t in tiles}
    if len(elems) > 1:
        fe.fail(node, "pypto.concat of tensors with different element types")
    try:
        out = shapes.concat([shape(t) for t in tiles], dim)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.concat {e}")
    return fe.emit(pto.ConcatOp(tiles, dim, TensorType(elems.pop(), out)), node).results[0]


def _write_concat(w: Any, op: pto.ConcatOp) -> str:
    parts = ", ".join(w.use(t) for t in op.tensors)
    return f"pypto.concat([{parts}], dim={op.dim.value.data})"


def _read_unsqueeze(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    return read_tile_int(
        fe,
        b,
        node,
        pto.UnsqueezeOp,
        "dim",
        "pypto.unsqueeze dim",
        shapes.unsqueeze,
        "pypto.unsqueeze:",
    )


def _write_unsqueeze(w: Any, op: pto.UnsqueezeOp) -> str:
    return f"pypto.unsqueeze({w.use(op.input)}, {op.dim.value.data})"


def _read_expand_clone(fe: Any, b: dict[str, Any], node: ast.AST) -> SSAValue:
    if b["valid_shape"] is not None:
        fe.fail(node, "pypto.expand_clone valid_shape= is not supported")
    x = fe.tile(b["input"], node)
    target = fe.static_ints(b["shape"], node, "pypto.expand_clone shape")
    if any(d <= 0 for d in target):
        fe.fail(node, f"pypto.expand_clone shape {target} needs sizes > 0")
    try:
        out = shapes.expand(shape(x), target)
    except shapes.ShapeError as e:
        fe.fail(node, f"pypto.expand_clone {e}")
    return fe.emit(pto.ExpandCloneOp(x, TensorType(elem(x), out)), node).results[0]


def _write_expand_clone(w: Any, op: pto.ExpandCloneOp) -> str:
    return f"pypto.expand_clone({w.use(op.input)}, {w.shape_of(op.result.type)})"


register(
    Binding("tensor", pto.TensorOp, _sig_tensor, _read_tensor, _write_tensor, rules.tensor_rule),
    Binding(
        "view",
        pto.ViewOp,
        _sig_view,
        _read_view,
        _write_view,
        rules.view_rule,
        more_ops=(pto.ViewTypeOp,),
    ),
    Binding(
        "assemble",
        pto.AssembleOp,
        _sig_assemble,
        _read_assemble,
        _write_assemble,
        rules.assemble_rule,
    ),
    Binding(
        "Tensor.__getitem__",
        pto.GetTensorDataOp,
        _sig_getitem,
        _read_getitem,
        _write_getitem,
        rules.get_tensor_data_rule,
        "get_tensor_data",
        helper=GET_TENSOR_DATA,
    ),
    Binding(
        "reshape",
        pto.ReshapeOp,
        _sig_reshape,
        _read_reshape,
        _write_reshape,
        rules.reshape_rule,
        "reshape",
        more_ops=(pto.ReshapeMemOp,),
    ),
    Binding(
        "transpose",
        pto.TransposeOp,
        _sig_transpose,
        _read_transpose,
        _write_transpose,
        rules.transpose_rule,
        "transpose",
    ),
    Binding(
        "concat",
        pto.ConcatOp,
        _sig_concat,
        _read_concat,
        _write_concat,
        rules.concat_rule,
        "concat",
    ),
    Binding(
        "unsqueeze",
        pto.UnsqueezeOp,
        _sig_unsqueeze,
        _read_unsqueeze,
        _write_unsqueeze,
        rules.unsqueeze_rule,
        "unsqueeze",
    ),
    Binding(
        "expand_clone",
        pto.ExpandCloneOp,
        _sig_expand_clone,
        _read_expand_clone,
        _write_expand_clone,
        rules.expand_clone_rule,
        "expand_clone",
    ),
)
