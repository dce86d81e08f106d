"""`coarsen`: row blocking. A loop whose iterations each handle one block of T rows
becomes a loop over blocks of `factor` * T rows.

PyPTO's cost model charges per task, and a loop iteration is (at least) one task per
op: fewer, larger tiles are faster until a tile no longer fits the on-chip buffers (a
RoPE over 64 rows: 12.2 us one row per iteration, 4.8 us sixteen). This pass makes the
blocks larger without changing what the kernel computes.

Contract. A `pto.loop` (no nested regions in its body) is coarsened by k when

- its lower bound is 0 and its step a constant s, and the loop is in one of two forms:
  *index form* (s = 1, the row start is `arith.muli %i, T` with T constant, or `%i`
  itself for T = 1) or *offset form* (s = T > 1, the row start is `%i`); a start may
  also be `arith.addi %base, start` with `%base` not depending on the loop;
- the index is used only through row starts; a row start only as the dim-0 offset of a
  `pto.view` / `pto.assemble` on memory or in a row count `arith.minsi (arith.subi N,
  start), T` (N not depending on the loop), and a row count only as a dim-0 valid size;
- every value that depends on the loop ("row values": views at a row start and what is
  computed from them, plus `pto.full` tiles of T rows) has T rows in dim 0, and each op
  on row values treats rows independently: elementwise ops and casts (a loop-invariant
  operand broadcasts over dim 0 or has a lower rank), reductions / transposes / concats
  / topk / gather / unsqueeze away from dim 0, an index_select (dim 0) of a
  loop-invariant table by a 1-D row index, reshapes and expand_clone that keep dim
  0, views of a row tile at dim-0 offset 0, a 2-D matmul whose left operand is the row
  tile (not transposed) and whose right operand and bias are loop-invariant;
- the loop writes at least one row value to memory and reads no memory at a
  loop-invariant offset that it also writes;
- the trip count is a constant U (index form) or the loop covers exactly its row
  count's rows (a row count over N rows with ceil(N / T) = U, the same dynamic N as the
  bound, or k dividing U).

The coarsened loop runs ceil(U / k) iterations (index form) or steps by k * T (offset
form); every row value gets k * T rows; the row count caps blocks at N, and when there
was none and k * T does not divide the rows a tail count `min(rows - start, k * T)` is
added and becomes dim 0 of the valid shape of every view, reshape and full of rows.
`pto.set_vec_tile_shapes` inside the body whose dim 0 was T gets the largest dim 0 <= k
* T that fits the platform's Unified Buffer (tileir.passes.platform, the table vc-split
uses); `pto.set_cube_tile_shapes` inside the body gets an M block covering k * T rows
(<= 128, aligned to 16) when that fits L0A / L0C. The unroll list is kept.

A loop that does not satisfy the contract is left alone; `report=true` prints, per
loop, what was done or why not. Options: `factor` (k, default 4), `loops` (names,
default all), `platform` (default A2), `scale-tiles` (default true; false keeps the
T-row tile shapes, so PyPTO splits each block into k tiles), `report`.

```mlir
// before: 20 rows, 4 per iteration
pto.loop %i = %c0 to %c5 step %c1 name "rows" {
  %s = arith.muli %i, %c4 : index
  %l = arith.subi %c20, %s : index
  %n = arith.minsi %l, %c4 : index
  pto.set_vec_tile_shapes [4, 64]
  %t = pto.view %x[%s, 0] valid [%n, 64] : memref<20x64xf32> -> tensor<4x64xf32>
  %e = pto.exp %t : tensor<4x64xf32>
  pto.assemble %e into %out[%s, 0] : tensor<4x64xf32>, memref<20x64xf32>
}
// after coarsen{factor=2}: 3 iterations of 8 rows, the last one 4 valid rows
pto.loop %i = %c0 to %c3 step %c1 name "rows" {
  %s = arith.muli %i, %c8 : index
  %l = arith.subi %c20, %s : index
  %n = arith.minsi %l, %c8 : index
  pto.set_vec_tile_shapes [8, 64]
  %t = pto.view %x[%s, 0] valid [%n, 64] : memref<20x64xf32> -> tensor<8x64xf32>
  %e = pto.exp %t : tensor<8x64xf32>
  pto.assemble %e into %out[%s, 0] : tensor<8x64xf32>, memref<20x64xf32>
}
```
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.dialect.pto import DYNAMIC_INDEX, constant_index
from tileir.passes.platform import Platform, cube_tile_fits, get_platform, vec_tile_fits


class NotCoarsenable(Exception):
    """Why a loop is left alone (the message is the reason)."""


_ELEMENTWISE = (pto.UnaryOp, pto.BinaryOp, pto.CastOp, pto.WhereOp)
_NO_EFFECT = (
    pto.SetVecTileShapesOp,
    pto.SetCubeTileShapesOp,
    pto.SetSemanticLabelOp,
    pto.SetOptionsOp,
)


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def _axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def _name(loop: pto.LoopOp) -> str:
    return loop.loop_name.data if loop.loop_name is not None else "<unnamed>"


@dataclass
class RowLoop:
    """What `analyze` found in a coarsenable loop (the rewrite needs nothing else)."""

    loop: pto.LoopOp
    rows_per_iter: int  # T
    offset_form: bool
    trips: int | None  # U, for the index form with a constant bound
    total_rows: int | SSAValue  # rows the loop covers (for a new tail count)
    starts: set[SSAValue] = field(default_factory=set)
    scaled_muli: list[arith.MuliOp] = field(default_factory=list)
    counts: list[arith.MinSIOp] = field(default_factory=list)
    count_bound: int | SSAValue | None = None  # N of the row counts
    rows: set[SSAValue] = field(default_factory=set)
    row_ops: list[Operation] = field(default_factory=list)
    elem_bytes: int = 1
    has_matmul: bool = False


def _depends(value: SSAValue, loop: pto.LoopOp) -> bool:
    """Whether `value` is computed inside `loop`'s body (or is its index); constants
    are not."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp):
        return False
    if isinstance(owner, Operation):
        return loop.is_ancestor(owner)
    return owner.parent_op() is loop


