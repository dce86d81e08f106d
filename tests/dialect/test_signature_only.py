"""Verifiers declared `@signature_only` (`tileir.verify`), which `OpVerifier` runs once
per op signature that passed, read nothing but the signature; verifiers declared
`@signature_and_operands(views...)`, which it runs once per signature and list of
operand views that passed, read nothing else but through a view of an operand; and the
fast verifier still fails exactly where xDSL's `op.verify` fails on ops of the declared
classes whose signature (or an operand's view) was broken after a valid op of the same
class passed.

The ops are those of the seed kernels (as loaded and after `-p default`) and of the
FileCheck tests' inputs; every pto op class with a declared verifier must have some.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import FunctionType, MethodType

import pytest
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from tileir.dialect import pto
from tileir.ir import make_context
from tileir.verify import OpVerifier, irdl_parts, is_signature_only, operand_views

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the ops


@cache
def corpus() -> tuple[Operation, ...]:
    """Ops of the seed kernels (before and after `default`) and of the FileCheck inputs
    that parse (each `// -----` chunk apart; invalid ones included)."""
    from frontends.kernels import SEED_KERNELS
    from frontends.pypto import load_file
    from tileir.passes import apply_pipeline

    ops: list[Operation] = []
    for k in SEED_KERNELS:
        module = load_file(k.path)
        ops.extend(module.walk())
        module = load_file(k.path)
        apply_pipeline(module, "default")
        ops.extend(module.walk())
    ctx = make_context()
    for path in sorted((ROOT / "tests").rglob("*.mlir")):
        for chunk in path.read_text().split("// -----"):
            try:
                module = Parser(ctx, chunk).parse_module()
            except Exception:  # noqa: BLE001 - inputs of error tests may not parse
                continue
            ops.extend(module.walk())
    return tuple(ops)


def declared(cls: type[Operation]) -> list[tuple[str, Callable[[Operation], None]]]:
    """The verifiers of `cls` declared `signature_only`: its own `verify_` and traits."""
    parts = irdl_parts(cls)
    if parts is None:
        return []
    out: list[tuple[str, Callable[[Operation], None]]] = []
    if parts.custom is not None and is_signature_only(parts.custom):
        out.append(("verify_", parts.custom))
    for trait in parts.op_def.traits:
        if is_signature_only(type(trait).verify):
            out.append((type(trait).__name__, trait.verify))
    return out


DECLARED = sorted((c for c in pto.PTO.operations if declared(c)), key=lambda c: c.name)


def viewed(cls: type[Operation]) -> tuple[Callable[..., object], ...] | None:
    """The operand views `cls`'s own `verify_` is declared with
    (`signature_and_operands`), or None."""
    parts = irdl_parts(cls)
    return None if parts is None or parts.custom is None else operand_views(parts.custom)


VIEWED = sorted((c for c in pto.PTO.operations if viewed(c)), key=lambda c: c.name)


def test_declarations_are_where_the_fast_path_is_measured() -> None:
    """The hot op families of the benchmark and the seed kernels are declared (a change
    that drops a declaration makes verification slower, not wrong: this catches it)."""
    for cls in (pto.MulOp, pto.ExpOp, pto.SumOp, pto.MatmulOp, pto.ReshapeOp):
        assert [name for name, _ in declared(cls)] == ["verify_", "TileResults"]
    assert [name for name, _ in declared(pto.SetVecTileShapesOp)] == ["verify_"]
    # Verifiers that read operands' defining ops or the op's place are not declared
    # signature-only; those that read only which operands are index constants (and
    # their values) are declared with that view.
    for cls in (pto.ViewOp, pto.AssembleOp, pto.TransferOp, pto.StageOp, pto.FullOp):
        assert "verify_" not in [name for name, _ in declared(cls)]
    for cls in (pto.ViewOp, pto.AssembleOp):
        assert viewed(cls) == (pto.constant_index,)
    assert viewed(pto.TransferOp) is None and viewed(pto.StageOp) is None


# --------------------------------------------------------------------------- the spy


class _Reads:
    """What a verifier read through the spies: `bad` lists reads outside the signature
    (other than those made inside a call of one of `views`)."""

    def __init__(self, views: Sequence[Callable[..., object]] = ()) -> None:
        self.bad: list[str] = []
        self.views = frozenset(getattr(v, "__code__", None) for v in views) - {None}

    def in_view(self) -> bool:
        """Whether the read happens inside a call of one of the views."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code in self.views:
                return True
            frame = frame.f_back
        return False


