"""Memory and layout ops: `pto.tensor` (a workspace), `pto.view` / `pto.assemble` (read
a tile from / write it into memory), `pto.get_tensor_data` (read one element as an index
value) — the only ops with memory effects — `pto.reshape_mem` (a second name for
memory, in another shape: an alias, no effect of its own), and the layout changes
`reshape`, `transpose`, `concat`, `unsqueeze`, `expand_clone`.

Accesses through a `pto.reshape_mem` result are accesses to its source's memory:
`memory_root` names the memory a memref value is, and every analysis that compares
memrefs (stitch, loop-fusion, sink-invariants, coarsen, the numpy back end) compares
roots. An alias's coordinates are not its root's, so a window read or written through an
alias is, for such an analysis, the whole root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils.dynamic_index_list import DynamicIndexList
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import EffectInstance, MemoryEffect, MemoryEffectKind, Pure
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import dtypes, shapes
from tileir.dialect.ops.base import (
    TileOp,
    TileResults,
    TileToTileOp,
    _check_element_type,
    _check_index_list,
    _check_window,
    _elem,
    _expect_result,
    _i64_array,
    _rule,
    _same_elem,
    _shape,
    _split,
    _static_or_constant,
    constant_index,
    mixed_values,
    operand_segments,
    verify_dims,
    verify_tile_shape,
)
from tileir.dialect.ops.stages import StageOp, StitchOp
from tileir.verify import signature_and_operands, signature_only

# --------------------------------------------------------------------------- effects


class _ReadSourceIfMemory(MemoryEffect):
    """`view` and `get_tensor_data` read memory when their source is a memref and are
    pure on a tile."""

    @classmethod
    def get_effects(cls, op: Operation):
        assert isinstance(op, ViewOp | GetTensorDataOp)
        source = op.source  # (an accessor that decodes the operand segments)
        if isinstance(source.type, MemRefType):
            return {EffectInstance(MemoryEffectKind.READ, source)}
        return set()


class _WritesDestination(MemoryEffect):
    @classmethod
    def get_effects(cls, op: Operation):
        assert isinstance(op, AssembleOp)
        return {EffectInstance(MemoryEffectKind.WRITE, op.dst)}


class _AllocatesResult(MemoryEffect):
    @classmethod
    def get_effects(cls, op: Operation):
        return {EffectInstance(MemoryEffectKind.ALLOC, op.results[0])}


# --------------------------------------------------------------------------- memory


@irdl_op_definition
class TensorOp(IRDLOperation):
    """`pypto.tensor(shape, dtype, name)`: a workspace buffer (mutable memory). A shape
    with run-time sizes (`x.shape[0]` of a `pypto.DYNAMIC` dim, a loop index, an element
    read) has `?` dims that take their size from `sizes`, one index value per `?` in
    order, as `memref.alloc`'s dynamic sizes.

    ```mlir
    %ws = pto.tensor "acc" : memref<4x64xf32>
    %rows = pto.tensor "rows" sizes(%n) : memref<?x64xf32>
    ```
    """

    name = "pto.tensor"
    buffer_name = prop_def(StringAttr, prop_name="name")
    sizes = var_operand_def(IndexType)
    result = result_def(MemRefType)
    traits = traits_def(_AllocatesResult())
    assembly_format = "$name (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($result)"

    def __init__(self, name: str, type: MemRefType, sizes: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[list(sizes)], properties={"name": StringAttr(name)}, result_types=[type]
        )

    def verify_(self) -> None:
        _check_element_type(self, self.result.type, "workspace")
        shape = _shape(self.result.type)
        verify_dims(self, shape, "workspace")
        if len(self.sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.tensor' workspace {self.buffer_name.data!r} has "
                f"{shape.count(DYNAMIC_INDEX)} dynamic dims but {len(self.sizes)} sizes "
                "(one index value per `?`)"
            )
        for d, v in enumerate(self.sizes):
            c = _static_or_constant(v)
            if c is not None and c <= 0:
                raise VerifyException(
                    f"'pto.tensor' workspace {self.buffer_name.data!r}: size {c} of dynamic "
                    f"dim {d} is not > 0"
                )


@irdl_op_definition
class ViewOp(IRDLOperation):
    """`pypto.view(input, shape, offsets, valid_shape=...)`: read a tile out of memory,
    or slice a tile. The result type holds the shape; `?` dims take their size from
    `sizes`. Outside `valid_shape` a tail tile's contents are undefined in PyPTO
    (zero in tileir's numpy back end)."""

    name = "pto.view"
    source = operand_def(base(TensorType) | base(MemRefType))
    offsets = var_operand_def(IndexType)
    valid_shape = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    static_offsets = prop_def(DenseArrayBase.constr(i64))
    static_valid_shape = prop_def(DenseArrayBase.constr(i64), default_value=_i64_array([]))
    result = result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(_ReadSourceIfMemory(), TileResults())
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$source `` custom<DynamicIndexList>($offsets, $static_offsets)"
        " (`valid` custom<DynamicIndexList>($valid_shape, $static_valid_shape)^)?"
        " (`sizes` `(` $sizes^ `)`)?"
        " attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(
        self,
        source: SSAValue | Operation,
        offsets: Sequence[int | SSAValue],
        result_type: TensorType,
        valid_shape: Sequence[int | SSAValue] | None = None,
        sizes: Sequence[SSAValue] = (),
    ):
        so, do = _split(offsets)
        sv, dv = _split(valid_shape or [])
        super().__init__(
            operands=[source, do, dv, list(sizes)],
            properties={"static_offsets": so, "static_valid_shape": sv},
            result_types=[result_type],
        )

    @property
    def mixed_offsets(self) -> list[int | SSAValue]:
        return mixed_values(self.static_offsets, self.offsets)

    @property
    def mixed_valid_shape(self) -> list[int | SSAValue] | None:
        values = mixed_values(self.static_valid_shape, self.valid_shape)
        return values or None

    @signature_and_operands(constant_index)
    def verify_(self) -> None:
        # Each operand group and static array is read once: xDSL decodes the segment
        # sizes (and a dense array) again on every access.
        source, offsets, valid, sizes = operand_segments(self)
        offsets = _check_index_list(self, "offsets", self.static_offsets, offsets)
        valid = _check_index_list(self, "valid_shape", self.static_valid_shape, valid)
        src, res = source[0].type, self.result.type
        _check_element_type(self, res, "result")
        if _elem(src) != _elem(res):
            raise VerifyException(
                f"'pto.view' changes the element type from {_elem(src)} to {_elem(res)}; "
                "use pto.cast"
            )
        shape, src_shape = _shape(res), _shape(src)
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in shape], "result")
        if len(shape) != len(src_shape):
            raise VerifyException(
                f"'pto.view' result rank {len(shape)} differs from source rank {len(src_shape)}"
            )
        if len(sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.view' result has {shape.count(DYNAMIC_INDEX)} dynamic dims but "
                f"{len(sizes)} sizes"
            )
        _check_window(
            self,
            src_shape,
            offsets,
            valid or None,
            shape,
            "source",
        )