def analyze(loop: pto.LoopOp) -> RowLoop:
    """The row structure of `loop`, or `NotCoarsenable` naming the first obstacle."""
    if constant_index(loop.lower_bound) != 0:
        raise NotCoarsenable("the lower bound is not the constant 0")
    step = constant_index(loop.step)
    if step is None:
        raise NotCoarsenable("the step is not a constant")
    body = loop.body.block
    iv = loop.induction_var
    for op in body.ops:
        if op.regions:
            raise NotCoarsenable(f"the body holds a nested region ('{op.name}')")
    _check_memory_names(body)
    offset_form = step > 1
    info = RowLoop(loop, step if offset_form else 0, offset_form, None, 0)
    if offset_form:
        info.starts.add(iv)

    def set_t(t: int, where: Operation) -> None:
        if info.rows_per_iter not in (0, t):
            raise NotCoarsenable(f"'{where.name}' uses a row size {t}, not {info.rows_per_iter}")
        info.rows_per_iter = t

    remaining: set[SSAValue] = set()
    counts: set[SSAValue] = set()
    index_uses = {iv}

    def check_bound(n: SSAValue) -> None:
        if _depends(n, loop):
            raise NotCoarsenable("a row count's bound depends on the loop")
        if info.count_bound is None:
            info.count_bound = constant_index(n) if constant_index(n) is not None else n
        elif (constant_index(n) if constant_index(n) is not None else n) != info.count_bound:
            raise NotCoarsenable("two row counts with different bounds")

    for op in body.ops:
        # The index math.
        if isinstance(op, arith.MuliOp) and iv in op.operands and not offset_form:
            other = op.rhs if op.lhs is iv else op.lhs
            c = constant_index(other)
            if c is None or c <= 0:
                raise NotCoarsenable("the index is multiplied by a non-constant")
            set_t(c, op)
            info.starts.add(op.result)
            info.scaled_muli.append(op)
            continue
        if isinstance(op, arith.AddiOp) and set(op.operands) & info.starts:
            other = op.rhs if op.lhs in info.starts else op.lhs
            if _depends(other, loop):
                raise NotCoarsenable("a row start plus a loop-dependent value")
            info.starts.add(op.result)
            continue
        if isinstance(op, arith.SubiOp) and op.rhs in info.starts:
            check_bound(op.lhs)
            remaining.add(op.result)
            continue
        if isinstance(op, arith.MinSIOp) and set(op.operands) & remaining:
            other = op.rhs if op.lhs in remaining else op.lhs
            c = constant_index(other)
            if c is None:
                raise NotCoarsenable("a row count capped by a non-constant")
            set_t(c, op)
            counts.add(op.result)
            info.counts.append(op)
            continue
        if isinstance(op, arith.ConstantOp) or isinstance(op, (*_NO_EFFECT, pto.YieldOp)):
            continue
        index_like = info.starts | remaining | counts | index_uses
        if not isinstance(op, pto.ViewOp | pto.AssembleOp | pto.FullOp | pto.ReshapeOp):
            if used := [o for o in op.operands if o in index_like]:
                raise NotCoarsenable(f"'{op.name}' uses the loop index ({used[0].name_hint})")
        _classify(op, info, index_like, counts)

    if info.rows_per_iter == 0:
        if any(iv in (o.mixed_offsets if hasattr(o, "mixed_offsets") else []) for o in body.ops):
            info.rows_per_iter = 1
            info.starts.add(iv)
        else:
            raise NotCoarsenable("no view or assemble at a row offset of the loop index")
    if not any(isinstance(o, pto.AssembleOp) and o.src in info.rows for o in body.ops):
        raise NotCoarsenable("the loop writes no row block to memory")
    _check_rows(info)
    _trip_count(info)
    return info


