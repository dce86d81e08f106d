"""Loading, printing and verifying `pto` modules: the entry points of the scripting API."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence, Set
from functools import cache
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf, tensor
from xdsl.dialects.builtin import LocationAttr, ModuleOp
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
from xdsl.irdl import IRDLOperation, OptionalDef
from xdsl.printer import Printer

from tileir.diagnostics import parse_located
from tileir.dialect.pto import PTO

OperationT = TypeVar("OperationT", bound=Operation)


def make_context() -> Context:
    """A context that knows `pto` and the upstream dialects `pto` IR uses."""
    ctx = Context()
    for dialect in (
        builtin.Builtin,
        arith.Arith,
        func.Func,
        memref.MemRef,
        scf.Scf,
        tensor.Tensor,
        PTO,
    ):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse `.mlir` text (custom or generic form) and verify it; errors are located
    `TileirError`s."""
    return parse_located(ctx or make_context(), text, name)


def print_module(module: ModuleOp, generic: bool = False) -> str:
    """The module as text; `generic=True` gives the form real MLIR tools accept."""
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"


def _clonable_in_one_pass(op: Operation) -> bool:
    """Whether `clone_op` can copy `op`: no successors and only single-block regions,
    inside too (so every value is defined before its uses, in walk order)."""
    if op.successor_uses:
        return False
    stack = [op]
    while stack:  # (not `op.walk()`: its nested generators cost more than the test)
        for region in stack.pop().regions:
            if len(region.blocks) != 1:
                return False
            for inner in block_ops(region.block):
                if inner.successor_uses:
                    return False
                if inner.regions:
                    stack.append(inner)
    return True


_DEFAULTS: dict[type[Operation], tuple[tuple[tuple[str, Attribute], ...], ...] | None] = {}


def _defaults(cls: type[Operation]) -> tuple[tuple[tuple[str, Attribute], ...], ...] | None:
    """The (name, value) properties and attributes `IRDLOperation.__post_init__` fills
    in when they are absent; None when `cls` has a `__post_init__` of its own (`new_op`
    then defers to `create`)."""
    known = _DEFAULTS.get(cls, False)
    if known is not False:
        return known  # type: ignore[return-value]
    result: tuple[tuple[tuple[str, Attribute], ...], ...] | None = None
    if issubclass(cls, IRDLOperation) and cls.__post_init__ is IRDLOperation.__post_init__:
        definition = cls.get_irdl_definition()
        result = tuple(
            tuple(
                (name, d.default_value)
                for name, d in defs.items()
                if not isinstance(d, OptionalDef) and d.default_value is not None
            )
            for defs in (definition.properties, definition.attributes)
        )
    _DEFAULTS[cls] = result
    return result


_NO_RESULTS: SSAValues[OpResult] = SSAValues()
"""The results of an op that has none (an immutable tuple: ops share it, as they
share `Operation`'s own default)."""


def _set_operands(op: Operation, operands: Sequence[SSAValue]) -> None:
    """A fresh op's operands and their uses, each use first in its value's list (what
    `value.add_use` does, inlined: this runs once per op that passes build)."""
    op._operands = SSAValues(operands)
    uses: list[Use] = []
    for index, value in enumerate(operands):
        first = value.first_use
        use = Use(op, index, None, first)
        if first is not None:
            first._prev_use = use
        value.first_use = use
        uses.append(use)
    op._operand_uses = tuple(uses)