@irdl_op_definition
class AssembleOp(IRDLOperation):
    """`pypto.assemble(src, offsets, dst)`: write a tile (only its valid region) into
    memory. `x[:] = value` on a workspace is an assemble at offset 0. Into a
    `pto.reshape_mem` alias it writes the alias's source (the numpy back end runs it);
    PyPTO 0.2.0 drops such writes (its own guides say the output "stays all zeros";
    tests/frontend/test_frontend_dynamic_reshape.py), so `-t pypto` refuses them."""

    name = "pto.assemble"
    src = operand_def(TensorType)
    dst = operand_def(MemRefType)
    offsets = var_operand_def(IndexType)
    static_offsets = prop_def(DenseArrayBase.constr(i64))
    traits = traits_def(_WritesDestination())
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$src `into` $dst `` custom<DynamicIndexList>($offsets, $static_offsets)"
        " attr-dict `:` type($src) `,` type($dst)"
    )

    def __init__(
        self,
        src: SSAValue | Operation,
        dst: SSAValue | Operation,
        offsets: Sequence[int | SSAValue],
    ):
        so, do = _split(offsets)
        super().__init__(operands=[src, dst, do], properties={"static_offsets": so})

    @property
    def mixed_offsets(self) -> list[int | SSAValue]:
        return mixed_values(self.static_offsets, self.offsets)

    @signature_and_operands(constant_index)
    def verify_(self) -> None:
        offsets = _check_index_list(self, "offsets", self.static_offsets, self.offsets)
        src, dst = self.src.type, self.dst.type
        if _elem(src) != _elem(dst):
            raise VerifyException(
                f"'pto.assemble' writes a {_elem(src)} tile into a {_elem(dst)} tensor; cast first"
            )
        dst_shape = _shape(dst)
        if len(_shape(src)) != len(dst_shape):
            raise VerifyException(
                f"'pto.assemble' tile rank {len(_shape(src))} differs from destination "
                f"rank {len(dst_shape)}"
            )
        if len(offsets) != len(dst_shape):
            raise VerifyException(
                f"'pto.assemble' has {len(offsets)} offsets for a rank-{len(dst_shape)} destination"
            )
        # A tail tile may be larger than what is left; the valid region is checked at
        # run time, so only a window that cannot fit even when valid is rejected here.
        for d, off in enumerate(offsets):
            o = _static_or_constant(off)
            size = bound = dst_shape[d]
            if o is not None and (o < 0 or (bound != DYNAMIC_INDEX and o >= max(size, 1))):
                raise VerifyException(
                    f"'pto.assemble' offset {o} in dim {d} is outside the destination of "
                    f"size {bound}"
                )


