"""The `pto` dialect: PyPTO's tile operations as MLIR operations.

Names, operands and attributes follow the PyPTO Python API (`pypto.view`,
`pypto.assemble`, `pypto.matmul(..., b_trans=True)` ...), so that a reader who knows
PyPTO reads the IR. Tiles are immutable SSA values of builtin `tensor<...>` type; kernel
arguments and workspace buffers (`pypto.tensor(...)`) are mutable `memref<...>`s.
Only the ops that touch memory (`view` of a memref, `assemble`, `tensor`) have side
effects, so xDSL's CSE / DCE / canonicalize apply to everything else.

```mlir
pto.kernel @scale(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [4, 1] {
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %h = arith.constant 5.000000e-01 : f32
    %r = pto.mul %t, %h : tensor<1x64xf32>, f32 -> tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
```

Offsets, shapes and valid shapes are mixed static / dynamic index lists, as in MLIR's
`tensor.extract_slice`: `[0, %i]`.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    AnyFloatConstr,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.dialects.utils.dynamic_index_list import (
    DynamicIndexList,
    get_dynamic_index_list,
    split_dynamic_index_list,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from tileir.diagnostics import MAX_NESTING
from tileir.dialect import shapes
from tileir.dialect.dtypes import BY_MLIR, ELEMENT_TYPES, element_type, is_element_type

# GATHERMASK_MODES and broadcast_shapes are re-exported: back ends and test strategies
# use them through `pto`.
from tileir.dialect.shapes import GATHERMASK_MODES as GATHERMASK_MODES
from tileir.dialect.shapes import ShapeError
from tileir.dialect.shapes import broadcast_shapes as broadcast_shapes

CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
"""PyPTO's `pypto.CastMode` members, lower case without the `CAST_` prefix."""

MAX_TILE_RANK = 4

ScalarType = base(IndexType) | base(IntegerType) | AnyFloatConstr
TileOrScalar = base(TensorType) | ScalarType


# --------------------------------------------------------------------------- helpers


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def _elem(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType | MemRefType)
    return t.get_element_type()


def _check_element_type(op: Operation, t: Attribute, what: str) -> None:
    if isinstance(t, TensorType | MemRefType) and not is_element_type(_elem(t)):
        names = ", ".join(e.short for e in ELEMENT_TYPES)
        raise VerifyException(
            f"'{op.name}' {what} has element type {_elem(t)}, which PyPTO does not "
            f"have (use one of {names})"
        )


NUMERIC = frozenset({"float", "int"})
FLOAT = frozenset({"float"})
ANY_KIND = frozenset({"float", "int", "bool"})


def _check_kind(op: Operation, t: Attribute, kinds: frozenset[str], what: str) -> None:
    """The element type of `t` is of one of `kinds` (`float`, `int`, `bool`)."""
    row = BY_MLIR.get(_elem(t))
    if row is not None and row.kind not in kinds:
        allowed = " or ".join(sorted(kinds))
        raise VerifyException(
            f"'{op.name}' {what} has element type {_elem(t)}; the op takes {allowed} tiles"
        )


def _check_scalar(op: Operation, scalar: Attribute, tile_elem: Attribute) -> None:
    """A scalar operand combines with a tile as PyPTO's `Element(dtype, value)`: an
    integer tile takes an integer scalar, an i1 tile only an i1 scalar."""
    row = BY_MLIR.get(tile_elem)
    if row is None or row.kind == "float":
        return
    if row.kind == "bool" and scalar != i1:
        raise VerifyException(f"'{op.name}' an i1 tile takes only an i1 scalar, not {scalar}")
    if row.kind == "int" and not isinstance(scalar, IntegerType | IndexType):
        raise VerifyException(
            f"'{op.name}' a {scalar} scalar cannot combine with a {tile_elem} tile "
            "(PyPTO: no float scalar with an integer tensor)"
        )


_T = TypeVar("_T")


def _rule(op: Operation, rule: Callable[..., _T], *args: object, **kwargs: object) -> _T:
    """Apply a rule of `shapes` (shared with the frontend), naming the op in its error."""
    try:
        return rule(*args, **kwargs)
    except ShapeError as e:
        raise VerifyException(f"'{op.name}' {e}") from None


def _expect_result(
    op: Operation, actual: Sequence[int], expected: Sequence[int], *, exact: bool = True
) -> None:
    """The result type must have the shape the rule computed (`exact=False`: a `?` on
    either side matches any size)."""
    ok = tuple(actual) == tuple(expected) if exact else shapes.shapes_compatible(expected, actual)
    if not ok:
        raise VerifyException(
            f"'{op.name}' result shape {shapes.fmt(actual)} should be {shapes.fmt(expected)}"
        )


def constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` index, or None when not a constant."""
    from xdsl.dialects.arith import ConstantOp

    owner = value.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def mixed_values(static: DenseArrayBase, dynamic: Sequence[SSAValue]) -> list[int | SSAValue]:
    """A mixed index list `[0, %i]` from its static / dynamic halves."""
    return get_dynamic_index_list(static.get_values(), dynamic, DYNAMIC_INDEX)


def _static_or_constant(v: int | SSAValue) -> int | None:
    return v if isinstance(v, int) else constant_index(v)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, values)


def _split(values: Sequence[int | SSAValue]) -> tuple[DenseArrayBase, list[SSAValue]]:
    static, dynamic = split_dynamic_index_list(values, DYNAMIC_INDEX)
    return _i64_array(static), dynamic


def _check_index_list(
    op: Operation, what: str, static: DenseArrayBase, dynamic: Sequence[SSAValue]
) -> None:
    values = static.get_values()
    if values.count(DYNAMIC_INDEX) != len(dynamic):
        raise VerifyException(
            f"'{op.name}' {what} has {values.count(DYNAMIC_INDEX)} dynamic positions "
            f"but {len(dynamic)} index operands"
        )


def _valid_size(op: Operation, d: int, entry: int | SSAValue, size: int) -> int | None:
    """The valid size `entry` of dim `d` when it is known, checked against the tile's
    `size` in that dim; None when it is only known at run time."""
    v = _static_or_constant(entry)
    if v is None:
        return None
    if v < 0:
        raise VerifyException(f"'{op.name}' valid_shape {v} in dim {d} is negative")
    if v > size and size != DYNAMIC_INDEX:
        raise VerifyException(
            f"'{op.name}' valid_shape {v} in dim {d} exceeds the tile size {size}"
        )
    return v


def _check_window(
    op: Operation,
    region_shape: Sequence[int],
    offsets: Sequence[int | SSAValue],
    valid: Sequence[int | SSAValue] | None,
    tile_shape: Sequence[int],
    what: str,
) -> None:
    """Static bounds check of a tile window `offsets + valid` inside `region_shape`."""
    if len(offsets) != len(region_shape):
        raise VerifyException(
            f"'{op.name}' has {len(offsets)} offsets for a rank-{len(region_shape)} {what}"
        )
    if valid is not None and len(valid) != len(tile_shape):
        raise VerifyException(
            f"'{op.name}' valid_shape has {len(valid)} entries for a rank-{len(tile_shape)} tile"
        )
    for d, off in enumerate(offsets):
        o = _static_or_constant(off)
        if o is None:
            continue
        if o < 0:
            raise VerifyException(f"'{op.name}' offset {o} in dim {d} is negative")
        size = tile_shape[d] if d < len(tile_shape) else 1
        if valid is not None and d < len(valid):
            v = _valid_size(op, d, valid[d], size)
            if v is None:
                continue
            size = v
        if size == DYNAMIC_INDEX or region_shape[d] == DYNAMIC_INDEX:
            continue
        if o + size > region_shape[d]:
            raise VerifyException(
                f"'{op.name}' window [{o}, {o + size}) in dim {d} is outside the {what} "
                f"of size {region_shape[d]}; give a valid_shape for a tail tile"
            )


def verify_tile_shape(op: Operation, shape: Sequence[int], what: str) -> None:
    if not 1 <= len(shape) <= MAX_TILE_RANK:
        raise VerifyException(
            f"'{op.name}' {what} has rank {len(shape)}; PyPTO tiles have 1 to {MAX_TILE_RANK} dims"
        )
    if any(s <= 0 for s in shape):
        raise VerifyException(f"'{op.name}' {what} {list(shape)} has a dim <= 0")


def normalize_unroll_list(factors: Sequence[int]) -> list[int]:
    """PyPTO's normalisation: sorted descending, with 1 added.

    Zeros, negatives and duplicates are errors rather than silently dropped: a user who
    wrote `[4, 4]` or `[0, 2]` made a mistake worth hearing about.
    """
    bad = [f for f in factors if f <= 0]
    if bad:
        raise ValueError(f"unroll_list factors must be positive, got {bad[0]}")
    if len(set(factors)) != len(factors):
        raise ValueError(f"unroll_list {list(factors)} has duplicate factors")
    out = sorted(set(factors) | {1}, reverse=True)
    return out


MAX_DIM = 2**31 - 1
"""Largest size of one dim: PyPTO's shapes are 32-bit on the device, and a larger
dim cannot be allocated on any back end."""


def verify_dims(op: Operation, shape: Sequence[int], what: str) -> None:
    """Every static dim of a tensor or memref is in 1..MAX_DIM (`?` is any size)."""
    for d, s in enumerate(shape):
        if s != DYNAMIC_INDEX and not 1 <= s <= MAX_DIM:
            raise VerifyException(
                f"'{op.name}' {what} has size {s} in dim {d}; sizes must be in 1..{MAX_DIM}"
            )


class TileResults(OpTrait):
    """Every tile (`tensor`) result is a PyPTO tile: rank 1 to MAX_TILE_RANK, each
    static dim in 1..MAX_DIM. One rule for all ops that make tiles, so no op can build a
    tile that `pto.view` or the back ends refuse."""

    def verify(self, op: Operation) -> None:
        for i, r in enumerate(op.results):
            if isinstance(r.type, TensorType):
                what = "result" if len(op.results) == 1 else f"result #{i}"
                shape = _shape(r.type)
                verify_tile_shape(op, [1 if s == DYNAMIC_INDEX else s for s in shape], what)
                verify_dims(op, shape, what)


def nesting_error(root: Operation) -> tuple[Operation, int] | None:
    """The first op nested deeper than MAX_NESTING regions inside `root` (with its
    depth), found without recursion, or None."""
    stack: list[tuple[Operation, int]] = [(root, 0)]
    while stack:
        op, depth = stack.pop()
        if depth > MAX_NESTING:
            return op, depth
        for region in op.regions:
            for block in region.blocks:
                stack.extend((child, depth + 1) for child in block.ops if child.regions)
    return None


# --------------------------------------------------------------------------- effects


class _ReadSourceIfMemory(MemoryEffect):
    """`view` reads memory when its source is a memref and is pure on a tile."""

    @classmethod
    def get_effects(cls, op: Operation):
        assert isinstance(op, ViewOp)
        if isinstance(op.source.type, MemRefType):
            return {EffectInstance(MemoryEffectKind.READ, op.source)}
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


# --------------------------------------------------------------------------- kernel


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `pto` regions; yields the results of a `pto.stage`."""

    name = "pto.yield"
    arguments = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *args: SSAValue | Operation):
        super().__init__(operands=[list(args)])


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A `@pypto.frontend.jit` kernel.

    Arguments are the kernel's tensors (memrefs); their names are kept in `arg_names`
    (the SSA names in the custom syntax). A `?` dim is a `pypto.frontend.dynamic`
    symbol, named in `dynamic_dims` (`{x = ["S"]}`); the same name in two arguments
    is one size. `jit_options` keeps the decorator's option dicts.

    ```mlir
    pto.kernel @k(%x: memref<?x64xf32>, %out: memref<?x64xf32>)
        attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
      ...
    }
    ```
    """

    name = "pto.kernel"
    sym_name = prop_def(StringAttr, prop_name="sym_name")
    function_type = prop_def(FunctionType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    dynamic_dims = opt_prop_def(DictionaryAttr)
    jit_options = opt_prop_def(DictionaryAttr)
    body = region_def("single_block")
    traits = traits_def(
        SymbolOpInterface(),
        IsolatedFromAbove(),
        SingleBlockImplicitTerminator(YieldOp),
    )

    def __init__(
        self,
        name: str,
        args: Sequence[tuple[str, MemRefType]],
        body: Region | None = None,
        *,
        dynamic_dims: dict[str, Sequence[str]] | None = None,
        jit_options: DictionaryAttr | None = None,
    ):
        types = [t for _, t in args]
        if body is None:
            body = Region(Block(arg_types=types))
        for arg, (arg_name, _) in zip(body.block.args, args):
            arg.name_hint = arg_name
        props: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(types, []),
            "arg_names": ArrayAttr([StringAttr(n) for n, _ in args]),
            "jit_options": jit_options,
        }
        if dynamic_dims:
            # Sorted keys: MLIR prints dictionaries sorted, so this keeps the text
            # identical through a round trip via mlir-opt.
            props["dynamic_dims"] = DictionaryAttr(
                {
                    k: ArrayAttr([StringAttr(s) for s in dynamic_dims[k]])
                    for k in sorted(dynamic_dims)
                }
            )
        super().__init__(properties=props, regions=[body])

    @property
    def names(self) -> list[str]:
        return [a.data for a in self.arg_names]

    def dynamic_names(self, arg: str) -> list[str]:
        if self.dynamic_dims is None or arg not in self.dynamic_dims.data:
            return []
        value = self.dynamic_dims.data[arg]
        assert isinstance(value, ArrayAttr)
        return [s.data for s in value.data if isinstance(s, StringAttr)]

    def verify_(self) -> None:
        deep = nesting_error(self)
        if deep is not None:
            from tileir.diagnostics import location_of

            where = location_of(deep[0])
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: a '{deep[0].name}'"
                f"{f' at {where}' if where else ''} is nested {deep[1]} regions deep; tileir handles at most {MAX_NESTING} (a PyPTO "
                "kernel is a Python function, which allows at most 100 nested blocks)"
            )
        args = self.body.block.args
        inputs = self.function_type.inputs.data
        if len(inputs) != len(args) or any(a.type != t for a, t in zip(args, inputs)):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: block arguments do not match the "
                "function type"
            )
        if len(self.arg_names.data) != len(args):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: {len(self.arg_names.data)} "
                f"arg_names for {len(args)} arguments"
            )
        names = self.names
        for n in names:
            if not n.isidentifier():
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument name {n!r} is not a "
                    "Python identifier"
                )
        if len(set(names)) != len(names):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: argument names {names} repeat"
            )
        for name, arg in zip(names, args):
            if not isinstance(arg.type, MemRefType):
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument {name!r} has type "
                    f"{arg.type}; kernel arguments are memrefs (global tensors)"
                )
            _check_element_type(self, arg.type, f"argument {name!r}")
            verify_dims(self, _shape(arg.type), f"argument {name!r}")
            n_dyn = list(arg.type.get_shape()).count(DYNAMIC_INDEX)
            if len(self.dynamic_names(name)) != n_dyn:
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument {name!r} has {n_dyn} "
                    f"dynamic dims but {len(self.dynamic_names(name))} names in "
                    "dynamic_dims"
                )
        if self.dynamic_dims is not None:
            unknown = set(self.dynamic_dims.data) - set(names)
            if unknown:
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: dynamic_dims names unknown "
                    f"arguments {sorted(unknown)}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        for i, (arg, name) in enumerate(zip(self.body.block.args, self.names)):
            if i:
                printer.print_string(", ")
            arg.name_hint = name
            printer.print_block_argument(arg)
        printer.print_string(")")
        extra: dict[str, Attribute] = {}
        if self.dynamic_dims is not None:
            extra["dynamic_dims"] = self.dynamic_dims
        if self.jit_options is not None:
            extra["jit_options"] = self.jit_options
        extra.update(self.attributes)
        printer.print_op_attributes(extra, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        arg_names = [a.name.text[1:] for a in args]
        props = attrs.data if attrs is not None else {}
        dyn = props.get("dynamic_dims")
        opts = props.get("jit_options")
        types = [a.type for a in args]
        assert all(t is not None for t in types)
        op = cls(
            name,
            [(n, t) for n, t in zip(arg_names, types)],  # type: ignore[misc]
            region,
            jit_options=opts if isinstance(opts, DictionaryAttr) else None,
        )
        if isinstance(dyn, DictionaryAttr):
            op.dynamic_dims = DictionaryAttr({k: dyn.data[k] for k in sorted(dyn.data)})
        for k, v in props.items():
            if k not in ("dynamic_dims", "jit_options"):
                op.attributes[k] = v
        if not region.blocks[0].ops or not isinstance(region.blocks[0].last_op, YieldOp):
            region.blocks[0].add_op(YieldOp())
        return op


# --------------------------------------------------------------------------- memory


@irdl_op_definition
class TensorOp(IRDLOperation):
    """`pypto.tensor(shape, dtype, name)`: a workspace buffer (mutable memory)."""

    name = "pto.tensor"
    buffer_name = prop_def(StringAttr, prop_name="name")
    result = result_def(MemRefType)
    traits = traits_def(_AllocatesResult())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: MemRefType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        _check_element_type(self, self.result.type, "workspace")
        verify_dims(self, _shape(self.result.type), "workspace")
        if DYNAMIC_INDEX in _shape(self.result.type):
            raise VerifyException(
                f"'pto.tensor' workspace {self.buffer_name.data!r} must have a static shape"
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

    def verify_(self) -> None:
        _check_index_list(self, "offsets", self.static_offsets, self.offsets)
        _check_index_list(self, "valid_shape", self.static_valid_shape, self.valid_shape)
        src, res = self.source.type, self.result.type
        _check_element_type(self, res, "result")
        if _elem(src) != _elem(res):
            raise VerifyException(
                f"'pto.view' changes the element type from {_elem(src)} to {_elem(res)}; "
                "use pto.cast"
            )
        shape = _shape(res)
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in shape], "result")
        if len(shape) != len(_shape(src)):
            raise VerifyException(
                f"'pto.view' result rank {len(shape)} differs from source rank {len(_shape(src))}"
            )
        if len(self.sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.view' result has {shape.count(DYNAMIC_INDEX)} dynamic dims but "
                f"{len(self.sizes)} sizes"
            )
        _check_window(
            self,
            _shape(src),
            self.mixed_offsets,
            self.mixed_valid_shape,
            shape,
            "source",
        )


@irdl_op_definition
class AssembleOp(IRDLOperation):
    """`pypto.assemble(src, offsets, dst)`: write a tile (only its valid region) into
    memory. `x[:] = value` on a workspace is an assemble at offset 0."""

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

    def verify_(self) -> None:
        _check_index_list(self, "offsets", self.static_offsets, self.offsets)
        src, dst = self.src.type, self.dst.type
        if _elem(src) != _elem(dst):
            raise VerifyException(
                f"'pto.assemble' writes a {_elem(src)} tile into a {_elem(dst)} tensor; cast first"
            )
        if len(_shape(src)) != len(_shape(dst)):
            raise VerifyException(
                f"'pto.assemble' tile rank {len(_shape(src))} differs from destination "
                f"rank {len(_shape(dst))}"
            )
        # A tail tile may be larger than what is left; the valid region is checked at
        # run time, so only a window that cannot fit even when valid is rejected here.
        for d, off in enumerate(self.mixed_offsets):
            o = _static_or_constant(off)
            size, bound = _shape(dst)[d], _shape(dst)[d]
            if o is not None and (o < 0 or (bound != DYNAMIC_INDEX and o >= max(size, 1))):
                raise VerifyException(
                    f"'pto.assemble' offset {o} in dim {d} is outside the destination of "
                    f"size {bound}"
                )


# --------------------------------------------------------------------------- op families


def _same_elem(op: Operation, a: Attribute, b: Attribute) -> None:
    if _elem(a) != _elem(b):
        raise VerifyException(f"'{op.name}' changes the element type from {_elem(a)} to {_elem(b)}")


class TileOp(IRDLOperation):
    """An op that computes tiles from tiles and scalars: pure, and every result a PyPTO
    tile (`TileResults`)."""

    traits = traits_def(Pure(), TileResults())


class OneTileOp(TileOp):
    """A tile op of one tile operand, `input` (more operands and results per op)."""

    input = operand_def(TensorType)


class TileToTileOp(OneTileOp):
    """A tile op from `input` to one tile `result`; with `SAME_ELEMENT` (the default)
    the result keeps the input's element type."""

    result = result_def(TensorType)

    SAME_ELEMENT: ClassVar[bool] = True

    def verify_(self) -> None:
        if self.SAME_ELEMENT:
            _same_elem(self, self.input.type, self.result.type)


# --------------------------------------------------------------------------- layout


@irdl_op_definition
class ReshapeOp(TileToTileOp):
    """`pypto.reshape(input, shape, valid_shape=..., inplace=...)`."""

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

    def verify_(self) -> None:
        _check_index_list(self, "valid_shape", self.static_valid_shape, self.valid_shape)
        super().verify_()
        a, b = self.input.type, self.result.type
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in _shape(b)], "result")
        _rule(self, shapes.reshape, _shape(a), _shape(b))
        if DYNAMIC_INDEX in (*_shape(a), *_shape(b)) and self.inplace is None:
            raise VerifyException(
                "'pto.reshape' with dynamic shapes must be inplace (PyPTO rule); add `inplace`"
            )
        valid = self.mixed_valid_shape
        if valid is not None and len(valid) != len(_shape(b)):
            raise VerifyException(
                f"'pto.reshape' valid_shape has {len(valid)} entries for a rank-"
                f"{len(_shape(b))} result"
            )
        if (
            self.inplace is not None
            and isinstance(self.input.owner, ViewOp)
            and not _is_whole_tensor_view(self.input.owner)
        ):
            raise VerifyException(
                "'pto.reshape' inplace is not allowed on a tensor produced by pto.view "
                "(PyPTO rule); drop `inplace` or reshape a computed tile"
            )
        if self.inplace is not None and any(
            isinstance(use.operation, AssembleOp) and is_kernel_argument(use.operation.dst)
            for use in self.result.uses
        ):
            raise VerifyException(
                "'pto.reshape' inplace result is written to a kernel argument, but an "
                "inplace reshape's output cannot be a function output (PyPTO rule); drop "
                "`inplace` here"
            )


def is_kernel_argument(value: SSAValue) -> bool:
    """True for an argument of a `pto.kernel` (a global tensor)."""
    return isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), KernelOp)


def _is_whole_tensor_view(view: ViewOp) -> bool:
    """A view of a whole kernel argument (offset 0, same shape, no valid_shape) is the
    frontend's spelling of the global tensor itself, which PyPTO may reshape inplace."""
    return (
        is_kernel_argument(view.source)
        and all(o == 0 for o in view.mixed_offsets)
        and view.mixed_valid_shape is None
        and not view.sizes
        and _shape(view.source.type) == _shape(view.result.type)
    )


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


@irdl_op_definition
class CastOp(TileToTileOp):
    """`pypto.cast(input, dtype, mode, satmode)`."""

    name = "pto.cast"
    SAME_ELEMENT: ClassVar[bool] = False
    mode = prop_def(StringAttr, default_value=StringAttr("none"))
    satmode = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input (`mode` $mode^)? (`sat` $satmode^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        result_type: TensorType,
        mode: str = "none",
        saturate: bool = False,
    ):
        super().__init__(
            operands=[input],
            properties={
                "mode": StringAttr(mode),
                "satmode": UnitAttr() if saturate else None,
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        super().verify_()
        if self.mode.data not in CAST_MODES:
            raise VerifyException(
                f"'pto.cast' mode {self.mode.data!r} is not a PyPTO cast mode (one of "
                f"{', '.join(CAST_MODES)})"
            )
        _check_element_type(self, self.result.type, "result")
        if _shape(self.input.type) != _shape(self.result.type):
            raise VerifyException(
                f"'pto.cast' changes the shape from {list(_shape(self.input.type))} to "
                f"{list(_shape(self.result.type))}"
            )


# --------------------------------------------------------------------------- elementwise


class UnaryOp(TileOp):
    """Elementwise op of one tile; result has the operand's type."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)
    assembly_format = "$input attr-dict `:` type($result)"

    ELEMENT_KINDS: ClassVar[frozenset[str]] = FLOAT
    """The element-type classes the op is defined on."""

    def __init__(self, input: SSAValue | Operation):
        super().__init__(operands=[input], result_types=[SSAValue.get(input).type])

    def verify_(self) -> None:
        if self.input.type != self.result.type:
            raise VerifyException(f"'{self.name}' result type must equal the operand type")
        _check_element_type(self, self.input.type, "operand")
        _check_kind(self, self.input.type, self.ELEMENT_KINDS, "operand")


@irdl_op_definition
class NegOp(UnaryOp):
    name = "pto.neg"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "pto.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "pto.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "pto.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "pto.rsqrt"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "pto.tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "pto.erf"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "pto.sigmoid"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "pto.abs"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "pto.reciprocal"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "pto.relu"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


def _operand_shape(t: Attribute) -> tuple[int, ...]:
    return _shape(t) if isinstance(t, TensorType) else ()


def _broadcast_result(op: Operation, operands: Sequence[SSAValue], result: Attribute) -> None:
    tiles = [v for v in operands if isinstance(v.type, TensorType)]
    if not tiles:
        raise VerifyException(f"'{op.name}' needs at least one tile operand")
    for t in tiles:
        _check_element_type(op, t.type, "operand")
    expected = _rule(op, shapes.broadcast, *[_operand_shape(v.type) for v in operands])
    assert isinstance(result, TensorType)
    _expect_result(op, _shape(result), expected, exact=False)


class BinaryOp(TileOp):
    """Elementwise op of two operands, each a tile or a scalar (`pypto.add(x, 1.0)`);
    tiles broadcast numpy-style. Result element type is the tiles' element type."""

    lhs = operand_def(TileOrScalar)
    rhs = operand_def(TileOrScalar)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC
    """The element-type classes of the tile operands the op is defined on."""

    def result_element_type(self) -> Attribute:
        return _elem(self.result.type)

    def verify_(self) -> None:
        _broadcast_result(self, [self.lhs, self.rhs], self.result.type)
        tiles = [v for v in (self.lhs, self.rhs) if isinstance(v.type, TensorType)]
        for v in tiles:
            _check_kind(self, v.type, self.ELEMENT_KINDS, "operand")
        for v in (self.lhs, self.rhs):
            if not isinstance(v.type, TensorType):
                _check_scalar(self, v.type, _elem(tiles[0].type))
        elems = {_elem(v.type) for v in tiles}
        if len(elems) > 1:
            raise VerifyException(
                f"'{self.name}' mixes element types {sorted(map(str, elems))}; cast one "
                "operand first"
            )
        if elems and self.result_element_type() != _elem(self.result.type):
            raise VerifyException(f"'{self.name}' has a wrong result element type")
        if elems and _elem(self.result.type) not in elems and not isinstance(self, CompareOp):
            raise VerifyException(
                f"'{self.name}' result element type {_elem(self.result.type)} differs from "
                f"the operands' {elems.pop()}"
            )


@irdl_op_definition
class AddOp(BinaryOp):
    name = "pto.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "pto.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "pto.mul"


PRECISION_TYPES = ("HIGH_PRECISION", "INTRINSIC")
"""Members of `pypto.PrecisionType` (newer PyPTO), the precision mode of `pypto.div`."""


@irdl_op_definition
class DivOp(BinaryOp):
    """`pypto.div(x, y, precision_type=pypto.PrecisionType.INTRINSIC)`: `precision_type`
    (a `PRECISION_TYPES` member, absent: PyPTO's default HIGH_PRECISION) picks how the
    NPU divides; tileir's numpy back end computes the IEEE quotient for every mode."""

    name = "pto.div"
    precision_type = opt_prop_def(StringAttr)
    assembly_format = (
        "$lhs `,` $rhs (`precision` $precision_type^)? attr-dict `:` type($lhs) `,` "
        "type($rhs) `->` type($result)"
    )

    def verify_(self) -> None:
        super().verify_()
        if self.precision_type is not None and self.precision_type.data not in PRECISION_TYPES:
            raise VerifyException(
                f"'pto.div' precision_type {self.precision_type.data!r} is not one of "
                f"{list(PRECISION_TYPES)}"
            )


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "pto.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "pto.minimum"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "pto.pow"


class CompareOp(BinaryOp):
    """Elementwise comparison; the result is an i1 tile (PyPTO's DT_BOOL)."""

    ELEMENT_KINDS: ClassVar[frozenset[str]] = ANY_KIND

    def result_element_type(self) -> Attribute:
        return i1


@irdl_op_definition
class EqOp(CompareOp):
    name = "pto.eq"


@irdl_op_definition
class NeOp(CompareOp):
    name = "pto.ne"


@irdl_op_definition
class LtOp(CompareOp):
    name = "pto.lt"


@irdl_op_definition
class LeOp(CompareOp):
    name = "pto.le"


@irdl_op_definition
class GtOp(CompareOp):
    name = "pto.gt"


@irdl_op_definition
class GeOp(CompareOp):
    name = "pto.ge"


@irdl_op_definition
class FullOp(TileOp):
    """`pypto.full(size, fill_value, dtype, valid_shape=...)`."""

    name = "pto.full"
    value = operand_def(ScalarType)
    valid_shape = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    static_valid_shape = prop_def(DenseArrayBase.constr(i64), default_value=_i64_array([]))
    result = result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    custom_directives = (DynamicIndexList,)
    assembly_format = (
        "$value (`valid` custom<DynamicIndexList>($valid_shape, $static_valid_shape)^)?"
        " (`sizes` `(` $sizes^ `)`)? attr-dict `:` type($value) `->` type($result)"
    )

    def __init__(
        self,
        value: SSAValue | Operation,
        result_type: TensorType,
        valid_shape: Sequence[int | SSAValue] | None = None,
        sizes: Sequence[SSAValue] = (),
    ):
        sv, dv = _split(valid_shape or [])
        super().__init__(
            operands=[value, dv, list(sizes)],
            properties={"static_valid_shape": sv},
            result_types=[result_type],
        )

    @property
    def mixed_valid_shape(self) -> list[int | SSAValue] | None:
        return mixed_values(self.static_valid_shape, self.valid_shape) or None

    def verify_(self) -> None:
        _check_index_list(self, "valid_shape", self.static_valid_shape, self.valid_shape)
        _check_element_type(self, self.result.type, "result")
        _check_scalar(self, self.value.type, _elem(self.result.type))
        shape = _shape(self.result.type)
        verify_tile_shape(self, [1 if s == DYNAMIC_INDEX else s for s in shape], "result")
        if len(self.sizes) != shape.count(DYNAMIC_INDEX):
            raise VerifyException(
                f"'pto.full' result has {shape.count(DYNAMIC_INDEX)} dynamic dims but "
                f"{len(self.sizes)} sizes"
            )
        valid = self.mixed_valid_shape
        if valid is not None and len(valid) != len(shape):
            raise VerifyException(
                f"'pto.full' valid_shape has {len(valid)} entries for a rank-{len(shape)} result"
            )
        for d, entry in enumerate(valid or []):
            _valid_size(self, d, entry, shape[d])


@irdl_op_definition
class WhereOp(TileOp):
    """`pypto.where(condition, input, other)`."""

    name = "pto.where"
    condition = operand_def(TensorType)
    input = operand_def(TileOrScalar)
    other = operand_def(TileOrScalar)
    result = result_def(TensorType)
    assembly_format = (
        "$condition `,` $input `,` $other attr-dict `:` type($condition) `,` type($input)"
        " `,` type($other) `->` type($result)"
    )

    def __init__(
        self,
        condition: SSAValue | Operation,
        input: SSAValue | Operation,
        other: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(operands=[condition, input, other], result_types=[result_type])

    def verify_(self) -> None:
        if _elem(self.condition.type) != i1:
            raise VerifyException(
                f"'pto.where' condition has element type {_elem(self.condition.type)}; "
                "it must be i1"
            )
        _broadcast_result(self, [self.condition, self.input, self.other], self.result.type)
        for v in (self.input, self.other):
            if not isinstance(v.type, TensorType):
                _check_scalar(self, v.type, _elem(self.result.type))
            elif _elem(v.type) != _elem(self.result.type):
                raise VerifyException(
                    f"'pto.where' operand element type {_elem(v.type)} differs from the "
                    f"result's {_elem(self.result.type)}"
                )


# --------------------------------------------------------------------------- reductions


class ReduceOp(TileToTileOp):
    """`pypto.sum / amax / amin(input, dim, keepdim)`."""

    dim = prop_def(IntegerAttr[I64])
    keepdim = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input `,` $dim (`keepdim` $keepdim^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        dim: int,
        keepdim: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "dim": IntegerAttr(dim, i64),
                "keepdim": UnitAttr() if keepdim else None,
            },
            result_types=[result_type],
        )

    reduced_shape = staticmethod(shapes.reduced_shape)

    def verify_(self) -> None:
        super().verify_()
        expected = _rule(
            self,
            shapes.reduce,
            _shape(self.input.type),
            self.dim.value.data,
            self.keepdim is not None,
        )
        _check_element_type(self, self.input.type, "operand")
        _check_kind(self, self.input.type, NUMERIC, "operand")
        _expect_result(self, _shape(self.result.type), expected)


@irdl_op_definition
class SumOp(ReduceOp):
    name = "pto.sum"


@irdl_op_definition
class AmaxOp(ReduceOp):
    name = "pto.amax"


@irdl_op_definition
class AminOp(ReduceOp):
    name = "pto.amin"


# --------------------------------------------------------------------------- matmul


@irdl_op_definition
class MatmulOp(TileOp):
    """`pypto.matmul(a, b, out_dtype, a_trans=, b_trans=, extend_params={"bias_tensor":
    bias})`; 2-D or batched 3-D. The result element type is `out_dtype`."""

    name = "pto.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    a_trans = opt_prop_def(UnitAttr)
    b_trans = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$a `,` $b (`bias` $bias^)? (`a_trans` $a_trans^)? (`b_trans` $b_trans^)? attr-dict"
        " `:` type($a) `,` type($b) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        a: SSAValue | Operation,
        b: SSAValue | Operation,
        result_type: TensorType,
        *,
        bias: SSAValue | Operation | None = None,
        a_trans: bool = False,
        b_trans: bool = False,
    ):
        super().__init__(
            operands=[a, b, [bias] if bias is not None else []],
            properties={
                "a_trans": UnitAttr() if a_trans else None,
                "b_trans": UnitAttr() if b_trans else None,
            },
            result_types=[result_type],
        )

    def verify_(self) -> None:
        a, b, r = _shape(self.a.type), _shape(self.b.type), _shape(self.result.type)
        expected = _rule(
            self,
            shapes.matmul,
            a,
            b,
            a_trans=self.a_trans is not None,
            b_trans=self.b_trans is not None,
        )
        _check_element_type(self, self.result.type, "result")
        if _elem(self.a.type) != _elem(self.b.type):
            raise VerifyException(
                f"'pto.matmul' operand element types differ: {_elem(self.a.type)} and "
                f"{_elem(self.b.type)}"
            )
        _check_element_type(self, self.a.type, "operand")
        bias = None
        if self.bias is not None:
            _check_element_type(self, self.bias.type, "bias")
            bias = element_type(_elem(self.bias.type)).short
        _rule(
            self,
            shapes.matmul_dtypes,
            element_type(_elem(self.a.type)).short,
            element_type(_elem(self.result.type)).short,
            bias,
        )
        _expect_result(self, r, expected, exact=False)
        if self.bias is not None:
            _rule(self, shapes.matmul_bias, _shape(self.bias.type), expected)


# --------------------------------------------------------------------------- indexing


@irdl_op_definition
class GathermaskOp(TileToTileOp):
    """`pypto.gathermask(x, pattern_mode)`: pick elements of the last dim by a fixed
    pattern (1/2: first/second of every 2; 3-6: first..fourth of every 4; 7: all)."""

    name = "pto.gathermask"
    pattern_mode = prop_def(IntegerAttr[I64])
    assembly_format = "$input `,` $pattern_mode attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, pattern_mode: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            properties={"pattern_mode": IntegerAttr(pattern_mode, i64)},
            result_types=[result_type],
        )

    stride = staticmethod(shapes.gathermask_stride)

    def verify_(self) -> None:
        super().verify_()
        expected = _rule(
            self, shapes.gathermask, _shape(self.input.type), self.pattern_mode.value.data
        )
        _expect_result(self, _shape(self.result.type), expected)


class _IndexOp(TileToTileOp):
    input = operand_def(TensorType)  # operand 0 (see ReshapeOp)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `,` $dim `,` $index attr-dict `:` type($input) `,` type($index) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        dim: int,
        index: SSAValue | Operation,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, index],
            properties={"dim": IntegerAttr(dim, i64)},
            result_types=[result_type],
        )

    SHAPE_RULE: ClassVar[Callable[[Sequence[int], Sequence[int], int], shapes.Shape]]
    """The op's result-shape rule in `shapes`: (input shape, index shape, dim)."""

    def expected_shape(self) -> shapes.Shape:
        return _rule(
            self,
            type(self).SHAPE_RULE,
            _shape(self.input.type),
            _shape(self.index.type),
            self.dim.value.data,
        )

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(_elem(self.index.type), IntegerType) or _elem(self.index.type) == i1:
            raise VerifyException(
                f"'{self.name}' index has element type {_elem(self.index.type)}; it must be "
                "an integer type"
            )
        _expect_result(self, _shape(self.result.type), self.expected_shape())


@irdl_op_definition
class GatherOp(_IndexOp):
    """`pypto.gather(input, dim, index)`: torch.gather semantics, as PyPTO 0.2.0
    (`GatherElements`) and the numpy back end have it: the result has the index's shape,
    and the index has the input's rank."""

    name = "pto.gather"
    SHAPE_RULE = staticmethod(shapes.gather)


@irdl_op_definition
class IndexSelectOp(_IndexOp):
    """`pypto.index_select(input, dim, index)`: `np.take` semantics, as PyPTO 0.2.0 traces
    it: the index's shape replaces dim `dim` (`[V, H]` by a `[1, S]` index at dim 0 is
    `[1, S, H]`, the Embedding lookup)."""

    name = "pto.index_select"
    SHAPE_RULE = staticmethod(shapes.index_select)


@irdl_op_definition
class TopkOp(OneTileOp):
    """`pypto.topk(input, k, dim, largest)` -> (values, indices)."""

    name = "pto.topk"
    k = prop_def(IntegerAttr[I64])
    dim = prop_def(IntegerAttr[I64], default_value=IntegerAttr(-1, i64))
    largest = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    values = result_def(TensorType)
    indices = result_def(TensorType)
    assembly_format = (
        "$input `,` $k (`dim` $dim^)? (`largest` $largest^)? attr-dict `:` type($input) `->`"
        " type($values) `,` type($indices)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        k: int,
        dim: int,
        largest: bool,
        values_type: TensorType,
        indices_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            properties={
                "k": IntegerAttr(k, i64),
                "dim": IntegerAttr(dim, i64),
                "largest": BoolAttr.from_bool(largest),
            },
            result_types=[values_type, indices_type],
        )

    def verify_(self) -> None:
        expected = _rule(
            self, shapes.topk, _shape(self.input.type), self.k.value.data, self.dim.value.data
        )
        _same_elem(self, self.input.type, self.values.type)
        for r in (self.values, self.indices):
            _expect_result(self, _shape(r.type), expected)
        index_type = _elem(self.indices.type)
        if not isinstance(index_type, IntegerType) or index_type == i1:
            raise VerifyException("'pto.topk' indices must have an integer element type")
        size = _shape(self.input.type)[shapes.norm_dim(self.dim.value.data, len(expected))]
        _rule(self, shapes.index_fits, size, index_type.width.data, "indices")


# --------------------------------------------------------------------------- loops


def _verify_unroll_list(op: Operation, factors: Sequence[int] | None) -> None:
    if factors is None:
        return
    if not factors:
        raise VerifyException(f"'{op.name}' unroll_list is empty; drop it or give factors")
    if any(f <= 0 for f in factors):
        raise VerifyException(f"'{op.name}' unroll_list {list(factors)} has a factor <= 0")
    if any(a <= b for a, b in zip(factors, factors[1:])) or factors[-1] != 1:
        raise VerifyException(
            f"'{op.name}' unroll_list {list(factors)} must be strictly descending and end "
            f"in 1 (PyPTO normalises it to {normalize_unroll_list(sorted(set(factors)))})"
        )


class _LoopBase(IRDLOperation):
    lower_bound = operand_def(IndexType)
    upper_bound = operand_def(IndexType)
    step = operand_def(IndexType)
    loop_name = opt_prop_def(StringAttr, prop_name="name")
    idx_name = opt_prop_def(StringAttr)
    unroll_list = opt_prop_def(DenseArrayBase.constr(i64))
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    N_BLOCK_ARGS: ClassVar[int] = 1

    @property
    def induction_var(self) -> BlockArgument:
        return self.body.block.args[0]

    @property
    def factors(self) -> list[int]:
        return list(self.unroll_list.get_values()) if self.unroll_list is not None else []

    def verify_(self) -> None:
        args = self.body.block.args
        if len(args) != self.N_BLOCK_ARGS or any(not isinstance(a.type, IndexType) for a in args):
            raise VerifyException(
                f"'{self.name}' body must have {self.N_BLOCK_ARGS} index block argument(s)"
            )
        _verify_unroll_list(self, self.factors if self.unroll_list is not None else None)
        step = constant_index(self.step)
        if step is not None and step <= 0:
            raise VerifyException(f"'{self.name}' step {step} must be positive")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lower_bound)
        printer.print_string(" to ")
        printer.print_ssa_value(self.upper_bound)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.loop_name is not None:
            printer.print_string(" name ")
            printer.print_attribute(self.loop_name)
        if self.idx_name is not None:
            printer.print_string(" idx_name ")
            printer.print_attribute(self.idx_name)
        if self.unroll_list is not None:
            printer.print_string(" unroll [")
            printer.print_list(self.factors, lambda f: printer.print_string(str(f)))
            printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser):
        args = [parser.parse_argument(expect_type=False) for _ in range(1)]
        while len(args) < cls.N_BLOCK_ARGS:
            parser.parse_punctuation(",")
            args.append(parser.parse_argument(expect_type=False))
        parser.parse_punctuation("=")
        index = IndexType()
        lb = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        parser.parse_keyword("to")
        ub = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        parser.parse_keyword("step")
        step = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        name = idx_name = None
        factors: list[int] | None = None
        if parser.parse_optional_keyword("name") is not None:
            name = parser.parse_str_literal()
        if parser.parse_optional_keyword("idx_name") is not None:
            idx_name = parser.parse_str_literal()
        if parser.parse_optional_keyword("unroll") is not None:
            pos = parser.pos
            factors = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
            if not factors:
                parser.raise_error(
                    f"'{cls.name}' unroll list is empty; give factors (`unroll [4, 1]`) "
                    "or drop `unroll`",
                    pos,
                    parser.pos,
                )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        typed = [a.resolve(index) for a in args]
        body = parser.parse_region(typed)
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        op = cls(lb, ub, step, body, name=name, idx_name=idx_name, unroll_list=factors)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def __init__(
        self,
        lower_bound: SSAValue | Operation,
        upper_bound: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block | None = None,
        *,
        name: str | None = None,
        idx_name: str | None = None,
        unroll_list: Sequence[int] | None = None,
    ):
        if body is None:
            body = Block(arg_types=[IndexType()] * self.N_BLOCK_ARGS)
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            operands=[lower_bound, upper_bound, step],
            properties={
                "name": StringAttr(name) if name is not None else None,
                "idx_name": StringAttr(idx_name) if idx_name is not None else None,
                "unroll_list": _i64_array(unroll_list) if unroll_list else None,
            },
            regions=[body],
        )


@irdl_op_definition
class LoopOp(_LoopBase):
    """`for i in pypto.loop(start, stop, step, name=, idx_name=, unroll_list=)`.

    `unroll_list` (normalised: strictly descending, ending in 1) asks PyPTO to compile
    one graph per factor; the `loop-unroll` pass makes that form explicit.
    """

    name = "pto.loop"


@irdl_op_definition
class LoopUnrollOp(_LoopBase):
    """`for i, n in pypto.loop_unroll(start, stop, step, unroll_list=...)`: the body sees
    the chunk start `i` and the chunk length `n` (a factor of the list), and covers
    iterations `i, i+step, ..., i+(n-1)*step` itself."""

    name = "pto.loop_unroll"
    N_BLOCK_ARGS: ClassVar[int] = 2

    @property
    def chunk_length(self) -> BlockArgument:
        return self.body.block.args[1]

    def verify_(self) -> None:
        super().verify_()
        if not self.factors:
            raise VerifyException("'pto.loop_unroll' needs an unroll_list")


class _LoopStateOp(IRDLOperation):
    index = operand_def(IndexType)
    result = result_def(i1)
    traits = traits_def(Pure())
    assembly_format = "$index attr-dict"

    def __init__(self, index: SSAValue | Operation):
        super().__init__(operands=[index], result_types=[i1])

    def loop(self) -> _LoopBase:
        owner = self.index.owner
        assert isinstance(owner, Block)
        parent = owner.parent_op()
        assert isinstance(parent, _LoopBase)
        return parent

    def verify_(self) -> None:
        if not (
            isinstance(self.index, BlockArgument)
            and isinstance(self.index.block.parent_op(), _LoopBase)
            and self.index.index == 0
        ):
            raise VerifyException(
                f"'{self.name}' operand must be the index of an enclosing pto.loop or "
                "pto.loop_unroll"
            )


@irdl_op_definition
class IsLoopBeginOp(_LoopStateOp):
    """`pypto.is_loop_begin(i)`: true in the first iteration of i's loop."""

    name = "pto.is_loop_begin"


@irdl_op_definition
class IsLoopEndOp(_LoopStateOp):
    """`pypto.is_loop_end(i)`: true in the last iteration of i's loop."""

    name = "pto.is_loop_end"


# --------------------------------------------------------------------------- settings


def _verify_pair(op: Operation, what: str, values: Sequence[int]) -> None:
    if len(values) != 2 or any(v <= 0 for v in values):
        raise VerifyException(
            f"'{op.name}' {what} must be an [L0, L1] pair of positive sizes, got {list(values)}"
        )


@irdl_op_definition
class SetVecTileShapesOp(IRDLOperation):
    """`pypto.set_vec_tile_shapes(*shape)`: the vector tile shape of the ops that
    follow, until the next setting."""

    name = "pto.set_vec_tile_shapes"
    shape = prop_def(DenseArrayBase.constr(i64))
    assembly_format = "$shape attr-dict"

    def __init__(self, shape: Sequence[int]):
        super().__init__(properties={"shape": _i64_array(shape)})

    def verify_(self) -> None:
        verify_tile_shape(self, self.shape.get_values(), "vector tile shape")


@irdl_op_definition
class SetCubeTileShapesOp(IRDLOperation):
    """`pypto.set_cube_tile_shapes(m, k, n, enable_split_k)`, each an [L0, L1] pair."""

    name = "pto.set_cube_tile_shapes"
    m = prop_def(DenseArrayBase.constr(i64))
    k = prop_def(DenseArrayBase.constr(i64))
    n = prop_def(DenseArrayBase.constr(i64))
    enable_split_k = opt_prop_def(UnitAttr)
    assembly_format = "`m` $m `k` $k `n` $n (`split_k` $enable_split_k^)? attr-dict"

    def __init__(
        self,
        m: Sequence[int],
        k: Sequence[int],
        n: Sequence[int],
        enable_split_k: bool = False,
    ):
        super().__init__(
            properties={
                "m": _i64_array(m),
                "k": _i64_array(k),
                "n": _i64_array(n),
                "enable_split_k": UnitAttr() if enable_split_k else None,
            }
        )

    def verify_(self) -> None:
        for what in ("m", "k", "n"):
            _verify_pair(self, what, getattr(self, what).get_values())


@irdl_op_definition
class SetSemanticLabelOp(IRDLOperation):
    """`pypto.set_semantic_label(label)`: labels the ops that follow."""

    name = "pto.set_semantic_label"
    label = prop_def(StringAttr)
    assembly_format = "$label attr-dict"

    def __init__(self, label: str):
        super().__init__(properties={"label": StringAttr(label)})

    def verify_(self) -> None:
        if not self.label.data:
            raise VerifyException("'pto.set_semantic_label' label must not be empty")


OPTION_FUNCTIONS: dict[str, str] = {
    "pass_options": "set_pass_options",
    "operation_options": "experimental.set_operation_options",
    "matrix_size": "set_matrix_size",
}
"""`pto.set_options` kinds -> the PyPTO function (inside `pypto`) that sets them."""


@irdl_op_definition
class SetOptionsOp(IRDLOperation):
    """`pypto.set_pass_options(**options)` / `pypto.experimental.set_operation_options(
    **options)`: options that steer PyPTO's compiler for the ops that follow (PyPTO: "the
    setting is local to the current jit or loop"). They change no value, so the numpy
    back end ignores them; passes keep them in place as statements. Keys are Python
    keyword names; values are builtin attributes (ints, floats, bools, strings, arrays,
    dicts; a pypto enum member as its dotted name, `"pypto.X.Y"`)."""

    name = "pto.set_options"
    kind = prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    assembly_format = "$kind $options attr-dict"

    def __init__(self, kind: str, options: DictionaryAttr):
        super().__init__(properties={"kind": StringAttr(kind), "options": options})

    def verify_(self) -> None:
        if self.kind.data not in OPTION_FUNCTIONS:
            raise VerifyException(
                f"'pto.set_options' kind {self.kind.data!r} is not one of "
                f"{sorted(OPTION_FUNCTIONS)}"
            )
        for key in self.options.data:
            if not key.isidentifier() or keyword.iskeyword(key):
                raise VerifyException(
                    f"'pto.set_options' option name {key!r} is not a Python keyword name"
                )


# --------------------------------------------------------------------------- stages

UNITS = ("vector", "cube")


@irdl_op_definition
class StageOp(IRDLOperation):
    """A run of ops on one unit (Vector or Cube), made by `vc-split`.

    Values computed inside and used after the stage leave it as results (through the
    `pto.yield` terminator); values used inside come from above. `tile_shape` is the
    vector tile shape; `cube_tile` holds m, k, n pairs (6 values).
    """

    name = "pto.stage"
    unit = prop_def(StringAttr)
    label = opt_prop_def(StringAttr)
    tile_shape = opt_prop_def(DenseArrayBase.constr(i64))
    cube_tile = opt_prop_def(DenseArrayBase.constr(i64))
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
    assembly_format = (
        "$unit (`label` $label^)? (`tile` $tile_shape^)? (`cube` $cube_tile^)? attr-dict-with-keyword"
        " $body (`->` type($outputs)^)?"
    )

    def __init__(
        self,
        unit: str,
        body: Region | Block,
        result_types: Sequence[Attribute] = (),
        *,
        label: str | None = None,
        tile_shape: Sequence[int] | None = None,
        cube_tile: Sequence[int] | None = None,
    ):
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            properties={
                "unit": StringAttr(unit),
                "label": StringAttr(label) if label else None,
                "tile_shape": _i64_array(tile_shape) if tile_shape else None,
                "cube_tile": _i64_array(cube_tile) if cube_tile else None,
            },
            regions=[body],
            result_types=[list(result_types)],
        )

    def verify_(self) -> None:
        if self.unit.data not in UNITS:
            raise VerifyException(f"'pto.stage' unit {self.unit.data!r} must be 'vector' or 'cube'")
        if self.tile_shape is not None:
            verify_tile_shape(self, self.tile_shape.get_values(), "tile_shape")
        if self.cube_tile is not None and len(self.cube_tile.get_values()) != 6:
            raise VerifyException("'pto.stage' cube tile must hold 6 values: m, k, n pairs")
        term = self.body.block.last_op
        if isinstance(term, YieldOp):
            types = [a.type for a in term.arguments]
            if types != [r.type for r in self.outputs]:
                raise VerifyException(
                    "'pto.stage' yields values whose types differ from its results"
                )
        _verify_no_unit_crossing(self)


@irdl_op_definition
class TransferOp(IRDLOperation):
    """The hand-off of a tile between a Cube stage and a Vector stage (through a buffer
    on the hardware). Semantically the identity."""

    name = "pto.transfer"
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    src_unit = prop_def(StringAttr, prop_name="from")
    dst_unit = prop_def(StringAttr, prop_name="to")
    result = result_def(T)
    traits = traits_def(Pure(), TileResults())
    assembly_format = "$input `from` $from `to` $to attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, src_unit: str, dst_unit: str):
        super().__init__(
            operands=[input],
            properties={"from": StringAttr(src_unit), "to": StringAttr(dst_unit)},
            result_types=[SSAValue.get(input).type],
        )

    def verify_(self) -> None:
        units = (self.src_unit.data, self.dst_unit.data)
        if set(units) != set(UNITS):
            raise VerifyException(
                f"'pto.transfer' goes from one unit to the other, not {units[0]!r} -> {units[1]!r}"
            )
        if self.input.type != self.result.type:
            raise VerifyException("'pto.transfer' result type must equal the input type")
        for produced_on in producing_units(self.input) - {self.src_unit.data}:
            raise VerifyException(
                f"'pto.transfer' from {self.src_unit.data!r} takes a tile computed on the "
                f"{produced_on!r} unit"
            )
        stage = _enclosing_stage(self)
        if stage is not None and stage.unit.data != self.dst_unit.data:
            raise VerifyException(
                f"'pto.transfer' to {self.dst_unit.data!r} sits in a {stage.unit.data!r} "
                "stage; a transfer belongs to the stage that receives the tile"
            )


def _enclosing_stage(op: Operation) -> StageOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, StageOp | KernelOp):
        parent = parent.parent_op()
    return parent if isinstance(parent, StageOp) else None


def producing_units(value: SSAValue) -> frozenset[str]:
    """The units (`vector` / `cube`) that may compute `value`: the unit of the stage that
    yields it or holds its defining op, the target unit of a `pto.transfer`, and for the
    result of an op with regions (`scf.if`) the units of what its branches yield. Empty
    for values no stage computes (kernel and loop arguments, scalars made between
    stages)."""
    owner = value.owner
    if isinstance(owner, TransferOp):
        return frozenset({owner.dst_unit.data})
    if isinstance(owner, StageOp):
        return frozenset({owner.unit.data})
    if not isinstance(owner, Operation):
        return frozenset()
    stage = _enclosing_stage(owner)
    if stage is not None:
        return frozenset({stage.unit.data})
    units: set[str] = set()
    index = value.index  # type: ignore[attr-defined]
    for region in owner.regions:
        for block in region.blocks:
            term = block.last_op
            if term is not None and term.has_trait(IsTerminator) and index < len(term.operands):
                units |= producing_units(term.operands[index])
    return frozenset(units)


def producing_unit(value: SSAValue) -> str | None:
    """The one unit that computes `value`, or None (see `producing_units`)."""
    units = producing_units(value)
    return next(iter(units)) if len(units) == 1 else None


def _verify_no_unit_crossing(stage: StageOp) -> None:
    """A tile computed on the other unit must enter a stage through `pto.transfer`: the
    Vector and Cube cores share no registers, only buffers."""
    unit = stage.unit.data
    for op in stage.body.walk():
        if isinstance(op, TransferOp):
            continue
        for operand in op.operands:
            if not isinstance(operand.type, TensorType):
                continue
            owner = operand.owner
            owner_op = owner if isinstance(owner, Operation) else owner.parent_op()
            if owner_op is not None and stage.is_ancestor(owner_op):
                continue
            for produced_on in producing_units(operand) - {unit}:
                raise VerifyException(
                    f"'{op.name}' in a {unit} stage uses a tile computed on the "
                    f"{produced_on} unit; pass it through `pto.transfer %v from "
                    f'"{produced_on}" to "{unit}"` (vc-split inserts these)'
                )