class _ValueSpy:
    """An SSA value whose only readable field is `type`. Its class reads as `SSAValue`
    (`isinstance(v, int)` on a mixed index list reads it): whether a value is a block
    argument or an op's result is not in the signature, so a verifier that asked would
    see neither, and its outcome on the spy would differ from the real one."""

    def __init__(self, value: SSAValue, reads: _Reads) -> None:
        object.__setattr__(self, "_spied", (value, reads))

    def __getattribute__(self, name: str) -> object:
        value, reads = object.__getattribute__(self, "_spied")
        if name == "__class__":
            return SSAValue
        if name != "type" and not reads.in_view():
            reads.bad.append(f"value.{name}")
        return getattr(value, name)

    def __eq__(self, other: object) -> bool:
        object.__getattribute__(self, "_spied")[1].bad.append("value ==")
        return NotImplemented

    def __hash__(self) -> int:
        object.__getattribute__(self, "_spied")[1].bad.append("hash(value)")
        return 0


def _wrap(x: object, reads: _Reads, what: str) -> object:
    if isinstance(x, SSAValue):
        return _ValueSpy(x, reads)
    if isinstance(x, Attribute) or x is None or isinstance(x, int | str):
        return x
    if isinstance(x, Sequence):  # operands, results, a variadic group
        return tuple(_wrap(v, reads, what) for v in x)
    if isinstance(x, Mapping):  # properties, attributes
        return {k: _wrap(v, reads, what) for k, v in x.items()}
    reads.bad.append(f"{what} -> {type(x).__name__}")
    return x


def _signature_fields(cls: type[Operation]) -> frozenset[str]:
    """The op's fields that are its signature: operands and results (their types are
    all the spies let through), properties and attributes, and their accessors."""
    op_def = cls.get_irdl_definition()
    return frozenset(
        {"operands", "results", "properties", "attributes", "name"}
        | {name for name, _ in op_def.operands}
        | {name for name, _ in op_def.results}
        | set(op_def.accessor_names)
    )


class _OpSpy:
    """Stands for an op: signature fields read from it, its class's methods and
    properties run on the spy (so their reads are checked too), anything else - the
    op's parent, next op, regions, uses, an operand's owner - is a bad read."""

    def __init__(self, op: Operation, reads: _Reads) -> None:
        object.__setattr__(self, "_spied", (op, reads, _signature_fields(type(op))))

    def __getattribute__(self, name: str) -> object:
        op, reads, fields = object.__getattribute__(self, "_spied")
        if name == "__class__":  # isinstance / super(): the class is in the signature
            return type(op)
        if name in fields:
            return _wrap(getattr(op, name), reads, name)
        if name in vars(op):
            reads.bad.append(f"op.{name}")
            return getattr(op, name)
        static = inspect.getattr_static(type(op), name)
        if isinstance(static, FunctionType):
            return MethodType(static, self)
        if isinstance(static, property) and static.fget is not None:
            return static.fget(self)
        if isinstance(static, staticmethod):
            return static.__func__
        if isinstance(static, classmethod):
            return MethodType(static.__func__, type(op))
        if hasattr(type(static), "__get__"):  # another descriptor (a region accessor...)
            reads.bad.append(f"op.{name}")
            return getattr(op, name)
        return static  # a class constant (ELEMENT_KINDS ...)