@irdl_op_definition
class GetTensorDataOp(IRDLOperation):
    """`x[i, j]` with every index a scalar: one element of an integer tensor, read as a
    run-time index value (PyPTO's `Tensor.__getitem__` calls `GetTensorData` and returns
    a `SymbolicScalar`, which a kernel uses as an offset, a loop bound or in index
    arithmetic; the Gym reads DT_INT32 and DT_INT64 tables, PyPTO 0.2.0 only DT_INT32).
    The value is sign-extended to `index`. Reads memory when the source is a memref.

    ```mlir
    %blk = pto.get_tensor_data %block_table[%b, 3] : memref<4x8xi32>
    ```
    """

    name = "pto.get_tensor_data"
    source = operand_def(base(TensorType) | base(MemRefType))
    indices = var_operand_def(IndexType)
    static_indices = prop_def(DenseArrayBase.constr(i64))
    result = result_def(IndexType())
    traits = traits_def(_ReadSourceIfMemory())
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$source `` custom<DynamicIndexList>($indices, $static_indices) attr-dict `:` type($source)"
    )

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = tuple(
        t.mlir for t in dtypes.ELEMENT_TYPES if t.kind == "int"
    )
    """The element types an index value can be read from: the integers (not i1)."""

    def __init__(self, source: SSAValue | Operation, indices: Sequence[int | SSAValue]):
        si, di = _split(indices)
        super().__init__(
            operands=[source, di],
            properties={"static_indices": si},
            result_types=[IndexType()],
        )

    @property
    def mixed_indices(self) -> list[int | SSAValue]:
        return mixed_values(self.static_indices, self.indices)

    def verify_(self) -> None:
        _check_index_list(self, "indices", self.static_indices, self.indices)
        src = self.source.type
        if _elem(src) not in self.ELEMENTS:
            raise VerifyException(
                f"'pto.get_tensor_data' reads element type {_elem(src)}; an index value is "
                f"read only from an integer tensor ({', '.join(map(str, self.ELEMENTS))})"
            )
        dims = _shape(src)
        if len(self.mixed_indices) != len(dims):
            raise VerifyException(
                f"'pto.get_tensor_data' has {len(self.mixed_indices)} indices for a "
                f"rank-{len(dims)} tensor"
            )
        for d, (index, size) in enumerate(zip(self.mixed_indices, dims)):
            i = _static_or_constant(index)
            if i is not None and i < 0:
                raise VerifyException(f"'pto.get_tensor_data' index {i} in dim {d} is negative")
            if i is not None and size != DYNAMIC_INDEX and i >= size:
                raise VerifyException(
                    f"'pto.get_tensor_data' index {i} in dim {d} is outside the tensor's "
                    f"size {size}"
                )


