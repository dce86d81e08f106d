"""Integer `arith` ops that xDSL's `canonicalize` leaves alone, remembered by what
decides it.

The folder (`SignlessIntegerBinaryOperation.fold`) and the two canonicalization
patterns (`SignlessIntegerBinaryOperationConstantProp`, `...ZeroOrUnitRight`) of the
integer binary ops of xDSL 0.75's `arith` read of an op only its class (`py_operation`,
`is_right_unit`, `is_right_zero`, `Commutative`) and, for each operand, whether it is a
constant and which: `ConstantLike.get_constant_value` (the attribute a constant-like
defining op folds to) and `const_evaluate_operand(_attribute)` (the value of an
`arith.constant`). The result type is read only when both operands are constants. So
when the left operand is no constant, whether they do anything is a function of the
class and of the right operand's constant (or of its being none): `QuietBinaries`
remembers the classes and constants for which the real folder and patterns did nothing,
and the canonicalize walker then skips the ops that have them. Every other case (a
constant on the left, a constant-like op other than `arith.constant` on the right, a
class with another folder or other patterns) runs xDSL's code as before.

On a kernel whose loop bodies compute `%off = arith.muli %i, %c8` per block, the
folder and patterns cost ~70 us per op and visit (they build an `IntegerAttr(1)` and
check it, per op); unrolled, that was a third of `canonicalize`."""

from __future__ import annotations

from collections.abc import Hashable

from xdsl.dialects import arith
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, HasFolder
from xdsl.transforms.canonicalization_patterns.arith import (
    SignlessIntegerBinaryOperationConstantProp,
    SignlessIntegerBinaryOperationZeroOrUnitRight,
)

_GENERIC_PATTERNS = frozenset(
    {SignlessIntegerBinaryOperationConstantProp, SignlessIntegerBinaryOperationZeroOrUnitRight}
)
_GENERIC_FOLD = arith.SignlessIntegerBinaryOperation.fold


def generic_binary(cls: type[Operation]) -> bool:
    """Whether the ops of `cls` are folded and canonicalized only by the generic integer
    binary folder and patterns the module docstring describes."""
    if not issubclass(cls, arith.SignlessIntegerBinaryOperation) or cls.fold is not _GENERIC_FOLD:
        return False
    folders = cls.get_traits_of_type(HasFolder)
    if len(folders) != 1 or type(folders[0]).__module__ != "xdsl.interfaces":
        return False  # (the trait `HasFolderInterface` gives: it calls `op.fold()`)
    patterns = {
        type(p)
        for trait in cls.get_traits_of_type(HasCanonicalizationPatternsTrait)
        for p in trait.get_patterns(cls)
    }
    return patterns <= _GENERIC_PATTERNS


class QuietBinaries:
    """The (class, right-hand constant or None) of the ops on which the generic
    folder and patterns did nothing, for ops whose left operand is no constant."""

    def __init__(self) -> None:
        self._quiet: set[Hashable] = set()
        self._constant_like: dict[type[Operation], bool] = {}
        self._codes: dict[Attribute, int] = {}
        """A number per distinct constant value (attributes compare by value)."""
        self._ids: dict[int, tuple[Attribute, int]] = {}
        """An `arith.constant`'s value attribute by `id` (kept alive), with its number
        (xDSL's attribute `__hash__` is Python code: each object is hashed once)."""

    def __contains__(self, key: Hashable) -> bool:
        return key in self._quiet

    def remember(self, key: Hashable) -> None:
        """The generic folder and patterns did nothing on an op with `key`."""
        self._quiet.add(key)

    def _maybe_constant(self, value: SSAValue) -> bool:
        if not isinstance(value, OpResult):
            return False
        cls = type(value.op)
        known = self._constant_like.get(cls)
        if known is None:
            known = self._constant_like[cls] = cls.has_trait(
                ConstantLike, value_if_unregistered=True
            )
        return known

    def key(self, op: Operation) -> Hashable | None:
        """What decides whether the generic folder and patterns change `op`, when that
        is all (the left operand no constant); None otherwise."""
        lhs, rhs = op._operands
        if self._maybe_constant(lhs):
            return None
        if not self._maybe_constant(rhs):
            return (type(op), None)
        owner = rhs.op  # type: ignore[attr-defined]
        if type(owner) is not arith.ConstantOp:
            return None
        attr = owner.properties["value"]
        hit = self._ids.get(id(attr))
        if hit is None:
            code = self._codes.setdefault(attr, len(self._codes))
            hit = self._ids[id(attr)] = (attr, code)
        return (type(op), hit[1])
