"""Builds `pto` IR from a PyPTO kernel: the frontend's entry and its op-reading kit.

The frontend is split by job: `evaluator.Evaluator` runs the Python parts of a kernel
(names, constants, containers, arithmetic, helper calls; its statements, expressions
and calls are the mixins of `statements`, `expressions` and `calls`), `regions.RegionBuilder`
builds the kernel and the `pypto.loop` / runtime-`if` regions, and `Translator` (this
module) adds what the bindings read ops with. It has no op semantics of its own: a
`pypto.<name>` call is read by that function's binding (`tileir.bindings`), which gives
the result its type from `tileir.dialect.shapes` (the verifiers' rules); this module is
the reading kit the bindings use (`tile`, `const_int`, `mixed`, `dtype`, `emit`,
`fail` ...), plus the tensor syntax that means a call (`x[a:b]` is a view, `x[:] = v`
an assemble).

The kernel file has been imported (`frontends.pypto.loader`, with the stand-in `pypto`):
a kernel is a live function, and the translator reads its AST, resolving names through
the function's closure cells and globals, as PyPTO's JIT does. A kernel argument or
workspace used as a tile is read whole with a `pto.view`.

Every op gets a `FileLineColLoc` of the source expression it came from, and every
problem is a `TileirError` `file:line:col: error: ...` pointing into the kernel file.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from typing import Any

from xdsl.dialects import arith, memref, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    f32,
    i1,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from frontends.pypto import composites, valid_shapes
from frontends.pypto.composites import COMPOSITES
from frontends.pypto.factories import select_kernels
from frontends.pypto.kinds import (
    describe,
    is_cond,
    is_index,
    is_mem,
    is_number,
    is_ssa,
    is_tile,
    short,
    static_shape,
)
from frontends.pypto.loader import SOURCES, LoadedFile
from frontends.pypto.regions import RegionBuilder
from frontends.pypto.scope import LiveScope, Scope
from frontends.pypto.values import Dynamic, Helper, Poison, PyptoRef
from tileir import bindings
from tileir.bindings.memory import drop_unit_dims
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes, pto

# The calls that are not PyPTO functions with a binding bind against these stubs, so
# that a wrong call gets Python's own message ("missing a required argument").


def _sig_cond(scalar, file=None, lineno=None): ...
def _sig_dynamic(name): ...
def _sig_symbolic_scalar(arg0, arg1=None): ...
def _sig_tensor_constructor(shape=None, dtype=None, name="", format=None): ...


_SCALAR_FUNCS = frozenset({"min", "max", "ceildiv"})
"""`pypto.min(a, b)` and friends: Python ints fold, index values become arith ops."""


class Translator(RegionBuilder):
    """Translates kernels of one loaded file, each into a `pto.kernel`."""

    # ----------------------------------------------------------------------- emitting

    def emit(self, op: Operation, node: ast.AST) -> Operation:
        if self.builder is None:
            self.fail(node, "this needs a kernel: it cannot be evaluated at module level")
        op.location = self.loc(node)
        self.builder.insert(op)
        return op

    def index(self, v: Any, node: ast.AST) -> SSAValue:
        """A value as an SSA `index` (materialising Python ints)."""
        v = self.resolve(v, node)
        if is_index(v):
            return v
        if is_cond(v):
            # PyPTO's comparison of symbolic scalars is a symbolic scalar 0 / 1
            # (`pypto.loop(n < k)`, `x * (i > 0)`): zero-extended, as an index
            wide = self.emit(arith.ExtUIOp(v, IntegerType(64)), node).results[0]
            return self.emit(arith.IndexCastOp(wide, IndexType()), node).results[0]
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(node, f"expected an integer index, got {describe(v)}")
        # One constant per value in each open block: a constant of an enclosing block
        # dominates everything built after it, so inner blocks reuse it.
        for block in reversed(self.open_blocks):
            cached = self.index_constants.get((id(block), v))
            if cached is not None:
                return cached
        result = self.emit(arith.ConstantOp(IntegerAttr(v, IndexType())), node).results[0]
        if self.open_blocks:
            self.index_constants[(id(self.open_blocks[-1]), v)] = result
        return result

    def mixed(self, values: Any, node: ast.AST, what: str) -> list[int | SSAValue]:
        """A Python list of ints / index values (`[i * T, 0]`) as a mixed index list."""
        if not isinstance(values, list | tuple):
            self.fail(node, f"{what} must be a list of integers, got {describe(values)}")
        out: list[int | SSAValue] = []
        for v in values:
            v = self.resolve(v, node)
            if isinstance(v, int) and not isinstance(v, bool):
                out.append(v)
            elif is_index(v):
                out.append(v)
            else:
                self.fail(node, f"{what} must hold integers or index values, got {describe(v)}")
        return out

    def static_ints(self, values: Any, node: ast.AST, what: str) -> list[int]:
        if not isinstance(values, list | tuple) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            self.fail(node, f"{what} must be a list of constant integers, got {describe(values)}")
        return list(values)

    def const_int(self, v: Any, node: ast.AST, what: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(node, f"{what} must be a constant integer, got {describe(v)}")
        return v

    def resolve(self, v: Any, node: ast.AST) -> Any:
        if isinstance(v, Poison):
            self.fail(node, v.reason)
        if isinstance(v, Dynamic):
            return self.dynamic_value(v, node)
        return self.in_memory(v)

    def in_memory(self, v: Any) -> Any:
        """A tile written by a slice assignment is read from its workspace from then on."""
        return self.promoted.get(v, v) if isinstance(v, SSAValue) else v

    def shape_of(self, v: SSAValue, node: ast.AST) -> list[int | SSAValue]:
        """`t.shape`: ints where static, `memref.dim` / `tensor.dim` where dynamic (the
        size a `pypto.tensor` workspace was made with, for its `?` dims)."""
        out: list[int | SSAValue] = []
        sizes = iter(v.owner.sizes if isinstance(v.owner, pto.TensorOp) else ())
        for d, s in enumerate(static_shape(v.type)):
            if s != DYNAMIC_INDEX:
                out.append(s)
                continue
            size = next(sizes, None)
            if size is not None:
                out.append(size)
                continue
            if isinstance(v, BlockArgument) and v.block is self.entry_block:
                name = self._dyn_name_of(v, d)
                if name is not None:
                    out.append(self.dynamic_value(Dynamic(name), node))
                    continue
            c = self.index(d, node)
            dim_op = memref.DimOp(v, c) if is_mem(v) else tensor.DimOp(v, c)
            out.append(self.emit(dim_op, node).results[0])
        return out

    def valid_shape_of(self, v: SSAValue, node: ast.AST) -> list[int | SSAValue]:
        """`t.valid_shape`: the valid shape PyPTO gives `t` (`valid_shapes.py`)."""
        return valid_shapes.valid_shape(self, v, node)

    def window_valid_shape(
        self,
        source: SSAValue,
        offsets: list[int | SSAValue],
        extents: list[int | SSAValue],
        node: ast.AST,
    ) -> list[int | SSAValue]:
        """The valid shape PyPTO gives a view of `source` without `valid_shape`."""
        return valid_shapes.window_valid_shape(self, source, offsets, extents, node)

    def _dyn_name_of(self, arg: SSAValue, dim: int) -> str | None:
        for name, (src, d) in self.dyn_sources.items():
            if src is arg and d == dim:
                return name
        return None

    def tile(self, v: Any, node: ast.AST, what: str = "operand") -> SSAValue:
        """A tile operand; a tensor in memory is read whole with a `pto.view`."""
        v = self.resolve(v, node)
        if is_tile(v):
            return v
        if is_mem(v):
            t = v.type
            assert isinstance(t, MemRefType)
            sizes = [s for s in self.shape_of(v, node) if isinstance(s, SSAValue)]
            view = pto.ViewOp(
                v,
                [0] * len(t.get_shape()),
                TensorType(t.get_element_type(), t.get_shape()),
                valid_shape=self.promoted_valid.get(v),
                sizes=sizes,
            )
            return self.emit(view, node).results[0]
        self.fail(node, f"{what} must be a tensor, got {describe(v)}")

    def tensor_type(
        self, elem: Attribute, shape: Sequence[int | SSAValue], node: ast.AST
    ) -> tuple[TensorType, list[SSAValue]]:
        bad = [s for s in shape if isinstance(s, int) and s <= 0]
        if bad:
            self.fail(node, f"shape {short(list(shape))} has a size <= 0 ({bad[0]})")
        static = [s if isinstance(s, int) else DYNAMIC_INDEX for s in shape]
        return TensorType(elem, static), [s for s in shape if isinstance(s, SSAValue)]

    def scalar(self, v: Any, like: Attribute | None, node: ast.AST) -> SSAValue:
        """A Python number as an `arith.constant` for a tile op whose tiles have element
        type `like`: ints stay ints for integer tiles, everything else is f32."""
        v = self.resolve(v, node)
        if is_index(v) or (is_ssa(v) and not isinstance(v.type, TensorType | MemRefType)):
            return v
        if isinstance(v, bool):
            return self.emit(arith.ConstantOp(IntegerAttr(int(v), i1)), node).results[0]
        if isinstance(v, int) and isinstance(like, IntegerType) and like != i1:
            return self.emit(arith.ConstantOp(IntegerAttr(v, like)), node).results[0]
        if isinstance(v, int | float):
            return self.emit(arith.ConstantOp(FloatAttr(float(v), f32)), node).results[0]
        self.fail(node, f"expected a tensor or a number, got {describe(v)}")

    def dtype(self, v: Any, node: ast.AST, what: str = "dtype") -> dtypes.ElementType:
        v = self.resolve(v, node)
        if isinstance(v, dtypes.ElementType):
            return v
        self.fail(node, f"{what} must be a pypto.DT_* data type, got {describe(v)}")

    def assign_subscript(self, target: ast.Subscript, value: Any, scope: Scope) -> None:
        """`x[:] = v` (and `x[a:, b:] = v`): assemble `v` into memory at the slice starts."""
        dst = self.resolve(self.eval(target.value, scope), target.value)
        if isinstance(dst, list | dict):
            key = self.eval(target.slice, scope)
            try:
                dst[key] = value
            except (TypeError, IndexError, KeyError) as e:
                self.fail(target, str(e))
            return
        if is_tile(dst):
            dst = self.promote(dst, target, scope)
        if not is_mem(dst):
            self.fail(target, f"cannot assign into {describe(dst)}")
        rank = len(static_shape(dst.type))
        indexed: list[int] = []
        offsets = self.slice_starts(target.slice, rank, scope, indexed, static_shape(dst.type))
        src = self.resolve(value, target)
        if is_number(src):
            t = dst.type
            assert isinstance(t, MemRefType)
            ttype, sizes = self.tensor_type(
                t.get_element_type(),
                self.shape_of(dst, target),
                target,
            )
            src = self.emit(
                pto.FullOp(self.scalar(src, t.get_element_type(), target), ttype, sizes=sizes),
                target,
            ).results[0]
        src = self.tile(src, target, "the assigned value")
        if indexed and len(static_shape(src.type)) == rank - len(indexed):
            # `t[i] = v`: v reshaped with a size-1 dim at each index, as PyPTO does
            dims = list(static_shape(src.type))
            if DYNAMIC_INDEX in dims:
                self.fail(
                    target, f"cannot assign {describe(src)} at an index: its shape is dynamic"
                )
            for d in indexed:
                dims.insert(d, 1)
            src = self.read_call(
                "reshape",
                {"input": src, "shape": dims, "valid_shape": None, "inplace": False},
                target,
            )
        src = drop_unit_dims(self, src, rank, target)
        if len(static_shape(src.type)) != rank:
            self.fail(
                target,
                f"cannot assign {describe(src)} into {describe(dst)}: the ranks differ",
            )
        self.emit(pto.AssembleOp(src, dst, offsets), target)

    def promote(self, t: SSAValue, target: ast.Subscript, scope: Scope) -> SSAValue:
        """`t[0:2, :] = u` on a tile: PyPTO's tensors live in memory and the assignment
        writes them in place (a later loop iteration sees it), so the tile moves to a
        workspace made where it is defined (`pto.tensor` + `pto.assemble`, inside the
        loop body that defines it: one per iteration, as PyPTO's), every read of it
        already translated reads the workspace (a `pto.view` just before the reader),
        and later reads go there too (`promoted`, names rebound)."""
        tt = t.type
        assert isinstance(tt, TensorType)
        shape = list(tt.get_shape())
        if DYNAMIC_INDEX in shape:
            self.fail(target, f"slice assignment into {describe(t)} needs a static shape")
        owner = t.owner
        if not isinstance(owner, Operation) or owner.parent_block() is None:
            self.fail(target, f"cannot assign into {describe(t)}")
        block = owner.parent_block()
        assert block is not None
        name = t.name_hint or (target.value.id if isinstance(target.value, ast.Name) else "")
        readers = list(t.uses)
        self.workspace_count += 1
        ws_op = pto.TensorOp(
            f"{name or 'ws'}_mem{self.workspace_count}", MemRefType(tt.get_element_type(), shape)
        )
        store = pto.AssembleOp(t, ws_op.result, [0] * len(shape))
        for op in (ws_op, store):
            op.location = owner.location
        block.insert_ops_after([ws_op, store], owner)
        ws = ws_op.result
        valid = self.valid_shape_after(t, owner, ws_op, target)
        if valid is not None:
            self.promoted_valid[ws] = valid
        for use in readers:
            user = use.operation
            read = pto.ViewOp(
                ws, [0] * len(shape), TensorType(tt.get_element_type(), shape), valid_shape=valid
            )
            read.location = user.location
            user_block = user.parent_block()
            assert user_block is not None
            user_block.insert_op_before(read, user)
            user.operands[use.index] = read.results[0]
        self.promoted[t] = ws
        s: Scope | None = scope
        while s is not None and not isinstance(s, LiveScope):
            for k, v in s.vars.items():
                if v is t:
                    s.vars[k] = ws
            s = s.parent
        return ws

    def update_in_place(
        self, name: str, target: Any, result: SSAValue, node: ast.Call, receiver: ast.expr | None
    ) -> Any:
        """PyPTO's in-place `pypto.<name>` on `target` (the call's receiver or first
        argument, written `receiver`), whose new value is `result`: a tensor in memory gets
        `result` written back whole (PyPTO's `Move`); a computed tile that a local
        variable holds takes `result` as that variable's new value (`y.axpy_(x)` reads as
        `y = pypto.axpy_(y, x)`; readers already translated saw the old value, as they ran
        before the update); a temporary (`pypto.scatter_(a + b, ...)`) is just the result.
        A tile that a subscript, an attribute or several names hold is a located error:
        tileir's tiles are values, and the other holders would keep the old one."""
        if list(static_shape(result.type)) != list(static_shape(target.type)):
            self.fail(
                node,
                f"pypto.{name} updates {describe(target)} in place, but its result "
                f"{describe(result)} has another shape (the update does not broadcast into it)",
            )
        if is_mem(target):
            self.emit(pto.AssembleOp(result, target, [0] * len(static_shape(target.type))), node)
            return target
        if not isinstance(receiver, ast.Name | ast.Subscript | ast.Attribute):
            return result  # a temporary: nothing else holds it
        holder = _holder(receiver, target, self.call_scope)
        if holder is None:
            self.fail(
                node,
                f"pypto.{name} updates a computed tile in place, which tileir models by "
                f"rebinding the local variable that holds it; name the tile with one "
                f"(`t = ...` then `t.{name}(...)`), or use the call's result",
            )
        scope, var = holder
        others = [k for k, v in scope.vars.items() if v is target and k != var]
        if others:
            self.fail(
                node,
                f"pypto.{name} updates the tile `{var}` in place, but `{others[0]}` names the "
                f"same tile and would keep its old value in tileir (tiles are values); "
                f"use one name",
            )
        scope.vars[var] = result
        return result

    def valid_shape_after(
        self, t: SSAValue, owner: Operation, before: Operation, node: ast.AST
    ) -> list[int | SSAValue] | None:
        """`partial_valid_shape(t)` computed between `t`'s defining op and `before`: the
        reads of a promoted tile that were translated before the write read the workspace
        with it, so its index ops must come before them. Cached index constants may be
        defined later in the block, so fresh ones are made there."""
        assert self.builder is not None
        saved, constants = self.builder.insertion_point, self.index_constants
        self.builder.insertion_point = InsertPoint.before(before)
        self.index_constants = {}
        try:
            return self.partial_valid_shape(t, node)
        finally:
            self.builder.insertion_point, self.index_constants = saved, constants

    def partial_valid_shape(self, t: SSAValue, node: ast.AST) -> list[int | SSAValue] | None:
        """`t`'s valid shape where it is less than the whole tile (a tail tile), None
        where it is the whole tile or tileir cannot tell (then reads see the whole)."""
        try:
            valid = valid_shapes.valid_shape(self, t, node)
        except TileirError:
            return None
        shape = static_shape(t.type)
        if all(isinstance(v, int) and v == s for v, s in zip(valid, shape)):
            return None
        return valid

    def slice_starts(
        self,
        sl: ast.expr,
        rank: int,
        scope: Scope,
        indexed: list[int] | None = None,
        dims: Sequence[int] | None = None,
    ) -> list[int | SSAValue]:
        """The offsets of `x[a:, :]`. With `indexed` (a list to fill), an integer or index
        value (`x[i] = v`, `x[i, 1:3] = v`) is also taken, as PyPTO's `Tensor.__setitem__`
        takes it: a size-1 dim at that offset (negative Python ints count from `dims`),
        its position appended to `indexed`."""
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Constant) and i.value is Ellipsis for i in items):
            items = [i for i in items if not (isinstance(i, ast.Constant) and i.value is Ellipsis)]
        if len(items) > rank:
            self.fail(sl, f"{len(items)} indices for a rank-{rank} tensor")
        out: list[int | SSAValue] = []
        for d, it in enumerate(items):
            if not isinstance(it, ast.Slice):
                v = None if indexed is None else self.resolve(self.eval(it, scope), it)
                if v is None or not (
                    is_index(v) or (isinstance(v, int) and not isinstance(v, bool))
                ):
                    self.fail(
                        it,
                        "only slices (`x[:]`, `x[a:, :]`) and integer indices (`x[i] = v`) "
                        "are supported when assigning into a tensor",
                    )
                size = dims[d] if dims is not None and dims[d] != DYNAMIC_INDEX else None
                if isinstance(v, int) and v < 0 and size is not None:
                    v += size
                if isinstance(v, int) and (v < 0 or (size is not None and v >= size)):
                    self.fail(it, f"index {v} is out of range for dim {d} of size {size}")
                assert indexed is not None
                indexed.append(d)
                out.extend(self.mixed([v], it, "index"))
                continue
            if it.step is not None:
                self.fail(it, "sliced assignment with a step is not supported")
            start = 0 if it.lower is None else self.eval(it.lower, scope)
            out.extend(self.mixed([start], it, "slice start"))
        if indexed is not None and len(indexed) == rank:
            self.fail(
                sl, "assigning one element (`x[i, j] = v`, PyPTO's SetTensorData) is not supported"
            )
        return out + [0] * (rank - len(out))

    def tensor_subscript(self, base: SSAValue, node: ast.Subscript, scope: Scope) -> SSAValue:
        """`x[a:b, :]` is `pypto.view(x, [b - a, ...], [a, 0, ...])`; an integer index
        keeps a size-1 dim that a reshape then drops, as PyPTO's `Tensor.__getitem__`;
        integers alone (`x[i, j]`) read one element as an index value
        (`pto.get_tensor_data`)."""
        shape = self.shape_of(base, node)
        rank = len(shape)
        items: list[ast.expr | None] = list(
            node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        )
        ellipsis = [
            i for i, it in enumerate(items) if isinstance(it, ast.Constant) and it.value is Ellipsis
        ]
        if len(ellipsis) > 1:
            self.fail(node.slice, "an index can have only one `...`")
        if ellipsis:
            e = ellipsis[0]
            items = [*items[:e], *[None] * (rank - len(items) + 1), *items[e + 1 :]]
        if len(items) > rank:
            self.fail(node.slice, f"{len(items)} indices for a rank-{rank} tensor")
        items += [None] * (rank - len(items))
        offsets: list[Any] = []
        sizes: list[Any] = []
        keep: list[bool] = []
        for d, it in enumerate(items):
            dim = shape[d]
            where: ast.AST = it if it is not None else node
            if it is None or isinstance(it, ast.Slice):
                if it is not None and it.step is not None:
                    step = self.resolve(self.eval(it.step, scope), it.step)
                    if step != 1:
                        self.fail(it.step, "tensor slices with a step are not supported")
                lo = 0
                hi: Any = dim
                if it is not None and it.lower is not None:
                    lo = self.resolve(self.eval(it.lower, scope), it.lower)
                if it is not None and it.upper is not None:
                    hi = self.resolve(self.eval(it.upper, scope), it.upper)
                lo, hi = self.slice_bound(lo, dim, where), self.slice_bound(hi, dim, where)
                if isinstance(hi, int) and isinstance(dim, int):
                    hi = min(hi, dim)
                offsets.append(lo)
                sizes.append(self.difference(hi, lo, where))
                keep.append(True)
            else:
                v = self.slice_bound(self.resolve(self.eval(it, scope), it), dim, it)
                offsets.append(v)
                sizes.append(1)
                keep.append(False)
        if not any(keep):  # one element: PyPTO's GetTensorData, an index value
            return self.read_call("Tensor.__getitem__", {"self": base, "key": offsets}, node)
        for size in sizes:
            if isinstance(size, int) and size <= 0:
                self.fail(node, f"the slice is empty (size {size})")
        view = self.read_call(
            "view",
            {"input": base, "shape": sizes, "offsets": offsets, "valid_shape": None, "dtype": None},
            node,
        )
        if all(keep):
            return view
        kept = [s for s, k in zip(sizes, keep) if k]
        return self.read_call(
            "reshape", {"input": view, "shape": kept, "valid_shape": None, "inplace": False}, node
        )

    def difference(self, hi: Any, lo: Any, node: ast.AST) -> Any:
        """`hi - lo`, an int when the two differ by a constant (`(i + 1) * T - i * T`)."""
        a, b = _linear(hi), _linear(lo)
        if a is not None and b is not None:
            terms = {k: a[0].get(k, 0) - b[0].get(k, 0) for k in {*a[0], *b[0]}}
            if not any(terms.values()):
                return a[1] - b[1]
        return self.binop("-", hi, lo, node)

    def slice_bound(self, v: Any, dim: int | SSAValue, node: ast.AST) -> Any:
        """A slice bound or index: Python negatives count from the end, as in Python."""
        if isinstance(v, bool) or not (isinstance(v, int) or is_index(v)):
            self.fail(node, f"tensor indices must be integers or index values, got {describe(v)}")
        if isinstance(v, int) and v < 0:
            if not isinstance(dim, int):
                self.fail(node, "a negative index needs a static dim")
            v += dim
            if v < 0:
                self.fail(node, f"index {v - dim} is out of range for a dim of size {dim}")
        return v

    # ----------------------------------------------------------------------- pypto calls

    def call_pypto(
        self, ref: PyptoRef, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        path = ref.path
        # `y.f_(...)`: the receiver's expression (call_method sets it for this call only)
        receiver, self.method_receiver = self.method_receiver, None
        if receiver is None and node.args:
            receiver = node.args[0]
        self.call_receiver = receiver
        if path == ("frontend", "dynamic"):
            name = self.bind(_sig_dynamic, args, kwargs, node, "pypto.frontend.dynamic")["name"]
            if not isinstance(name, str):
                self.fail(node, "pypto.frontend.dynamic() takes the dim's name as a string")
            return Dynamic(name)
        if path == ("cond",):
            return self.bind(_sig_cond, args, kwargs, node, "pypto.cond")["scalar"]
        if ".".join(path) in COMPOSITES:
            result = self.inline_composite(".".join(path), args, kwargs, node)
            if path[-1].endswith("_") and args:  # in place on its first argument
                target = self.resolve(args[0], node)
                return self.update_in_place(path[-1], target, result, node, receiver)
            return result
        if path == ("Tensor",):
            return self.tensor_constructor(args, kwargs, node)
        if path in (("symbolic_scalar",), ("SymbolicScalar",)):
            return self.symbolic_scalar(args, kwargs, node)
        if path in (("loop",), ("loop_unroll",)):
            self.fail(node, f"pypto.{path[0]}() is only supported as the iterable of a `for`")
        if len(path) == 1 and path[0] in _SCALAR_FUNCS:
            return self.scalar_func(path[0], args, kwargs, node)
        name = path[-1] if path else "pypto"
        maker = bindings.VALUES.get(".".join(path))
        if maker is not None:  # `pypto.Element(...)`: a Python value, no op
            try:
                return maker(*(self.resolve(a, node) for a in args), **kwargs)
            except TypeError as e:
                self.fail(node, f"{ref.dotted}(): {e}")
        query = bindings.QUERIES.get(".".join(path))
        if query is not None:  # `pypto.get_vec_tile_shapes()`: a setting, as a Python value
            if self.builder is None:
                self.fail(node, f"{ref.dotted}() needs a kernel: it cannot run at module level")
            return query.read(
                self, self.bind(query.signature, args, kwargs, node, ref.dotted), node
            )
        binding = bindings.BY_PYPTO.get(".".join(path))
        if binding is None:
            self.fail(node, f"{ref.dotted}() is not supported by the tileir frontend")
        if self.builder is None:
            self.fail(node, f"{ref.dotted}() needs a kernel: it cannot run at module level")
        return binding.read(
            self, self.bind(binding.signature, args, kwargs, node, ref.dotted), node
        )

    def inline_composite(
        self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        """Inline `pypto.<name>`'s composition; an error inside it (a check of its
        arguments, an op it cannot build) is reported at the user's call."""
        try:
            return self.inline(self.composite(name), args, kwargs, node)
        except TileirError as e:
            text = str(e)
            if not text.startswith(composites.__file__ + ":"):
                raise
            message = text.split(": error: ", 1)[1].split("\n", 1)[0]
            self.fail(node, message.removeprefix("assertion failed: "))

    def composite(self, name: str) -> Helper:
        """The `frontends.pypto.composites` function for `pypto.<name>`, to inline, with
        `pypto` bound to the stand-in."""
        fn = COMPOSITES[name]
        node = SOURCES.node_of(fn.__code__)
        assert isinstance(node, ast.FunctionDef)
        scope = Scope(LiveScope(fn))
        scope.vars["pypto"] = PyptoRef(())
        return Helper(node, scope, fn.__code__.co_filename, list(fn.__defaults__ or ()))

    def tensor_constructor(self, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """`pypto.Tensor(shape, dtype, name)` inside a kernel makes a tensor, as
        `pypto.tensor` does (PyPTO's default dtype is DT_FP32)."""
        bound = self.bind(_sig_tensor_constructor, args, kwargs, node, "pypto.Tensor")
        if bound["format"] is not None:
            self.fail(node, "pypto.Tensor(..., format=...) inside a kernel is not supported")
        dtype = dtypes.BY_PYPTO["DT_FP32"] if bound["dtype"] is None else bound["dtype"]
        call = {"shape": bound["shape"], "dtype": dtype, "name": bound["name"]}
        return self.read_call("tensor", call, node)

    def symbolic_scalar(self, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """`pypto.symbolic_scalar(v)` / `(name, v)` of an int `v`: the int. PyPTO's scalar of
        a value is concrete, and its JIT parser replaces every concrete scalar by its
        int before it evaluates an expression (0.2.0 `frontend/parser/evaluator.py`), so
        `flag = pypto.SymbolicScalar(0)` then `flag + 1` is Python arithmetic there and
        `if flag > 0:` a Python `if`. An index value stays itself."""
        bound = self.bind(_sig_symbolic_scalar, args, kwargs, node, "pypto.symbolic_scalar")
        arg0, arg1 = self.resolve(bound["arg0"], node), self.resolve(bound["arg1"], node)
        name = None
        if isinstance(arg0, str):
            name, arg0 = arg0, arg1
            if arg0 is None:
                self.fail(
                    node,
                    f"pypto.symbolic_scalar({name!r}) without a value is not supported: give "
                    "its value, pypto.symbolic_scalar(name, value)",
                )
        elif arg1 is not None:
            self.fail(node, "pypto.symbolic_scalar(value) takes a value only after a name")
        if isinstance(arg0, bool) or not (isinstance(arg0, int) or is_index(arg0)):
            self.fail(node, f"pypto.symbolic_scalar takes an integer, got {describe(arg0)}")
        return arg0

    def read_call(self, name: str, args: dict[str, Any], node: ast.AST) -> Any:
        """`pypto.<name>(**args)` (all parameters given), for the syntax that means a
        call (`x[a:b]` is a view)."""
        return bindings.BY_PYPTO[name].read(self, args, node)

    describe = staticmethod(describe)
    short = staticmethod(short)

    @staticmethod
    def pypto_path(v: Any) -> tuple[str, ...] | None:
        """The dotted path of a name inside `pypto` (`("CastMode", "CAST_RINT")`), or
        None for any other value."""
        return v.path if isinstance(v, PyptoRef) else None


def _linear(v: Any, depth: int = 8) -> tuple[dict[SSAValue, int], int] | None:
    """An index value as `sum(coeff * atom) + const` through arith add / sub / mul by a
    constant, or None when it is not of that form."""
    if isinstance(v, int) and not isinstance(v, bool):
        return {}, v
    if not is_index(v) or depth == 0:
        return None
    c = pto.constant_index(v)
    if c is not None:
        return {}, c
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(op, arith.AddiOp) else -1
        terms = dict(a[0])
        for k, x in b[0].items():
            terms[k] = terms.get(k, 0) + sign * x
        return terms, a[1] + sign * b[1]
    if isinstance(op, arith.MuliOp):
        a, b = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if a is not None and b is not None and (not a[0] or not b[0]):
            scale, (terms, const) = (a[1], b) if not a[0] else (b[1], a)
            return {k: x * scale for k, x in terms.items()}, const * scale
    return {v: 1}, 0


def translate(
    loaded: LoadedFile, only: str | None = None, call: dict[str, Any] | None = None
) -> ModuleOp:
    """The module of every kernel of a loaded file (or only the kernel `only`), each
    specialised to `call` (example arguments by parameter name; a name applies to every
    kernel with that parameter, and must name a parameter of one)."""
    call = {k: loaded.module_value(v) for k, v in (call or {}).items()}
    entries, taken, captured = select_kernels(loaded, only, call)
    params = taken | {n for e in entries for n in inspect.signature(e.kernel.fn).parameters}
    unknown = sorted(set(call) - params)
    if unknown:
        raise TileirError(
            f"{loaded.filename}: error: no kernel has a parameter `{unknown[0]}` "
            f"(given with --arg / --input / as a keyword)"
        )
    tr = Translator(loaded.filename)
    kernels = []
    for entry in entries:
        own = inspect.signature(entry.kernel.fn).parameters
        mine = {**captured.get(entry.name, {}), **{k: v for k, v in call.items() if k in own}}
        try:
            kernels.append(tr.build_kernel(entry, mine))
        except TileirError:
            raise
        except RecursionError:
            raise tr.error(tr.current, "the kernel nests too deeply (recursive helper?)") from None
        except Exception as e:  # a frontend bug must still name the user's line
            raise tr.error(
                tr.current, f"internal error while translating this ({type(e).__name__}: {e})"
            ) from e
    return ModuleOp(kernels)


def _holder(receiver: ast.expr, target: Any, scope: Scope | None) -> tuple[Scope, str] | None:
    """The local variable (its scope and name) that holds `target`, when `receiver` (the
    expression of an in-place call's receiver) is that variable."""
    if not isinstance(receiver, ast.Name):
        return None
    s = scope
    while s is not None and not isinstance(s, LiveScope):
        if receiver.id in s.vars:
            return (s, receiver.id) if s.vars[receiver.id] is target else None
        s = s.parent
    return None