@irdl_op_definition
class ReshapeMemOp(IRDLOperation):
    """`pypto.reshape(t, shape, inplace=True)` of a tensor in memory (a kernel argument,
    a workspace, or another such reshape): the same memory, read row-major in another
    shape, with the same element count. It moves no data and has no memory effect of its
    own (`Pure`, like MLIR's `memref.reshape`); a view through the result reads the
    source's memory (`memory_root`). Nothing is written through it (PyPTO loses such
    writes; `pto.assemble` refuses an alias destination). `?` dims of the result take
    their size from `sizes` (index values), as in `pto.view`."""

    name = "pto.reshape_mem"
    source = operand_def(MemRefType)
    sizes = var_operand_def(IndexType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = (
        "$source (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(
        self,
        source: SSAValue | Operation,
        result_type: MemRefType,
        sizes: Sequence[SSAValue] = (),
    ):
        super().__init__(operands=[source, list(sizes)], result_types=[result_type])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, MemRefType) and isinstance(res, MemRefType)
        _check_element_type(self, res, "result")
        if _elem(src) != _elem(res):
            raise VerifyException(
                f"'pto.reshape_mem' changes the element type from {_elem(src)} to "
                f"{_elem(res)}; a reshape keeps it"
            )
        for t, what in ((src, "source"), (res, "result")):
            if not isinstance(t.layout, NoneAttr) or not isinstance(t.memory_space, NoneAttr):
                raise VerifyException(
                    f"'pto.reshape_mem' {what} {t} is not a plain row-major memref; only "
                    "contiguous memory can be reshaped in place"
                )
        shape = _shape(res)
        if not shape:
            raise VerifyException("'pto.reshape_mem' result must have rank >= 1")
        verify_dims(self, shape, "result")
        if len(self.sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.reshape_mem' result has {shape.count(DYNAMIC_INDEX)} dynamic dims but "
                f"{len(self.sizes)} sizes"
            )
        for d, v in enumerate(self.sizes):
            c = _static_or_constant(v)
            if c is not None and c <= 0:
                raise VerifyException(f"'pto.reshape_mem' size {c} of dynamic dim {d} is not > 0")
        n_src, n_res = _static_count(_shape(src)), _static_count(shape)
        if DYNAMIC_INDEX not in _shape(src) and DYNAMIC_INDEX not in shape:
            if n_src != n_res:
                raise VerifyException(
                    f"'pto.reshape_mem' cannot reshape {shapes.fmt(_shape(src))} "
                    f"({n_src} elements) to {shapes.fmt(shape)} ({n_res} elements)"
                )
        elif DYNAMIC_INDEX not in _shape(src) and n_src % n_res:
            raise VerifyException(
                f"'pto.reshape_mem' cannot reshape {shapes.fmt(_shape(src))} ({n_src} "
                f"elements) to {shapes.fmt(shape)}: {n_res} does not divide {n_src}"
            )


def _static_count(shape: Sequence[int]) -> int:
    """The product of the static dims."""
    n = 1
    for s in shape:
        if s != DYNAMIC_INDEX:
            n *= s
    return n