def _check_memory_names(body: Block) -> None:
    """Memory the loop writes is named one way in it: row blocks of two names of one
    memory (a `pto.reshape_mem` alias and its source) are different elements, so the
    blocks' order matters and is not checked here."""
    names: dict[SSAValue, set[SSAValue]] = {}
    written: set[SSAValue] = set()
    for op in body.ops:
        if isinstance(op, pto.ViewOp) and isinstance(op.source.type, MemRefType):
            names.setdefault(pto.memory_root(op.source), set()).add(op.source)
        elif isinstance(op, pto.AssembleOp):
            names.setdefault(pto.memory_root(op.dst), set()).add(op.dst)
            written.add(pto.memory_root(op.dst))
    if any(len(names[root]) > 1 for root in written):
        raise NotCoarsenable("the loop writes memory it also names another way (a reshape)")


def _classify(
    op: Operation, info: RowLoop, index_like: set[SSAValue], counts: set[SSAValue]
) -> None:
    """Mark `op`'s results as row values when they depend on the loop, checking the
    op treats rows independently."""
    loop = info.loop
    iv = loop.induction_var
    if isinstance(op, pto.ViewOp | pto.AssembleOp):
        offsets = op.mixed_offsets
        first, rest = offsets[0], offsets[1:]
        if any(isinstance(o, SSAValue) and _depends(o, loop) for o in rest):
            raise NotCoarsenable(f"'{op.name}' has a loop-dependent offset outside dim 0")
        memory = isinstance((op.source if isinstance(op, pto.ViewOp) else op.dst).type, MemRefType)
        if isinstance(first, SSAValue) and first in index_like:
            if first is iv and not info.offset_form:
                if info.rows_per_iter not in (0, 1):
                    raise NotCoarsenable("the index is used both scaled and unscaled")
                info.rows_per_iter = 1
                info.starts.add(iv)
            if first not in info.starts:
                raise NotCoarsenable(f"'{op.name}' dim-0 offset is not a row start")
            if not memory:
                raise NotCoarsenable(f"'{op.name}' of a tile at a row start")
            if isinstance(op, pto.AssembleOp):
                if op.src not in info.rows:
                    raise NotCoarsenable("a loop-invariant tile is assembled at a row start")
                info.row_ops.append(op)
                return
        elif isinstance(op, pto.AssembleOp):
            if op.src in info.rows or isinstance(first, SSAValue) and _depends(first, loop):
                raise NotCoarsenable("a row tile is assembled at an offset that is not a row start")
            raise NotCoarsenable("the loop writes at a loop-invariant offset")
        elif op.source in info.rows:
            if _static(first) != 0:
                raise NotCoarsenable("a view of a row tile at a dim-0 offset other than 0")
        elif isinstance(first, SSAValue) and _depends(first, loop):
            raise NotCoarsenable("a view at a loop-dependent offset that is not a row start")
        elif memory and any(
            isinstance(a, pto.AssembleOp) and pto.memory_root(a.dst) is pto.memory_root(op.source)
            for a in loop.body.block.ops
        ):
            raise NotCoarsenable("the loop reads memory it writes at a loop-invariant offset")
        else:
            _check_valid(op, info, counts, row=False)
            return
        _check_valid(op, info, counts, row=True)
        _mark(op, info)
        return
    if isinstance(op, pto.FullOp):
        shape = _shape(op.result)
        if info.rows_per_iter and shape and shape[0] == info.rows_per_iter:
            _check_valid(op, info, counts, row=True)
            _mark(op, info)
        else:
            _check_valid(op, info, counts, row=False)
        return
    row_in = [o for o in op.operands if o in info.rows]
    if not row_in:
        if isinstance(op, pto.ReshapeOp):
            _check_valid(op, info, counts, row=False)
        return
    name = f"'{op.name}'"
    if isinstance(op, _ELEMENTWISE):
        rank = len(_shape(op.results[0]))
        for o in op.operands:
            if isinstance(o.type, TensorType) and o not in info.rows:
                s = _shape(o)
                if len(s) == rank and s[0] != 1:
                    raise NotCoarsenable(f"{name} combines a row tile with a loop-invariant tile")
    elif isinstance(op, pto.ReduceOp):
        if _axis(op.dim.value.data, len(_shape(op.input))) == 0:
            raise NotCoarsenable(f"{name} reduces over the rows (dim 0)")
    elif isinstance(op, pto.ReshapeOp):
        if _shape(op.input)[0] != _shape(op.result)[0]:
            raise NotCoarsenable(f"{name} moves the rows (dim 0 changes)")
        _check_valid(op, info, counts, row=True)
    elif isinstance(op, pto.TransposeOp):
        rank = len(_shape(op.input))
        dims = (op.dim0.value.data, op.dim1.value.data)
        if 0 in (_axis(d, rank) for d in dims):
            raise NotCoarsenable(f"{name} moves dim 0")
    elif isinstance(op, pto.ConcatOp):
        if _axis(op.dim.value.data, len(_shape(op.result))) == 0 or len(row_in) != len(op.operands):
            raise NotCoarsenable(f"{name} along dim 0 or of a loop-invariant tile")
    elif isinstance(op, pto.UnsqueezeOp):
        if _axis(op.dim.value.data, len(_shape(op.result))) == 0:
            raise NotCoarsenable(f"{name} at dim 0")
    elif isinstance(op, pto.ExpandCloneOp):
        if _shape(op.input)[0] != _shape(op.result)[0]:
            raise NotCoarsenable(f"{name} broadcasts dim 0")
    elif isinstance(op, pto.GathermaskOp):
        if len(_shape(op.input)) < 2:
            raise NotCoarsenable(f"{name} of a 1-D row tile")
    elif isinstance(op, pto.TopkOp):
        if _axis(op.dim.value.data, len(_shape(op.input))) == 0:
            raise NotCoarsenable(f"{name} along dim 0")
    elif isinstance(op, pto.GatherOp):
        if _axis(op.dim.value.data, len(_shape(op.input))) == 0 or len(row_in) != 2:
            raise NotCoarsenable(f"{name} along dim 0 or from a loop-invariant tile")
    elif isinstance(op, pto.IndexSelectOp):
        # out = input.take(index, axis=dim): row r of the result is row index[r] of an
        # invariant table, so a 1-D row index along dim 0 keeps rows independent.
        if (
            op.input in info.rows
            or len(_shape(op.index)) != 1
            or _axis(op.dim.value.data, len(_shape(op.input))) != 0
        ):
            raise NotCoarsenable(f"{name} is not a row lookup (1-D row index, dim 0)")
    elif isinstance(op, pto.MatmulOp):
        if (
            op.a not in info.rows
            or op.a_trans is not None
            or len(_shape(op.a)) != 2
            or op.b in info.rows
            or (op.bias is not None and op.bias in info.rows)
        ):
            raise NotCoarsenable(f"{name} is not a 2-D matmul of a row tile by an invariant")
        info.has_matmul = True
    else:
        raise NotCoarsenable(f"{name} on a row tile is not known to treat rows independently")
    _mark(op, info)


