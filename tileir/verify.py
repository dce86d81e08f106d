"""Op-by-op verification that checks each distinct op signature's IRDL constraints once.

xDSL's `op.verify(verify_nested_ops=False)` runs, for an op defined with
`@irdl_op_definition`, three things in this order:

1. the generic `Operation` checks (no erased operand; successors and terminators in
   their place), which look at the op's neighbours;
2. the generated `verify_`, which is `op_def.verify(op)` followed by the op's own
   `verify_` (if it has one). `OpDef.verify` checks the IRDL constraints (operand and
   result types, variadic sizes, regions' block counts and entry argument types,
   the successor count, properties and attributes), then runs the op's traits;
3. a `VerifyException` from (2) is re-raised through `op.emit_error`.

The IRDL constraints of (2) see only the op's *signature*: its class, its operand
types, its result types, its properties and attributes, and for each region its block
count and its entry block's argument types, and its successor count. A constraint is
a function of attribute values, and two attributes that compare equal have the same
class and equal parameters, so two ops with equal signatures pass or fail the IRDL
constraints together (`OpVerifier` writes each attribute of a signature as a number
per distinct value, so that looking a signature up compares small tuples of ints).
`OpVerifier` remembers the signatures that passed; for an op whose signature already
passed it runs everything else xDSL runs, in xDSL's order: the generic checks (a copy
of xDSL 0.75's, tests/dialect/test_fast_verify.py compares them), the traits (except
those that keep `OpTrait.verify`, which does nothing), the op's own `verify_`, with
(3)'s re-raise. The traits and the op's own verifier may look at the op's context
(parents, defining ops, symbol tables), so they run again for every op, unless they
are declared `signature_only` (below). An op whose signature is
new, or that cannot be split this way, is verified by xDSL's own `op.verify`, so its
first error is xDSL's, word for word.

A verifier that reads only the signature (an op's own `verify_` that looks at its
operand and result types and its properties, never at an operand's defining op, the
op's parent, uses or regions' contents; or a trait's `verify` that does the same)
passes or fails with the IRDL constraints, so it need not run again for a signature
that passed. Such a verifier is declared, function by function, with the
`@signature_only` decorator: the declaration is on the function itself, so a subclass
that overrides `verify_` does not inherit it (it declares its own, or runs for every
op). tests/dialect/test_signature_only.py runs every declared verifier on the ops of the
seed kernels and the FileCheck tests through a spy that fails on any read outside the
signature.

An op's own `verify_` that reads, besides the signature, only a function of each
operand (`pto.view`'s and `pto.assemble`'s read which index operands are
`arith.constant`s and their values, through `constant_index`) is declared with
`@signature_and_operands(constant_index)`: it is a function of the signature and of
those views, so `OpVerifier` runs it again only for a signature and list of views that
has not passed yet (the same test lets the spy's reads through only inside a view).

Nothing is patched: the parts of the generated `verify_` are read from its closure
(`irdl_parts`), and an op whose `verify_` does not have the expected shape (a future
xDSL, a hand-written `verify_`, an unregistered op) simply takes the plain path.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from xdsl.ir import Attribute, ErasedSSAValue, Operation, Region, SSAValue
from xdsl.irdl.operations import OpDef, get_accessors_from_op_def
from xdsl.traits import IsTerminator, NoTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

_GENERATED_VERIFY = frozenset(
    c
    for c in get_accessors_from_op_def.__code__.co_consts
    if getattr(c, "co_name", None) == "verify_" and c.co_names == ("verify",)
)
"""The code objects of the two `verify_` functions that `irdl_op_definition` generates
(with and without an op-specific verifier). Their bodies call only `op_def.verify`
and `custom_verify` (`co_names` is just `verify`)."""


_SIGNATURE_ONLY = "__tileir_signature_only__"

_F = TypeVar("_F", bound=Callable[..., None])


def signature_only(fn: _F) -> _F:
    """Declare that `fn`, an op's `verify_` or an `OpTrait`'s `verify`, reads nothing
    but the op's signature (see the module docstring), so that `OpVerifier` runs it
    once per signature that passes. A wrong declaration hides errors: declare it only
    on a verifier whose every read (its helpers' too) is of the op's class, operand and
    result types, properties and attributes, or counts of operands, results, regions
    and successors."""
    setattr(fn, _SIGNATURE_ONLY, True)
    return fn


def is_signature_only(fn: object) -> bool:
    """Whether `fn` (a function, or a bound method of one) was declared `signature_only`."""
    return getattr(getattr(fn, "__func__", fn), _SIGNATURE_ONLY, False) is True


_OPERAND_VIEWS = "__tileir_operand_views__"


def signature_and_operands(
    *views: Callable[[SSAValue], Hashable],
) -> Callable[[_F], _F]:
    """Declare that `fn`, an op's `verify_`, reads nothing but the op's signature and,
    of its operands, only what the functions `views` return for them (`constant_index`:
    which operands are `arith.constant` index values, and their values), so that
    `OpVerifier` runs it once per signature and list of views (`views(op)`) that pass.
    The same warning as `signature_only`'s holds: every read of `fn` and its helpers
    outside the signature must go through a call of one of `views` on an operand."""

    def declare(fn: _F) -> _F:
        setattr(fn, _OPERAND_VIEWS, views)
        return fn

    return declare


def operand_views(fn: object) -> tuple[Callable[[SSAValue], Hashable], ...] | None:
    """The `views` `fn` (a function, or a bound method of one) was declared with by
    `signature_and_operands`, or None."""
    views = getattr(getattr(fn, "__func__", fn), _OPERAND_VIEWS, None)
    return views if isinstance(views, tuple) else None


def ops_in(region: Region, out: list[Operation] | None = None) -> list[Operation]:
    """The ops of `region` in the order `region.walk()` yields them (each op before the
    ops of its regions), appended to `out`. Following the ops' links (the fields behind
    xDSL's `first_op` / `next_op` properties) is several times faster than xDSL's nested
    generators; the recursion is as deep as the regions nest."""
    if out is None:
        out = []
    append = out.append
    block = region._first_block  # pyright: ignore[reportPrivateUsage]
    while block is not None:
        op = block._first_op  # pyright: ignore[reportPrivateUsage]
        while op is not None:
            append(op)
            if op.regions:
                for inner in op.regions:
                    ops_in(inner, out)
            op = op._next_op  # pyright: ignore[reportPrivateUsage]
        block = block._next_block  # pyright: ignore[reportPrivateUsage]
    return out


@dataclass(frozen=True)
class IRDLParts:
    """What an op class's generated `verify_` does: `op_def.verify(op)`, then
    `custom(op)` (the class's own `verify_`, or None)."""

    op_def: OpDef
    custom: Callable[[Operation], None] | None


def irdl_parts(cls: type[Operation]) -> IRDLParts | None:
    """The parts of `cls.verify_` when it is the closure `irdl_op_definition` makes
    (`op_def.verify(self)` then `custom_verify(self)`, in xDSL's
    `get_accessors_from_op_def`); None when it is anything else, or when `cls`
    overrides `Operation.verify`."""
    fn = cls.verify_
    code = getattr(fn, "__code__", None)
    if cls.verify is not Operation.verify or code not in _GENERATED_VERIFY:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    op_def = cells.get("op_def")
    custom = cells.get("custom_verify")
    if type(op_def) is not OpDef or not (custom is None or callable(custom)):
        return None
    if getattr(custom, "__code__", None) in _GENERATED_VERIFY:
        return None  # a generated verifier of another definition: keep xDSL's path
    return IRDLParts(op_def, custom)


@dataclass(frozen=True)
class _ClassInfo:
    """What `OpVerifier` looks up once per op class."""

    parts: IRDLParts | None
    traits: tuple[OpTrait, ...]
    """The traits to run again for an op whose signature passed, in the order
    `OpDef.verify` runs them: those whose `verify` does something (not
    `OpTrait.verify`) and may read more than the signature (not `signature_only`)."""
    custom: Callable[[Operation], None] | None
    """The op's own `verify_` to run again for such an op (None: it has none, or it is
    `signature_only`)."""
    views: tuple[Callable[[SSAValue], Hashable], ...] | None
    """The operand views `custom` was declared with (`signature_and_operands`): it runs
    again only for a new list of views. None: it runs for every op."""
    terminator: bool
    no_terminator: bool


def _class_info(cls: type[Operation]) -> _ClassInfo:
    parts = irdl_parts(cls)
    traits = () if parts is None else tuple(parts.op_def.traits)
    custom = None if parts is None else parts.custom
    return _ClassInfo(
        parts,
        tuple(
            t
            for t in traits
            if type(t).verify is not OpTrait.verify and not is_signature_only(type(t).verify)
        ),
        None if is_signature_only(custom) else custom,
        operand_views(custom),
        cls.has_trait(IsTerminator),
        cls.has_trait(NoTerminator),
    )


class OpVerifier:
    """`verify(op)` does what `op.verify(verify_nested_ops=False)` does, raising the
    same first error; the IRDL constraints of a signature are checked once per
    `OpVerifier`. Use one per verification of a module (it holds the signatures)."""

    def __init__(self) -> None:
        self._passed: set[tuple[object, ...]] = set()
        self._viewed: set[tuple[object, ...]] = set()
        """(signature, operand views) pairs whose `signature_and_operands` verifier
        passed."""
        self._info: dict[type[Operation], _ClassInfo] = {}
        self._unerased: set[type[SSAValue]] = set()
        """Classes of operands met that are not `ErasedSSAValue`s (an `isinstance` of
        an abstract class goes through Python code; a set lookup does not)."""
        self._codes: dict[Attribute, int] = {}
        self._ids: dict[int, int] = {}
        """`_code` by the `id` of an attribute object met before."""
        self._alive: list[Attribute] = []

    def _code(self, attr: Attribute) -> int:
        """A number per attribute value: two attributes with the same number compare
        equal (a dict found them equal). An attribute object met before is found by its
        identity (an operand's type is the object its defining op's result has),
        without hashing its parameters again; `_alive` keeps each such object alive, so
        its `id` is not reused while this verifier lives."""
        code = self._ids.get(id(attr))
        return self._new_code(attr) if code is None else code

    def _new_code(self, attr: Attribute) -> int:
        """`_code` of an attribute object not met before."""
        code = self._codes.setdefault(attr, len(self._codes))
        self._ids[id(attr)] = code
        self._alive.append(attr)
        return code

    def _signature(self, op: Operation) -> tuple[object, ...]:
        """Everything `OpDef.verify`'s IRDL constraints read (see the module
        docstring), each attribute as its `_code`, flat: every list is preceded by its
        length, so that two signatures are equal exactly when all their parts are."""
        new, get = self._new_code, self._ids.get
        operands, results = op._operands, op.results  # pyright: ignore[reportPrivateUsage]
        key: list[object] = [type(op), len(operands)]
        add = key.append
        # `_code`'s first step is inline for the common case: an object met before.
        # (`_type` is the field behind `SSAValue.type`, which no value class overrides.)
        for value in operands:
            c = get(id(t := value._type))  # pyright: ignore[reportPrivateUsage]
            add(new(t) if c is None else c)
        add(len(results))
        for value in results:
            c = get(id(t := value._type))  # pyright: ignore[reportPrivateUsage]
            add(new(t) if c is None else c)
        attrs = op.properties
        add(len(attrs))
        if attrs:
            key += attrs  # the names, then the values' codes
            for attr in attrs.values():
                c = get(id(attr))
                add(new(attr) if c is None else c)
        attrs = op.attributes
        add(len(attrs))
        if attrs:
            key += attrs
            for attr in attrs.values():
                c = get(id(attr))
                add(new(attr) if c is None else c)
        regions = op.regions
        add(len(regions))
        for region in regions:
            block = region.first_block
            if block is None:
                add(-1)  # no blocks (xDSL checks no entry arguments)
            else:
                add(1 if block is region.last_block else len(region.blocks))
                add(len(block.args))
                key.extend(map(self._code, block.arg_types))
        add(len(op._successors))  # pyright: ignore[reportPrivateUsage]
        return tuple(key)

    def _class(self, cls: type[Operation]) -> _ClassInfo:
        info = self._info.get(cls)
        if info is None:
            info = self._info[cls] = _class_info(cls)
        return info

    def verify(self, op: Operation) -> None:
        info = self._info.get(type(op)) or self._class(type(op))
        if info.parts is None:
            op.verify(verify_nested_ops=False)
            return
        try:
            key = self._signature(op)
            known = key in self._passed
        except TypeError:  # an attribute that cannot be hashed
            op.verify(verify_nested_ops=False)
            return
        views = info.views
        if not known:
            op.verify(verify_nested_ops=False)
            self._passed.add(key)
            if views is not None:
                self._viewed.add((key, *_view(views, op)))
            return
        self._generic_checks(op, info)
        custom = info.custom
        viewed = None
        if views is not None:
            viewed = (key, *_view(views, op))
            if viewed in self._viewed:
                custom = None
        if not info.traits and custom is None:
            return
        try:
            for trait in info.traits:
                trait.verify(op)
            if custom is not None:
                custom(op)
        except VerifyException as err:
            op.emit_error(f"Operation does not verify: {err}", err)
        if viewed is not None:
            self._viewed.add(viewed)

    def _generic_checks(self, op: Operation, info: _ClassInfo) -> None:
        """`Operation.verify`'s checks before `verify_` (xDSL 0.75, verbatim in effect),
        with the class traits looked up once per class."""
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        if not self._unerased.issuperset(map(type, operands)):
            for operand in operands:
                if isinstance(operand, ErasedSSAValue):
                    raise ValueError("Erased SSA value is used by the operation")
                self._unerased.add(type(operand))
        parent_block = op.parent
        parent_region = None if parent_block is None else parent_block.parent
        successors = op._successors  # pyright: ignore[reportPrivateUsage]
        if successors:
            if parent_block is None or parent_region is None:
                raise VerifyException(
                    f"Operation {op.name} with block successors does not belong to a "
                    "block or a region"
                )
            if parent_block.last_op is not op:
                raise VerifyException(
                    f"Operation {op.name} with block successors must terminate its parent block"
                )
            for succ in successors:
                if succ.parent != parent_block.parent:
                    raise VerifyException(
                        f"Operation {op.name} is branching to a block of a different region"
                    )
        # (`_last_op`, `_first_block`, `_last_block`: the fields behind the properties.)
        if parent_region is not None and parent_block._last_op is op:  # pyright: ignore
            if parent_region._first_block is parent_region._last_block:  # pyright: ignore
                parent_op = parent_region.parent  # one block
                if parent_op is not None and not self._class(type(parent_op)).no_terminator:
                    if not info.terminator:
                        raise VerifyException(
                            f"Operation {op.name} terminates block in "
                            "single-block region but is not a terminator"
                        )
            elif not info.terminator:  # more than one block
                raise VerifyException(
                    f"Operation {op.name} terminates block in multi-block "
                    "region but is not a terminator"
                )


def _view(views: tuple[Callable[[SSAValue], Hashable], ...], op: Operation) -> list[Hashable]:
    """What `views` return for the operands of `op`, view by view."""
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    return [view(v) for view in views for v in operands]