def _trace(value: SSAValue) -> tuple[SSAValue, bool]:
    """The memref `value` names (see `memory_root`) and whether a reshape is on the way."""
    reshaped = False
    while True:
        owner = value.owner
        if isinstance(owner, ReshapeMemOp):
            value, reshaped = owner.source, True
        elif isinstance(owner, StageOp | StitchOp) and isinstance(value.type, MemRefType):
            # a memref leaving a stage / stitch group is the one its body yields
            value = owner.body.block.last_op.operands[value.index]  # type: ignore[union-attr, attr-defined]
        else:
            return value, reshaped


def memory_root(value: SSAValue) -> SSAValue:
    """The memory a memref value names: through `pto.reshape_mem` aliases (and the
    results of stages and stitch groups, which pass a memref on), the memref they reshape
    (a kernel argument or a `pto.tensor` workspace); any other value is its own root. Two
    memref values touch the same memory exactly when their roots are equal (kernel
    arguments never overlap)."""
    return _trace(value)[0]


def is_alias(value: SSAValue) -> bool:
    """True for a memref that names its root's memory in another shape (its window
    coordinates are not its root's)."""
    return _trace(value)[1]


# --------------------------------------------------------------------------- layout


@irdl_op_definition
class ReshapeOp(TileToTileOp):
    """`pypto.reshape(input, shape, valid_shape=..., inplace=...)`.

    The verifier rejects a dynamic reshape without `inplace`, as PyPTO does. An `inplace`
    reshape of a `pto.view` window verifies: PyPTO's newer docs allow only `inplace=False`
    there, but 0.2.0 compiles it and computes the window's values reshaped
    (tests/pypto/test_inplace_reshape_output.py), and PyPTO-Gym kernels write it (mhc_post);
    the `inplace-reshape` pass still never marks one. An `inplace` result written into a kernel argument
    (`out.move(reshape(s, shape, inplace=True))`) verifies: PyPTO's documentation says
    such a result "cannot be the function's final output", but 0.2.0 compiles and runs
    it correctly by dropping the `inplace` itself ("OP_RESHAPE oOperand is OutCast, Skip
    inplace"; tests/pypto/test_inplace_reshape_output.py), so it costs a copy, not a
    wrong result. The `inplace-reshape` pass does not mark such a reshape."""

    name = "pto.reshape"
    # Redeclared so that `input` stays operand 0: xDSL orders a subclass's own
    # fields before inherited ones.
    input = operand_def(TensorType)
    valid_shape = var_operand_def(IndexType)
    static_valid_shape = prop_def(DenseArrayBase.constr(i64), default_value=_i64_array([]))
    inplace = opt_prop_def(UnitAttr)
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$input (`valid` custom<DynamicIndexList>($valid_shape, $static_valid_shape)^)?"
        " (`inplace` $inplace^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: TensorType,
        valid_shape: Sequence[int | SSAValue] | None = None,
        inplace: bool = False,
    ):
        sv, dv = _split(valid_shape or [])
        super().__init__(
            operands=[input, dv],
            properties={
                "static_valid_shape": sv,
                "inplace": UnitAttr() if inplace else None,
            },
            result_types=[result_type],
        )

    @property
    def mixed_valid_shape(self) -> list[int | SSAValue] | None:
        return mixed_values(self.static_valid_shape, self.valid_shape) or None

    @signature_only
    def verify_(self) -> None:
        valid = _check_index_list(self, "valid_shape", self.static_valid_shape, self.valid_shape)
        super().verify_()
        a, b = _shape(self.input.type), _shape(self.result.type)
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in b], "result")
        _rule(self, shapes.reshape, a, b)
        if DYNAMIC_INDEX in (*a, *b) and self.inplace is None:
            raise VerifyException(
                "'pto.reshape' with dynamic shapes must be inplace (PyPTO rule); add `inplace`"
            )
        if valid and len(valid) != len(b):
            raise VerifyException(
                f"'pto.reshape' valid_shape has {len(valid)} entries for a rank-{len(b)} result"
            )


