"""Stages and stitch groups: `pto.stage` (a run of ops on one unit, Vector or Cube),
`pto.transfer` (a tile handed from one unit to the other), the check that no tile
crosses units without one, and `pto.stitch` (the groups the `stitch` pass makes).
The kernel, yield and loop ops they sit in are in `tileir.dialect.ops.structure`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Operation,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.traits import (
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tileir.dialect.ops.base import (
    TileResults,
    _i64_array,
    verify_tile_shape,
)
from tileir.dialect.ops.structure import KernelOp, YieldOp, _SingleBlockImplicitTerminator
from tileir.verify import ops_in


class StageUnit(StrEnum):
    """The unit of the AI core a stage runs on."""

    VECTOR = "vector"
    CUBE = "cube"


@irdl_attr_definition
class StageUnitAttr(EnumAttribute[StageUnit], SpacedOpaqueSyntaxAttribute):
    """A unit: `vector` in the custom form, `#pto<unit vector>` in the generic one."""

    name = "pto.unit"


UNITS = tuple(u.value for u in StageUnit)


@irdl_op_definition
class StageOp(IRDLOperation):
    """A run of ops on one unit (Vector or Cube), made by `vc-split`.

    Values computed inside and used after the stage leave it as results (through the
    `pto.yield` terminator); values used inside come from above. `tile_shape` is the
    vector tile shape; `cube_tile` holds m, k, n pairs (6 values).
    """

    name = "pto.stage"
    unit = prop_def(StageUnitAttr)
    label = opt_prop_def(StringAttr)
    tile_shape = opt_prop_def(DenseArrayBase.constr(i64))
    cube_tile = opt_prop_def(DenseArrayBase.constr(i64))
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(_SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
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
                "unit": StageUnitAttr(StageUnit(unit)),
                "label": StringAttr(label) if label else None,
                "tile_shape": _i64_array(tile_shape) if tile_shape else None,
                "cube_tile": _i64_array(cube_tile) if cube_tile else None,
            },
            regions=[body],
            result_types=[list(result_types)],
        )

    def verify_(self) -> None:
        # Read straight from the op's fields (xDSL's accessors decode the defs on each
        # access): the IRDL constraints, checked before, fixed what they hold.
        props = self.properties
        tile_shape, cube_tile = props.get("tile_shape"), props.get("cube_tile")
        if tile_shape is not None:
            verify_tile_shape(self, tile_shape.get_values(), "tile_shape")
        if cube_tile is not None and len(cube_tile.get_values()) != 6:
            raise VerifyException("'pto.stage' cube tile must hold 6 values: m, k, n pairs")
        term = self.regions[0].block.last_op
        if isinstance(term, YieldOp):
            # `arguments` and `outputs` are the only operand and result defs.
            types = [a.type for a in term._operands]  # pyright: ignore[reportPrivateUsage]
            if types != [r.type for r in self.results]:
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
    src_unit = prop_def(StageUnitAttr, prop_name="from")
    dst_unit = prop_def(StageUnitAttr, prop_name="to")
    result = result_def(T)
    traits = traits_def(Pure(), TileResults())
    assembly_format = "$input `from` $from `to` $to attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, src_unit: str, dst_unit: str):
        super().__init__(
            operands=[input],
            properties={
                "from": StageUnitAttr(StageUnit(src_unit)),
                "to": StageUnitAttr(StageUnit(dst_unit)),
            },
            result_types=[SSAValue.get(input).type],
        )

    def verify_(self) -> None:
        # Read straight from the op's fields (xDSL's accessors decode the defs on each
        # access): the IRDL constraints, checked before, fixed what they hold.
        props = self.properties
        src, dst = units = (props["from"].data.value, props["to"].data.value)  # pyright: ignore
        if set(units) != set(UNITS):
            raise VerifyException(
                f"'pto.transfer' goes from one unit to the other, not {src!r} -> {dst!r}"
            )
        value = self._operands[0]  # pyright: ignore[reportPrivateUsage]
        in_type, out_type = value.type, self.results[0].type
        if in_type is not out_type and in_type != out_type:
            raise VerifyException("'pto.transfer' result type must equal the input type")
        for produced_on in producing_units(value) - {src}:
            raise VerifyException(
                f"'pto.transfer' from {src!r} takes a tile computed on the {produced_on!r} unit"
            )
        stage = _enclosing_stage(self)
        if stage is not None and stage.unit.data.value != dst:
            raise VerifyException(
                f"'pto.transfer' to {dst!r} sits in a {stage.unit.data.value!r} "
                "stage; a transfer belongs to the stage that receives the tile"
            )


def _enclosing_stage(op: Operation) -> StageOp | None:
    parent = _parent_op(op)
    while parent is not None and not isinstance(parent, StageOp | KernelOp):
        parent = _parent_op(parent)
    return parent if isinstance(parent, StageOp) else None


def _parent_op(op: Operation) -> Operation | None:
    """`op.parent_op()`, through the fields (no three calls a level)."""
    block = op.parent
    region = None if block is None else block.parent
    return None if region is None else region.parent


def producing_units(value: SSAValue) -> frozenset[str]:
    """The units (`vector` / `cube`) that may compute `value`: the unit of the stage that
    yields it or holds its defining op, the target unit of a `pto.transfer`, and for the
    result of an op with regions (`scf.if`) the units of what its branches yield. Empty
    for values no stage computes (kernel and loop arguments, scalars made between
    stages)."""
    owner = value.owner
    if isinstance(owner, TransferOp):
        return frozenset({owner.dst_unit.data.value})
    if isinstance(owner, StageOp):
        return frozenset({owner.unit.data.value})
    if not isinstance(owner, Operation):
        return frozenset()
    stage = _enclosing_stage(owner)
    if stage is not None:
        return frozenset({stage.unit.data.value})
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
    unit = stage.unit.data.value
    # Values made inside the stage before their use (all of them in SSA form) are
    # known without walking up from their owner; any other goes the long way. They
    # are kept by `id` (hashing an SSA value calls Python code); the ops hold them.
    made_inside: set[int] = set()
    for op in ops_in(stage.body):
        made_inside.update(map(id, op.results))
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        if made_inside.issuperset(map(id, operands)) or isinstance(op, TransferOp):
            continue
        for operand in operands:
            if id(operand) in made_inside or not isinstance(operand.type, TensorType):
                continue
            owner = operand.owner
            owner_op = owner if isinstance(owner, Operation) else owner.parent_op()
            if owner_op is not None and stage.is_ancestor(owner_op):
                continue
            for produced_on in producing_units(operand) - {unit}:
                raise VerifyException(
                    f"'{op.name}' in a {unit} stage uses a tile computed on the "
                    f"{produced_on} unit; pass it through `pto.transfer %v from "
                    f"{produced_on} to {unit}` (vc-split inserts these)"
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
    traits = traits_def(_SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
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
