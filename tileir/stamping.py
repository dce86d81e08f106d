"""`CopyTemplate`: a run of ops read once and copied many times (`loop-unroll` copies a
loop body once per iteration of a chunk), each copy made field by field as xDSL's own
constructors make it, without them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    OpResult,
    Region,
    SSAValue,
    SSAValues,
    Use,
)

from tileir.ir import (
    _NO_RESULTS,
    _clonable_in_one_pass,
    _clone_one_pass,
    _defaults,
    _valid_name,
    block_ops,
)

_NEW_OBJECT = object.__new__


_TEMPLATE_DEFAULTS: dict[type[Operation], tuple[tuple[tuple[str, Attribute], ...], ...] | None] = {}


def _template_defaults(
    cls: type[Operation],
) -> tuple[tuple[tuple[str, Attribute], ...], ...] | None:
    """`_defaults(cls)` for a class whose ops `CopyTemplate` makes itself; None when
    the class needs `create` (its own `__post_init__`) or has its own `__new__`."""
    known = _TEMPLATE_DEFAULTS.get(cls, False)
    if known is False:
        known = _TEMPLATE_DEFAULTS[cls] = _defaults(cls) if cls.__new__ is _NEW_OBJECT else None
    return known  # type: ignore[return-value]


def _filled(
    values: dict[str, Attribute], defaults: tuple[tuple[str, Attribute], ...]
) -> dict[str, Attribute]:
    """`values` with the missing `defaults` filled in (a copy if any is missing)."""
    missing = [(name, value) for name, value in defaults if name not in values]
    return {**values, **dict(missing)} if missing else values


class CopyTemplate:
    """A run of ops (consecutive ops of one block, in order) read once, to be copied
    many times: `stamp(values)` makes the copies `clone_ops(ops, mapping)` makes, with
    `mapping` from `inputs` to `values`, and appends them to a block. The run is read
    into one record per op (class, operand slots, result types and names, properties
    and attributes with the IRDL defaults `new_op` would fill in, location, and for an
    op with regions the records of its regions' block arguments and ops), so that a
    copy costs only the making of its objects: no renaming dict, no walk of the
    original ops, no per-op look-up of the class's defaults. (`loop-unroll` copies a
    loop body once per iteration of a chunk; after `vc-split` most of a body is in
    `pto.stage` ops.)

    The run must not change between `CopyTemplate(...)` and the last `stamp`. An op
    with successors, or with a region of other than one block (itself or an op inside
    it), is copied as `clone_ops` copies it (xDSL's `clone`), and so is an op of a
    class `new_op` leaves to `create` (with `_clone_one_pass`)."""

    def __init__(self, ops: Sequence[Operation], inputs: Sequence[SSAValue]) -> None:
        # A copy's values by slot: the inputs' replacements first, then, in the order
        # the run meets them, the values from outside it (the same in every copy) and
        # the values the copy defines (results, and block arguments of its regions).
        # `base` holds a copy's slots before its ops are made.
        slot: dict[int, int] = {id(v): n for n, v in enumerate(inputs)}
        base: list[SSAValue | None] = [None] * len(inputs)

        def outside(value: SSAValue) -> int:
            n = slot[id(value)] = len(base)
            base.append(value)
            return n

        get = slot.get
        known = _TEMPLATE_DEFAULTS.get

        def read(ops: Iterable[Operation], top: bool) -> list[tuple[object, ...]]:
            records: list[tuple[object, ...]] = []
            for op in ops:
                cls = type(op)
                defaults = known(cls, False)
                if defaults is False:
                    defaults = _template_defaults(cls)
                regions = op.regions
                if (
                    defaults is None
                    or op._successor_uses
                    or (regions and top and not _clonable_in_one_pass(op))
                ):
                    # (the values used inside: those from outside the op, by slot)
                    used: dict[int, tuple[SSAValue, int]] = {}
                    for inner in op.walk() if regions else (op,):
                        for v in inner._operands:
                            n = get(id(v))
                            if n is None and not _inside(v, op):
                                n = outside(v)
                            if n is not None:
                                used[id(v)] = (v, n)
                    records.append(
                        (None, op, list(used.values()), len(base), None, None, None, None, ())
                    )
                    for r in op.results:
                        slot[id(r)] = len(base)
                        base.append(None)
                    continue
                codes: list[int] = []
                for v in op._operands:
                    n = get(id(v))
                    codes.append(outside(v) if n is None else n)
                # (copied by `stamp`; here only when a default is to be filled in)
                props, attrs = op.properties, op.attributes
                for name, _ in defaults[0]:
                    if name not in props:
                        props = _filled(props, defaults[0])
                        break
                for name, _ in defaults[1]:
                    if name not in attrs:
                        attrs = _filled(attrs, defaults[1])
                        break
                at = len(base)
                results: tuple[tuple[Attribute, str | None], ...] = ()
                single = None
                for r in op.results:
                    slot[id(r)] = len(base)
                    base.append(None)
                    name = r._name
                    single = (r._type, None if name is None else _valid_name(name))
                    results += (single,)
                if len(results) != 1:
                    single = None
                # per region (one block each: checked above, for the whole op):
                # its block's arguments (type, name, location, slot) and ops
                inner_records: tuple[tuple[object, ...], ...] = ()
                for region in regions:
                    block = region._first_block
                    assert block is not None
                    args: list[tuple[object, ...]] = []
                    for arg in block._args:
                        name = arg._name
                        slot[id(arg)] = len(base)
                        args.append(
                            (
                                arg._type,
                                None if name is None else _valid_name(name),
                                arg.location,
                                len(base),
                            )
                        )
                        base.append(None)
                    inner_records += ((tuple(args), read(block_ops(block), False)),)
                records.append(
                    (
                        cls,
                        tuple(codes),
                        single,
                        results,
                        at,
                        op.location,
                        props,
                        attrs,
                        inner_records,
                    )
                )
            return records

        self.n_inputs = len(inputs)
        self.records = read(ops, True)
        self.base = base

    def stamp(self, values: Sequence[SSAValue], block: Block) -> list[Operation]:
        """One copy, the inputs replaced by `values`, appended to `block` (which none of
        the copies holds: they are new); returns the copies' top-level ops.

        Each op, its uses and its results, and the regions, blocks and block arguments
        of an op with regions, are made with `object.__new__` and given the fields xDSL
        0.75's `Operation.create`, `Use(...)`, `OpResult(...)`, `Region()`, `Block()`,
        `insert_arg` and `add_block` give them (a test compares every field, and the
        order of every use list, with `clone_ops`), and each op is linked after the
        previous one as it is made: the dataclass `__init__`s, the lists of per-op
        temporaries and a second walk to link the ops cost about as much as the fields
        themselves."""
        n_inputs = self.n_inputs
        if len(values) != n_inputs:
            raise ValueError("CopyTemplate.stamp: one value per input")
        vals = self.base.copy()
        vals[:n_inputs] = values
        return _stamp(self.records, vals, block)  # type: ignore[arg-type]

    @staticmethod
    def _copy_whole(
        op: Operation, used: list[tuple[SSAValue, int]], vals: list[SSAValue]
    ) -> Operation:
        """A copy of an op with successors or regions of other than one block, or of
        a class `new_op` leaves to `create`, as `clone_ops` makes it."""
        if not (op.regions or op._successor_uses) or _clonable_in_one_pass(op):
            return _clone_one_pass(op, {id(v): vals[c] for v, c in used})
        return op.clone({v: vals[c] for v, c in used})


def _stamp(
    records: list[tuple[object, ...]], vals: list[SSAValue], block: Block
) -> list[Operation]:
    """The ops of `records` (`CopyTemplate`'s), made with the values `vals` (by slot;
    the slots of the values they define are filled in) and appended to `block`, in
    the order `_clone_one_pass` makes them: an op, then its regions' ops."""
    new = _NEW_OBJECT
    made: list[Operation] = []
    add = made.append
    prev = block._last_op
    for record in records:
        cls = record[0]
        if cls is None:
            _, whole, used, at, _, _, _, _, _ = record
            op = CopyTemplate._copy_whole(whole, used, vals)  # type: ignore[arg-type]
            for result in op.results:
                vals[at] = result  # type: ignore[index]
                at += 1  # type: ignore[operator]
            op.parent = block
            op._prev_op = prev
            op._next_op = None
        else:
            _, codes, single, results, at, location, props, attrs, regions = record
            op = new(cls)  # type: ignore[arg-type]
            if codes:
                operands: list[SSAValue] = []
                uses: list[Use] = []
                index = 0
                for code in codes:  # type: ignore[union-attr]
                    value = vals[code]  # type: ignore[index]
                    operands.append(value)
                    # `Use(op, index, None, first)`, each use first in its value's list
                    use = new(Use)
                    use._operation = op
                    use._index = index
                    use._prev_use = None
                    use._next_use = first = value.first_use
                    if first is not None:
                        first._prev_use = use
                    value.first_use = use
                    uses.append(use)
                    index += 1
                op._operands = SSAValues(operands)
                op._operand_uses = tuple(uses)
            else:
                op._operands = _NO_RESULTS
                op._operand_uses = ()
            if single is not None:
                # `OpResult(t, op, 0)`
                result = new(OpResult)
                result._type, name = single  # type: ignore[misc]
                result.op = op
                result.index = 0
                if name is not None:
                    result._name = name
                vals[at] = result  # type: ignore[index]
                op.results = SSAValues((result,))
            elif results:
                made_results: list[OpResult] = []
                index = 0
                for t, name in results:  # type: ignore[union-attr]
                    result = new(OpResult)
                    result._type = t
                    result.op = op
                    result.index = index
                    if name is not None:
                        result._name = name
                    made_results.append(result)
                    vals[at] = result  # type: ignore[index]
                    at += 1  # type: ignore[operator]
                    index += 1
                op.results = SSAValues(made_results)
            else:
                op.results = _NO_RESULTS
            op.properties = props.copy()  # type: ignore[union-attr]
            op.attributes = attrs.copy()  # type: ignore[union-attr]
            op.location = location
            op._successors = ()
            op._successor_uses = ()
            op.regions = _stamp_regions(op, regions, vals) if regions else ()  # type: ignore[arg-type]
            op.parent = block
            op._prev_op = prev
            op._next_op = None
        if prev is None:
            block._first_op = op
        else:
            prev._next_op = op
        prev = op
        add(op)
    if made:
        block._last_op = prev
    return made


def _stamp_regions(
    op: Operation, regions: tuple[tuple[object, ...], ...], vals: list[SSAValue]
) -> tuple[Region, ...]:
    """`op`'s regions made from their records (`CopyTemplate`'s): each `Region()` added
    to `op`, its `Block()` with the arguments `insert_arg` makes and named as
    `_clone_one_pass` names them, the block's ops, then `add_block`."""
    new = _NEW_OBJECT
    made: list[Region] = []
    for args, records in regions:
        region = new(Region)
        region.parent = op
        block = new(Block)
        made_args: list[BlockArgument] = []
        index = 0
        for t, name, location, at in args:  # type: ignore[union-attr]
            # `BlockArgument(t, block, index, location)`, then `name_hint = name`
            arg = new(BlockArgument)
            arg._type = t
            arg.block = block
            arg.index = index
            arg.location = location
            arg._name = name
            vals[at] = arg
            made_args.append(arg)
            index += 1
        block._args = tuple(made_args)
        block._first_op = None
        block._last_op = None
        _stamp(records, vals, block)  # type: ignore[arg-type]
        block.parent = region
        region._first_block = block
        region._last_block = block
        made.append(region)
    return tuple(made)


def _inside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined inside `op` (by an op or a block it holds)."""
    holder = value.owner.parent_op()
    while holder is not None:
        if holder is op:
            return True
        holder = holder.parent_op()
    return False