@irdl_op_definition
class ViewTypeOp(TileToTileOp):
    """`pypto.view(input, dtype=...)` (PyPTO's VIEW_TYPE): the tile's bytes read as
    another element type, the last dim scaled by the ratio of the element sizes (int8
    [n, 32] -> fp32 [n, 8]), and so is its valid size (PyPTO 0.2.0 reports
    `valid * size / new_size`, and fails at run time where that is not whole).

    ```mlir
    %s = pto.view_type %raw : tensor<16x32xi8> -> tensor<16x8xf32>
    ```
    """

    name = "pto.view_type"
    SAME_ELEMENT: ClassVar[bool] = False
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    ELEMENTS: ClassVar[tuple[Attribute, ...]] = tuple(
        t.mlir for t in dtypes.ELEMENT_TYPES if t.kind != "bool"
    )
    """The element types a tile's bytes are read from and as: all but i1."""

    def __init__(self, input: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        a, b = self.input.type, self.result.type
        for t, what in ((a, "input"), (b, "result")):
            if _elem(t) not in self.ELEMENTS:
                raise VerifyException(
                    f"'pto.view_type' {what} has element type {_elem(t)}, which has no bytes "
                    "to reinterpret (i1)"
                )
        size = dtypes.element_type(_elem(a)).numpy.itemsize
        new_size = dtypes.element_type(_elem(b)).numpy.itemsize
        _expect_result(self, _shape(b), _rule(self, shapes.view_type, _shape(a), size, new_size))


@irdl_op_definition
class TransposeOp(TileToTileOp):
    """`pypto.transpose(input, dim0, dim1)`."""

    name = "pto.transpose"
    dim0 = prop_def(IntegerAttr[I64])
    dim1 = prop_def(IntegerAttr[I64])
    assembly_format = "$input `,` $dim0 `,` $dim1 attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, dim0: int, dim1: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            properties={"dim0": IntegerAttr(dim0, i64), "dim1": IntegerAttr(dim1, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        super().verify_()
        expected = _rule(
            self,
            shapes.transpose,
            _shape(self.input.type),
            self.dim0.value.data,
            self.dim1.value.data,
        )
        _expect_result(self, _shape(self.result.type), expected)


@irdl_op_definition
class ConcatOp(TileOp):
    """`pypto.concat(tensors, dim)`."""

    name = "pto.concat"
    tensors = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    assembly_format = "`dim` $dim `,` $tensors attr-dict `:` type($tensors) `->` type($result)"

    def __init__(self, tensors: Sequence[SSAValue | Operation], dim: int, result_type: TensorType):
        super().__init__(
            operands=[list(tensors)],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        expected = _rule(
            self, shapes.concat, [_shape(t.type) for t in self.tensors], self.dim.value.data
        )
        for t in (*self.tensors, self.result):
            _same_elem(self, self.tensors[0].type, t.type)
        _expect_result(self, _shape(self.result.type), expected, exact=False)


@irdl_op_definition
class UnsqueezeOp(TileToTileOp):
    """`pypto.unsqueeze(input, dim)`."""

    name = "pto.unsqueeze"
    dim = prop_def(IntegerAttr[I64])
    assembly_format = "$input `,` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, dim: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        super().verify_()
        expected = _rule(self, shapes.unsqueeze, _shape(self.input.type), self.dim.value.data)
        _expect_result(self, _shape(self.result.type), expected)


@irdl_op_definition
class ExpandCloneOp(TileToTileOp):
    """`pypto.expand_clone(input, shape)`: a broadcast copy (real memory, unlike torch's
    expand); only size-1 dims grow."""

    name = "pto.expand_clone"
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        super().verify_()
        _rule(self, shapes.expand, _shape(self.input.type), _shape(self.result.type))