MAX_STITCH_FUNCTIONS = 1024
"""PyPTO's upper limit of `runtime_options.stitch_function_max_num`."""


@irdl_op_definition
class StitchOp(IRDLOperation):
    """A stitch group made by the `stitch` pass: the ops of `size` consecutive loop
    iterations ("root functions" in PyPTO), at most `max_functions`, which PyPTO's
    scheduler submits together so that Vector and Cube work of different iterations
    overlaps. Semantically its body runs inline; values used after the group leave it
    as results (through `pto.yield`)."""

    name = "pto.stitch"
    size = prop_def(IntegerAttr[I64])
    max_functions = prop_def(IntegerAttr[I64])
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
    assembly_format = (
        "`size` $size `max` $max_functions attr-dict-with-keyword $body (`->` type($outputs)^)?"
    )

    def __init__(self, size: int, max_functions: int, body: Region | Block, result_types=()):
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            properties={
                "size": IntegerAttr(size, i64),
                "max_functions": IntegerAttr(max_functions, i64),
            },
            regions=[body],
            result_types=[list(result_types)],
        )

    def verify_(self) -> None:
        size, most = self.size.value.data, self.max_functions.value.data
        if not 1 <= most <= MAX_STITCH_FUNCTIONS:
            raise VerifyException(
                f"'pto.stitch' max_functions {most} must be in 1..{MAX_STITCH_FUNCTIONS} "
                "(PyPTO's stitch_function_max_num range)"
            )
        if not 1 <= size <= most:
            raise VerifyException(f"'pto.stitch' size {size} must be in 1..max_functions ({most})")
        term = self.body.block.last_op
        if isinstance(term, YieldOp):
            if [a.type for a in term.arguments] != [r.type for r in self.outputs]:
                raise VerifyException(
                    "'pto.stitch' yields values whose types differ from its results"
                )


PTO = Dialect(
    "pto",
    [
        KernelOp,
        YieldOp,
        TensorOp,
        ViewOp,
        AssembleOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        UnsqueezeOp,
        ExpandCloneOp,
        CastOp,
        NegOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        TanhOp,
        ErfOp,
        SigmoidOp,
        AbsOp,
        ReciprocalOp,
        ReluOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaximumOp,
        MinimumOp,
        PowOp,
        EqOp,
        NeOp,
        LtOp,
        LeOp,
        GtOp,
        GeOp,
        FullOp,
        WhereOp,
        SumOp,
        AmaxOp,
        AminOp,
        MatmulOp,
        GathermaskOp,
        GatherOp,
        IndexSelectOp,
        TopkOp,
        LoopOp,
        LoopUnrollOp,
        IsLoopBeginOp,
        IsLoopEndOp,
        SetVecTileShapesOp,
        SetCubeTileShapesOp,
        SetSemanticLabelOp,
        SetOptionsOp,
        StageOp,
        TransferOp,
        StitchOp,
    ],
)