def _outcome(fn: Callable[[], None]) -> str | None:
    try:
        fn()
    except (VerifyException, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _rejects(verifier: Callable[[Operation], None], op: Operation) -> bool:
    """Whether `verifier` raises a VerifyException on `op` (on an op that breaks an IRDL
    constraint, which xDSL checks first, a verifier may fail in any way)."""
    try:
        verifier(op)
    except VerifyException:
        return True
    except Exception:  # noqa: BLE001
        return False
    return False


def _cases() -> Iterator[tuple[type[Operation], str, Callable[[Operation], None]]]:
    for cls in DECLARED:
        for name, fn in declared(cls):
            yield cls, name, fn


@pytest.mark.parametrize(
    ("cls", "which", "verifier"),
    list(_cases()),
    ids=[f"{c.name}.{n}" for c, n, _ in _cases()],
)
def test_declared_verifier_reads_only_the_signature(
    cls: type[Operation], which: str, verifier: Callable[[Operation], None]
) -> None:
    ops = [op for op in corpus() if type(op) is cls]
    assert ops, f"no {cls.name} among the seed kernels' and FileCheck tests' ops"
    for op in ops:
        reads = _Reads()
        spied = _outcome(lambda op=op, reads=reads: verifier(_OpSpy(op, reads)))  # type: ignore[arg-type]
        assert reads.bad == [], f"{cls.name}'s {which} reads {reads.bad} on {op}"
        assert spied == _outcome(lambda op=op: verifier(op))


@pytest.mark.parametrize("cls", VIEWED, ids=[c.name for c in VIEWED])
def test_viewed_verifier_reads_only_the_signature_and_its_views(cls: type[Operation]) -> None:
    """A `signature_and_operands` verifier reads an operand only through its views (the
    spy lets other reads through only inside a call of one of them)."""
    parts = irdl_parts(cls)
    assert parts is not None and parts.custom is not None
    verifier, views = parts.custom, viewed(cls) or ()
    ops = [op for op in corpus() if type(op) is cls]
    assert ops, f"no {cls.name} among the seed kernels' and FileCheck tests' ops"
    for op in ops:
        reads = _Reads(views)
        spied = _outcome(lambda op=op, reads=reads: verifier(_OpSpy(op, reads)))  # type: ignore[arg-type]
        assert reads.bad == [], f"{cls.name}'s verify_ reads {reads.bad} on {op}"
        assert spied == _outcome(lambda op=op: verifier(op))


def test_the_spy_catches_reads_outside_the_signature() -> None:
    """The spy is not blind: the context reads of verifiers that are not declared
    (an offset's defining op, the enclosing stage) are caught on the same ops."""
    caught: set[str] = set()
    for op in corpus():
        if type(op) in (pto.ViewOp, pto.TransferOp, pto.StageOp):
            reads = _Reads()
            parts = irdl_parts(type(op))
            assert parts is not None and parts.custom is not None
            custom = parts.custom
            _outcome(lambda c=custom, op=op, reads=reads: c(_OpSpy(op, reads)))  # type: ignore[arg-type]
            if reads.bad:
                caught.add(op.name)
    assert caught == {"pto.view", "pto.transfer", "pto.stage"}


# --------------------------------------------------------------------------- broken signatures


_OTHER_ELEMENT = {f32: i32, i32: f16, f16: f32}


def _type_mutants(t: Attribute) -> list[Attribute]:
    if not isinstance(t, TensorType):
        return [f32] if t != f32 else [IndexType()]
    shape = list(t.get_shape())
    elem = t.get_element_type()
    out: list[Attribute] = [
        TensorType(_OTHER_ELEMENT.get(elem, f32), shape),
        TensorType(i1, shape),
        TensorType(elem, [*shape, 2]),
        TensorType(elem, shape[1:] or [3, 3]),
        TensorType(elem, [1, 1, 1, 1, 2]),  # rank 5: no PyPTO tile
        TensorType(elem, [0, *shape[1:]]),  # a dim <= 0
    ]
    if shape and shape[0] > 0:
        out.append(TensorType(elem, [shape[0] + 1, *shape[1:]]))
    return out


def _prop_mutants(attr: Attribute) -> list[Attribute | None]:
    out: list[Attribute | None] = [None]
    if isinstance(attr, DenseArrayBase):
        values = list(attr.get_values())
        out += [
            DenseArrayBase.from_list(i64, values + [4]),
            DenseArrayBase.from_list(i64, [-1] * len(values)),
            DenseArrayBase.from_list(i64, [0, *values[1:]] if values else [0]),
            DenseArrayBase.from_list(i64, []),
        ]
    elif isinstance(attr, IntegerAttr):
        v = attr.value.data
        out += [IntegerAttr(v + 1, attr.type), IntegerAttr(-v - 2, attr.type)]
    elif isinstance(attr, StringAttr):
        out += [StringAttr(""), StringAttr("bogus")]
    elif isinstance(attr, UnitAttr):
        out += [StringAttr("x")]
    return out


def _mutants(op: Operation) -> Iterator[Operation]:
    """Ops of `op`'s class that differ from it in one part of the signature."""

    def make(
        operand_types: list[Attribute] | None = None,
        result_types: list[Attribute] | None = None,
        properties: dict[str, Attribute] | None = None,
    ) -> Operation:
        operands = list(op.operands)
        if operand_types is not None:
            block = Block(arg_types=operand_types)
            operands = list(block.args)
        return type(op).create(
            operands=operands,
            result_types=result_types if result_types is not None else op.result_types,
            properties=properties if properties is not None else dict(op.properties),
            attributes=dict(op.attributes),
        )

    types = [o.type for o in op.operands]
    for i, t in enumerate(types):
        for m in _type_mutants(t):
            yield make(operand_types=[*types[:i], m, *types[i + 1 :]])
    results = list(op.result_types)
    for i, t in enumerate(results):
        for m in _type_mutants(t):
            yield make(result_types=[*results[:i], m, *results[i + 1 :]])
    # Each result type with the same change as each operand (a shape change that keeps
    # the op's own type relations, so that the op's verifier rather than a constraint
    # is what fails).
    for m_index in range(7):
        changed_ops = [(_type_mutants(t) + [t] * 7)[m_index] for t in types]
        changed_res = [(_type_mutants(t) + [t] * 7)[m_index] for t in results]
        yield make(operand_types=changed_ops, result_types=changed_res)
    for name, attr in op.properties.items():
        for m in _prop_mutants(attr):
            props = {k: v for k, v in op.properties.items() if k != name}
            if m is not None:
                props[name] = m
            yield make(properties=props)


FAST = sorted(set(DECLARED) | set(VIEWED), key=lambda c: c.name)


@pytest.mark.parametrize("cls", FAST, ids=[c.name for c in FAST])
def test_broken_signature_after_a_valid_op_fails_as_in_xdsl(cls: type[Operation]) -> None:
    """For ops of each declared class that verify: every op that differs in one part of
    the signature fails in `OpVerifier` (after the valid op passed in it) exactly as in
    xDSL; some of them fail in a declared verifier (so the test reaches them)."""
    valid: list[Operation] = []
    for op in corpus():
        if type(op) is cls and _outcome(lambda op=op: op.verify(verify_nested_ops=False)) is None:
            valid.append(op)
        if len(valid) == 3:
            break
    assert valid, f"no valid {cls.name} among the ops"
    in_declared = 0
    for op in valid:
        for mutant in _mutants(op):
            expected = _outcome(lambda m=mutant: m.verify(verify_nested_ops=False))
            fast = OpVerifier()
            fast.verify(op)
            assert _outcome(lambda f=fast, m=mutant: f.verify(m)) == expected, str(mutant)
            if any(_rejects(f, mutant) for f in _fast_verifiers(cls)):
                in_declared += 1
    assert in_declared > 0, f"no broken {cls.name} fails in a declared verifier"


def _fast_verifiers(cls: type[Operation]) -> list[Callable[[Operation], None]]:
    parts = irdl_parts(cls)
    own = [parts.custom] if parts is not None and parts.custom and viewed(cls) else []
    return [f for _, f in declared(cls)] + own


_CONSTANTS = (0, 1, 7, 63, 64, 1000, -1, -5)


def _operand_mutants(op: Operation) -> Iterator[Operation]:
    """Ops of `op`'s class with the same signature whose index operands are other
    values: an `arith.constant` of each of `_CONSTANTS`, or a block argument (not a
    constant)."""
    for i, v in enumerate(op.operands):
        if not isinstance(v.type, IndexType):
            continue
        replacements: list[SSAValue] = [Block(arg_types=[IndexType()]).args[0]]
        replacements += [ConstantOp(IntegerAttr(c, IndexType())).result for c in _CONSTANTS]
        for r in replacements:
            yield type(op).create(
                operands=[*op.operands[:i], r, *op.operands[i + 1 :]],
                result_types=op.result_types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )


@pytest.mark.parametrize("cls", VIEWED, ids=[c.name for c in VIEWED])
def test_other_operand_views_after_a_valid_op_fail_as_in_xdsl(cls: type[Operation]) -> None:
    """For valid ops of each class declared `signature_and_operands`: an op of the same
    signature whose index operands are other constants (or no constant) fails in
    `OpVerifier`, after the valid op and after each other mutant passed or failed in
    it, exactly as in xDSL; some of them fail (the test reaches the verifier)."""
    valid = [
        op
        for op in corpus()
        if type(op) is cls and _outcome(lambda op=op: op.verify(verify_nested_ops=False)) is None
    ][:6]
    assert valid, f"no valid {cls.name} among the ops"
    failed = 0
    for op in valid:
        fast = OpVerifier()
        fast.verify(op)
        for mutant in _operand_mutants(op):
            expected = _outcome(lambda m=mutant: m.verify(verify_nested_ops=False))
            assert _outcome(lambda f=fast, m=mutant: f.verify(m)) == expected, str(mutant)
            failed += expected is not None
    assert failed > 0, f"no {cls.name} with other index operands fails"


def test_no_declared_trait_does_nothing() -> None:
    """A declaration on a trait that keeps `OpTrait.verify` would mean nothing."""
    for cls in DECLARED:
        for name, fn in declared(cls):
            assert getattr(fn, "__func__", fn) is not OpTrait.verify, (cls.name, name)