def _static(v: int | SSAValue) -> int | None:
    return v if isinstance(v, int) else constant_index(v)


def _check_valid(op: Operation, info: RowLoop, counts: set[SSAValue], row: bool) -> None:
    valid = op.mixed_valid_shape  # type: ignore[attr-defined]
    if not valid:
        return
    for d, v in enumerate(valid):
        if isinstance(v, SSAValue) and _depends(v, info.loop) and not (row and d == 0):
            raise NotCoarsenable(f"'{op.name}' has a loop-dependent valid size in dim {d}")
    first = valid[0]
    if row and not (first in counts or _static(first) == info.rows_per_iter):
        raise NotCoarsenable(f"'{op.name}' dim-0 valid size is neither the row count nor T")


def _mark(op: Operation, info: RowLoop) -> None:
    for r in op.results:
        if isinstance(r.type, TensorType):
            info.rows.add(r)
            t = r.type.get_element_type()
            try:
                info.elem_bytes = max(info.elem_bytes, element_type(t).numpy.itemsize)
            except Exception:  # noqa: BLE001 - an unusual type: assume 4 bytes
                info.elem_bytes = max(info.elem_bytes, 4)
    info.row_ops.append(op)


def _check_rows(info: RowLoop) -> None:
    t = info.rows_per_iter
    for v in info.rows:
        s = _shape(v)
        if not s or s[0] != t:
            raise NotCoarsenable(
                f"a row value ({v.name_hint or v.owner.name}) has {s[:1]} rows, not {t}"
            )
        if DYNAMIC_INDEX in s:
            raise NotCoarsenable("a row value has a dynamic shape")
    for op in info.counts:
        for o in op.operands:
            if constant_index(o) is not None and constant_index(o) != t:
                raise NotCoarsenable("a row count capped at a size other than T")


