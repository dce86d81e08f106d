"""Loading and printing `pto` modules (the entry points of the scripting API), and the
IR helpers the passes build with: ops made without IRDL's argument processing
(`new_op`), ops listed, linked, moved and cloned following the blocks' links.
(`tileir.stamping.CopyTemplate` copies a run of ops many times.)"""

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
from tileir.verify import ops_in

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


def walk_list(op: Operation) -> list[Operation]:
    """`list(op.walk())`: `op`, then the ops of its regions as `tileir.verify.ops_in`
    lists them (following the links; xDSL's walk is a generator per region, block and
    op)."""
    out = [op]
    for region in op.regions:
        ops_in(region, out)
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