def new_op(
    cls: type[OperationT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: Mapping[str, Attribute],
    attributes: Mapping[str, Attribute],
    location: LocationAttr,
    regions: Sequence[Region] = (),
) -> OperationT:
    """`cls.create(...)` of an op without successors, built as xDSL 0.75's
    `Operation.__init__` builds it minus what costs more than the op itself: the operand
    and successor setters unlink a previous (empty) list first, and the IRDL
    `__post_init__` looks the op definition up and scans it for defaults on every op.
    About 2.5x cheaper than `create` (2.8 against 6.5 us an op), which counts where a
    pass makes an op per op of the module (`clone_ops`). It sets the fields `Operation`
    declares (a test compares every field with the op `create` makes)."""
    defaults = _defaults(cls)
    if defaults is None:
        return cls.create(
            operands=operands,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            location=location,
            regions=regions,
        )
    op = cls.__new__(cls)
    _set_operands(op, operands)
    op.results = (
        SSAValues([OpResult(t, op, index) for index, t in enumerate(result_types)])
        if result_types
        else _NO_RESULTS
    )
    op.properties = dict(properties)
    op.attributes = dict(attributes)
    op.location = location
    op._successors = ()
    op._successor_uses = ()
    op.regions = ()
    for region in regions:
        op.add_region(region)
    props, attrs = defaults
    for name, value in props:
        op.properties.setdefault(name, value)
    for name, value in attrs:
        op.attributes.setdefault(name, value)
    return op


@cache
def _valid_name(name: str) -> str:
    """What `value.name_hint = name` stores (the setter checks the name against a
    pattern and drops a `_<n>` suffix), worked out once per name."""
    return SSAValue.extract_valid_name(name)


def block_ops(block: Block) -> list[Operation]:
    """`list(block.ops)`, following the ops' links: xDSL's iterator is a Python
    `__next__` per op (and `list()` of it counts the ops first, a walk of its own)."""
    ops: list[Operation] = []
    op = block._first_op
    while op is not None:
        ops.append(op)
        op = op._next_op
    return ops


def walk_list(op: Operation, out: list[Operation] | None = None) -> list[Operation]:
    """`list(op.walk())`: `op` and every op inside it, in pre-order (program order),
    following the blocks' and ops' links (xDSL's walk is a generator per region, block
    and op; `stitch` lists the contents of every region op it moves). `out`: a list to
    append them to (returned)."""
    if out is None:
        out = []
    out.append(op)
    for region in op.regions:
        block = region._first_block
        while block is not None:
            child = block._first_op
            while child is not None:
                if child.regions:
                    walk_list(child, out)
                else:
                    out.append(child)
                child = child._next_op
            block = block._next_block
    return out


def _unlink(block: Block, first: Operation, last: Operation) -> None:
    """Take the ops `first` .. `last` (consecutive in `block`) out of `block`'s list;
    their own links to each other and to their old neighbours are left to the caller."""
    before, after = first._prev_op, last._next_op
    if before is None:
        block._first_op = after
    else:
        before._next_op = after
    if after is None:
        block._last_op = before
    else:
        after._prev_op = before


def move_run(run: Sequence[Operation], block: Block) -> None:
    """Move `run`, consecutive ops of one block in their order, to the end of `block`,
    which none of them holds (e.g. a new block): one unlink and one link of the run as
    a whole, where `detach` and `add_op` per op would relink every op twice and walk up
    from `block` for each one."""
    first, last = run[0], run[-1]
    source = first.parent
    if source is None:
        raise ValueError("move_run: the ops are in no block")
    for op, following in zip(run, run[1:]):
        if op._next_op is not following:
            raise ValueError("move_run: the ops are not consecutive ops of one block")
    _unlink(source, first, last)
    tail = block._last_op
    first._prev_op = tail
    if tail is None:
        block._first_op = first
    else:
        tail._next_op = first
    last._next_op = None
    block._last_op = last
    for op in run:
        op.parent = block


def detach_ops(ops: Iterable[Operation]) -> None:
    """`op.detach()` for each op of `ops` that is in a block (the unlinking of
    `Block.detach_op`, without its two calls per op)."""
    for op in ops:
        block = op.parent
        if block is None:
            continue
        _unlink(block, op, op)
        op._prev_op = op._next_op = None
        op.parent = None


def move_ops(ops: Iterable[Operation], block: Block) -> None:
    """`detach_ops(ops)` then `append_ops(block, ops)`, in one pass over the ops: each
    op is taken out of its block, if it is in one, and linked in at the end of
    `block`, which must be none of theirs and held by none of them (a new block)."""
    _link_in(block, ops, block._last_op, None, take=True)


def escaping_results(
    ops: Sequence[Operation], block: Block, members: Set[int] | None = None
) -> list[SSAValue]:
    """The results of `ops` (ops of `block`) that an op outside them uses; an op nested
    in one of them is inside (`members`: the ids of `ops`, when the caller has them).
    Uses are followed by their links and ops are told by id (xDSL's `uses` is a
    generator, `Use.operation` a property and `Operation.__hash__` Python code): the
    passes that wrap a run of ops into a region op ask this once per op they move."""
    if members is None:
        members = {id(op) for op in ops}
    escaping: list[SSAValue] = []
    for op in ops:
        for result in op.results:
            use = result.first_use
            while use is not None:
                user = use._operation
                if id(user) not in members:  # (else the common case: a member's use)
                    while user.parent is not block:
                        user = user.parent_op()
                        if user is None or id(user) in members:
                            break
                    if user is None or id(user) not in members:
                        escaping.append(result)
                        break
                use = use._next_use
    return escaping


def _link_in(
    block: Block,
    ops: Iterable[Operation],
    before: Operation | None,
    after: Operation | None,
    take: bool = False,
) -> None:
    """Link `ops`, in order, into `block` between the neighbours `before` and `after`
    (None at an end of the block). An op already in a block is refused, or with `take`
    first unlinked from it (from `block` itself: refused)."""
    last = before
    for op in ops:
        source = op.parent
        if source is not None:
            if not take:
                raise ValueError("Can't add to a block an operation already attached to a block.")
            if source is block:
                raise ValueError("move_ops: an op is in the block already")
            _unlink(source, op, op)
        op.parent = block
        op._prev_op = last
        if last is None:
            block._first_op = op
        else:
            last._next_op = op
        last = op
    if last is before:
        return
    assert last is not None
    last._next_op = after
    if after is None:
        block._last_op = last
    else:
        after._prev_op = last


def append_ops(block: Block, ops: Iterable[Operation]) -> None:
    """`block.add_ops(ops)` for ops that are in no block and that do not hold `block`
    (new ops, or ops just detached from elsewhere): the ops are linked in without
    `add_op`'s check, on every op, that it is not an ancestor of the block (a walk up
    from the block to the root). An op already in a block is still refused."""
    _link_in(block, ops, block._last_op, None)


def prepend_ops(block: Block, ops: Sequence[Operation]) -> None:
    """`block.insert_ops_before(ops, block.first_op)` (`add_ops` on an empty block) for
    ops that are in no block and do not hold `block`, linked as `append_ops` links them
    (all are checked before any is linked)."""
    if any(op.parent is not None for op in ops):
        raise ValueError("Can't add to a block an operation already attached to a block.")
    _link_in(block, ops, None, block._first_op)


def _clone_one_pass(op: Operation, mapping: dict[int, SSAValue]) -> Operation:
    regions = op.regions
    get = mapping.get
    new = new_op(
        type(op),
        [get(id(v), v) for v in op._operands],
        [r._type for r in op.results],
        op.properties,
        op.attributes,
        op.location,
        [Region() for _ in regions] if regions else (),
    )
    for old, result in zip(op.results, new.results):
        mapping[id(old)] = result
        name = old._name
        if name is not None:  # (the setter checks the name: skip the default)
            result._name = _valid_name(name)
    for region, new_region in zip(regions, new.regions):
        block = region.block
        new_block = Block()
        for index, arg in enumerate(block.args):
            new_arg = new_block.insert_arg(arg.type, index, arg.location)
            new_arg.name_hint = arg.name_hint
            mapping[id(arg)] = new_arg
        append_ops(new_block, [_clone_one_pass(inner, mapping) for inner in block_ops(block)])
        new_region.add_block(new_block)
    return new


def clone_ops(ops: Iterable[Operation], mapping: Mapping[SSAValue, SSAValue]) -> list[Operation]:
    """Copies of `ops` (consecutive ops of one block, in order) as `op.clone(mapping)`
    makes them one by one: uses of values from above renamed by `mapping`, uses of the
    results of earlier ops of `ops` by their copies' results. Each op is made once
    (`new_op`), where xDSL's clone makes every op and then sets every operand again in
    a second walk of both trees (for uses before definitions, which single-block
    regions do not have), and the renaming is keyed by the values' ids
    (`SSAValue.__hash__` is Python code); the values keyed are in the IR, so alive,
    while the copies are made. Ops with successors or multi-block regions go through
    xDSL's clone."""
    by_id: dict[int, SSAValue] = {id(old): new for old, new in mapping.items()}
    copies: list[Operation] = []
    for op in ops:
        if not (op.regions or op._successor_uses) or _clonable_in_one_pass(op):
            copies.append(_clone_one_pass(op, by_id))
            continue
        # The renamings `op` can use: those of the values its ops use.
        renaming = {
            v: by_id[id(v)] for inner in op.walk() for v in inner.operands if id(v) in by_id
        }
        copy = op.clone(renaming)
        for old, result in zip(op.results, copy.results):
            by_id[id(old)] = result
        copies.append(copy)
    return copies


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