def _trip_count(info: RowLoop) -> None:
    loop, t = info.loop, info.rows_per_iter
    ub = constant_index(loop.upper_bound)
    if info.offset_form:
        info.total_rows = ub if ub is not None else loop.upper_bound
        if ub is None and not info.counts:
            raise NotCoarsenable("a dynamic bound without a row count")
        return
    if ub is None:
        raise NotCoarsenable("the trip count is not a constant")
    info.trips = ub
    info.total_rows = ub * t


def _exact(info: RowLoop, k: int) -> str | None:
    """Why blocks of k * T rows would cover other rows than the loop does (or None)."""
    t, n = info.rows_per_iter, info.count_bound
    if not info.counts:
        return None
    if info.offset_form:
        if isinstance(info.total_rows, int) and isinstance(n, int):
            return (
                None
                if -(-n // t) * t >= info.total_rows or info.total_rows % (k * t) == 0
                else ("the row count's bound and the loop bound disagree")
            )
        return None if n is info.total_rows else "the row count's bound is not the loop bound"
    assert info.trips is not None
    if info.trips % k == 0 or (isinstance(n, int) and -(-n // t) == info.trips):
        return None
    return f"{k} does not divide the {info.trips} iterations and the row count's bound differs"


# --------------------------------------------------------------------------- the rewrite


def _const(rewriter: Rewriter, value: int, where: InsertPoint) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(value, IndexType()))
    rewriter.insert_op(op, where)
    return op.result


def _with_dim0(t: TensorType, rows: int) -> TensorType:
    shape = list(t.get_shape())
    shape[0] = rows
    return TensorType(t.get_element_type(), shape)


def _rebuilt(op: Operation, first: int | SSAValue, result_type: TensorType) -> Operation:
    """`op` (a view, reshape or full) with result type `result_type` and `first` as
    dim 0 of its valid shape (a full valid shape is added if it had none)."""
    valid = list(op.mixed_valid_shape or result_type.get_shape())  # type: ignore[attr-defined]
    valid[0] = first
    if isinstance(op, pto.ViewOp):
        new: Operation = pto.ViewOp(op.source, op.mixed_offsets, result_type, valid, list(op.sizes))
    elif isinstance(op, pto.ReshapeOp):
        new = pto.ReshapeOp(op.input, result_type, valid, inplace=op.inplace is not None)
    else:
        assert isinstance(op, pto.FullOp)
        new = pto.FullOp(op.value, result_type, valid, list(op.sizes))
    new.attributes.update(op.attributes)
    return new


def coarsen(info: RowLoop, k: int, platform: Platform | None) -> None:
    """Rewrite the analyzed loop into blocks of k * T rows (k >= 2); the tile-shape
    settings in the body are scaled within `platform`'s buffers, or kept (None)."""
    loop, t = info.loop, info.rows_per_iter
    kt = k * t
    rewriter = Rewriter()
    body = loop.body.block
    before = InsertPoint.before(loop)
    head = InsertPoint.at_start(body)
    c_kt = _const(rewriter, kt, before)
    # The loop bounds.
    if info.offset_form:
        loop.operands = [loop.lower_bound, loop.upper_bound, c_kt]
    else:
        assert info.trips is not None
        loop.operands = [loop.lower_bound, _const(rewriter, -(-info.trips // k), before), loop.step]
    # The row starts.
    iv = loop.induction_var
    if not info.offset_form and t == 1:
        scaled = arith.MuliOp(iv, c_kt)
        rewriter.insert_op(scaled, head)
        for use in list(iv.uses):
            if use.operation is not scaled:
                use.operation.operands = [
                    scaled.result if o is iv else o for o in use.operation.operands
                ]
        start: SSAValue = scaled.result
    else:
        for m in info.scaled_muli:
            m.operands = [iv if o is iv else c_kt for o in m.operands]
        start = info.scaled_muli[0].result if info.scaled_muli else iv
    # The row counts.
    for c in info.counts:
        c.operands = [c_kt if constant_index(o) is not None else o for o in c.operands]
    count: int | SSAValue = kt
    if info.counts:
        count = info.counts[0].result
    elif not (isinstance(info.total_rows, int) and info.total_rows % kt == 0):
        total = info.total_rows
        if isinstance(total, int):
            total = _const(rewriter, total, before)
        start_op = start.owner if isinstance(start.owner, Operation) else None
        at = InsertPoint.after(start_op) if start_op is not None else head
        left = arith.SubiOp(total, start)
        rewriter.insert_op(left, at)
        cap = arith.MinSIOp(left.result, c_kt)
        rewriter.insert_op(cap, InsertPoint.after(left))
        count = cap.result
    # The row values and valid shapes.
    for op in info.row_ops:
        for r in list(op.results):
            if r in info.rows:
                Rewriter.replace_value_with_new_type(r, _with_dim0(r.type, kt))  # type: ignore[arg-type]
        if isinstance(op, pto.ViewOp | pto.ReshapeOp | pto.FullOp):
            valid = op.mixed_valid_shape
            if valid is None and isinstance(count, int):
                continue  # no tail: fully valid blocks
            if (
                isinstance(op, pto.ViewOp)
                and valid is None
                and isinstance(op.source.type, TensorType)
            ):
                continue  # a view of a row tile inherits its valid rows
            rewriter.replace_op(op, _rebuilt(op, count, op.result.type))
    # The tile shapes.
    for op in body.ops if platform is not None else ():
        if isinstance(op, pto.SetVecTileShapesOp):
            shape = list(op.shape.get_values())
            if shape and shape[0] == t:
                d = kt
                while d > t and not vec_tile_fits([d, *shape[1:]], info.elem_bytes, platform):
                    d -= 1
                op.properties["shape"] = DenseArrayBase.from_list(i64, [d, *shape[1:]])
        elif isinstance(op, pto.SetCubeTileShapesOp) and info.has_matmul:
            m0, m1 = op.m.get_values()
            want = min(-(-kt // platform.cube_align) * platform.cube_align, 128)
            k0, k1 = op.k_pair
            n0, n1 = op.n.get_values()
            while want > m0 and not cube_tile_fits([want, want, k0, k1, n0, n1], 2, platform):
                want -= platform.cube_align
            if want > m0:
                new_m1 = m1 if m1 >= want and m1 % want == 0 else want
                op.properties["m"] = DenseArrayBase.from_list(i64, [want, new_m1])


class CoarsenLoop(RewritePattern):
    """Coarsen one selected `pto.loop` (see the module docstring)."""

    def __init__(self, factor: int, loops: tuple[str, ...] | None, platform: Platform | None):
        self.factor, self.loops, self.platform = factor, loops, platform
        self.report: list[str] = []

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, pto.LoopOp):
            return
        if self.loops is not None and _name(op) not in self.loops:
            return
        try:
            info = analyze(op)
            if why := _exact(info, self.factor):
                raise NotCoarsenable(why)
        except NotCoarsenable as e:
            self.report.append(f"coarsen: loop {_name(op)}: left alone: {e}")
            return
        t = info.rows_per_iter
        coarsen(info, self.factor, self.platform)
        rewriter.has_done_action = True
        self.report.append(
            f"coarsen: loop {_name(op)}: {t} -> {t * self.factor} rows per iteration"
        )


@dataclass(frozen=True)
class CoarsenPass(ModulePass):
    """Row blocking: each selected row loop handles `factor` row blocks per iteration."""

    name = "coarsen"

    factor: int = 4
    """k: row blocks per iteration of the coarsened loop (1 leaves every loop alone)."""

    loops: tuple[str, ...] | None = None
    """Only loops with these names (default: all)."""

    platform: str = "A2"
    """Whose buffer sizes bound the scaled tile shapes (tileir.passes.platform)."""

    scale_tiles: bool = True
    """Scale the tile-shape settings in the body to the larger blocks (off: keep T-row
    tiles, so that PyPTO splits each block's ops into k tiles that can run on several
    cores)."""

    report: bool = False
    """Print, per loop, what was done or why it was left alone, to stderr."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.factor < 1:
            raise ValueError(f"coarsen: option factor={self.factor} must be at least 1")
        try:
            platform = get_platform(self.platform)
        except ValueError as e:
            raise ValueError(f"coarsen: option platform: {e}") from None
        if self.factor == 1:
            return
        pattern = CoarsenLoop(self.factor, self.loops, platform if self.scale_tiles else None)
        for loop in [o for o in op.walk() if isinstance(o, pto.LoopOp)]:
            pattern.match_and_rewrite(loop, PatternRewriter(loop))
        if self.report:
            for line in pattern.report:
                print(line, file=sys.stderr)


def coarsen_report(module: ModuleOp, factor: int = 2) -> dict[str, str | None]:
    """Loop name -> None if `coarsen{factor}` would coarsen it, else the reason (the
    module is not changed)."""
    out: dict[str, str | None] = {}
    for loop in [o for o in module.walk() if isinstance(o, pto.LoopOp)]:
        try:
            info = analyze(loop)
            out[_name(loop)] = _exact(info, factor)
        except NotCoarsenable as e:
            out[_name(loop)] = str(e)
    return out


__all__ = ["CoarsenLoop", "CoarsenPass", "NotCoarsenable", "analyze", "coarsen", "coarsen_report"]
