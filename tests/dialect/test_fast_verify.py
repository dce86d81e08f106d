"""`tileir.verify.OpVerifier` (what `verify_located` runs) against xDSL's own
`op.verify(verify_nested_ops=False)`: the same op fails first, with the same message,
whatever valid ops of the same class and signature were verified before it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    I64,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    RangeOf,
    attr_def,
    base,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.irdl.operations import OpDef
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tileir.diagnostics import TileirError, verify_located
from tileir.dialect import pto
from tileir.ir import make_context
from tileir.verify import OpVerifier, irdl_parts

BASE = """
pto.kernel @k(%x: memref<16x64xf32>, %o: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c12 = arith.constant 12 : index
  %t = pto.view %x[0, 0] : memref<16x64xf32> -> tensor<8x64xf32>
}
"""


def _module() -> tuple[ModuleOp, Block, dict[str, SSAValue]]:
    """The kernel above, parsed without verification, its body, and its values by name
    (`_add` puts an op before the body's `pto.yield`)."""
    module = Parser(make_context(), BASE).parse_module()
    kernel = next(op for op in module.walk() if isinstance(op, pto.KernelOp))
    block = kernel.body.block
    names = ["c0", "c1", "c2", "c12", "t"]
    values: dict[str, SSAValue] = {"x": block.args[0], "o": block.args[1]}
    values.update(zip(names, (op.results[0] for op in block.ops)))
    return module, block, values


T8 = TensorType(f32, [8, 64])
SUM_T = TensorType(f32, [8, 1])


def _exp(v: dict[str, SSAValue], arg: str = "t", result: object = T8) -> Operation:
    return pto.ExpOp.create(operands=[v[arg]], result_types=[result])


def _sum(v: dict[str, SSAValue], **props: object) -> Operation:
    """`pto.sum %t, <dim> keepdim` with the properties `props` besides `keepdim`."""
    props = {"keepdim": UnitAttr(), **props}
    return pto.SumOp.create(operands=[v["t"]], result_types=[SUM_T], properties=props)


def _view(v: dict[str, SSAValue], row: str) -> Operation:
    """`pto.view %x[%row, 0] -> tensor<8x64xf32>`: the signature does not hold the row."""
    return pto.ViewOp(v["x"], [v[row], 0], T8)


def _loop(v: dict[str, SSAValue], *arg_types: object, blocks: int = 1) -> Operation:
    body = Region([Block([pto.YieldOp()], arg_types=arg_types) for _ in range(blocks)])
    return pto.LoopOp.create(operands=[v["c0"], v["c2"], v["c1"]], regions=[body])


@irdl_op_definition
class TaggedOp(IRDLOperation):
    """A test op with an attribute constraint and a verifier of its own."""

    name = "test.tagged"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    tag = attr_def(IntegerAttr[I64])
    traits = traits_def(Pure())

    def verify_(self) -> None:
        if self.tag.value.data < 0:
            raise VerifyException("'test.tagged' tag is negative")


@irdl_op_definition
class HolderOp(IRDLOperation):
    """A test op with a region and no traits (nothing checks its terminator)."""

    name = "test.holder"
    body = region_def()


@irdl_op_definition
class IndexedOp(IRDLOperation):
    """A test op whose region's entry block takes only `index` arguments."""

    name = "test.indexed"
    body = region_def(entry_args=RangeOf(base(IndexType)))


def _indexed(*arg_types: object) -> Operation:
    return IndexedOp.create(regions=[Region(Block(arg_types=arg_types))])


def _tagged(v: dict[str, SSAValue], tag: object, result: object = T8) -> Operation:
    return TaggedOp.create(operands=[v["t"]], result_types=[result], attributes={"tag": tag})


Build = Callable[[dict[str, SSAValue]], Operation]

CASES: dict[str, tuple[Build, Build]] = {
    # (a valid op, an op of the same class that breaks one rule)
    "operand-type": (_exp, lambda v: _exp(v, arg="x")),
    "result-type": (_exp, lambda v: _exp(v, result=MemRefType(f32, [8, 64]))),
    "result-shape (op verifier)": (_exp, lambda v: _exp(v, result=TensorType(f32, [4, 64]))),
    "operand-count": (
        _exp,
        lambda v: pto.ExpOp.create(operands=[v["t"], v["t"]], result_types=[T8]),
    ),
    "missing-property": (lambda v: _sum(v, dim=IntegerAttr(1, i64)), lambda v: _sum(v)),
    "property-type": (
        lambda v: _sum(v, dim=IntegerAttr(1, i64)),
        lambda v: _sum(v, dim=IntegerAttr(1, i32)),
    ),
    "property-kind": (
        lambda v: _sum(v, dim=IntegerAttr(1, i64)),
        lambda v: _sum(v, dim=StringAttr("1")),
    ),
    "undefined-property": (
        lambda v: _sum(v, dim=IntegerAttr(1, i64)),
        lambda v: _sum(v, dim=IntegerAttr(1, i64), extra=StringAttr("x")),
    ),
    "property-value (op verifier)": (
        lambda v: _sum(v, dim=IntegerAttr(1, i64)),
        lambda v: _sum(v, dim=IntegerAttr(5, i64)),
    ),
    "attribute-type": (
        lambda v: _tagged(v, IntegerAttr(1, i64)),
        lambda v: _tagged(v, IntegerAttr(1, i32)),
    ),
    "attribute-kind": (
        lambda v: _tagged(v, IntegerAttr(1, i64)),
        lambda v: _tagged(v, FloatAttr(1.0, f32)),
    ),
    "attribute-value (op verifier)": (
        lambda v: _tagged(v, IntegerAttr(1, i64)),
        lambda v: _tagged(v, IntegerAttr(-1, i64)),
    ),
    "region-block-count": (
        lambda v: _loop(v, IndexType()),
        lambda v: _loop(v, IndexType(), blocks=2),
    ),
    "region-entry-args (op verifier)": (
        lambda v: _loop(v, IndexType()),
        lambda v: _loop(v, f32),
    ),
    "region-entry-args": (
        lambda v: _indexed(IndexType(), IndexType()),
        lambda v: _indexed(IndexType(), f32),
    ),
    "region-block-count (no blocks)": (
        lambda v: _loop(v, IndexType()),
        lambda v: _loop(v, IndexType(), blocks=0),
    ),
    "defining-op (same signature)": (lambda v: _view(v, "c0"), lambda v: _view(v, "c12")),
}


def _add(block: Block, op: Operation) -> Operation:
    terminator = block.last_op
    assert isinstance(terminator, pto.YieldOp)
    block.insert_op_before(op, terminator)
    return op


def _first_failure(module: ModuleOp, verify: Callable[[Operation], None]) -> object:
    for op in module.walk():
        try:
            verify(op)
        except (VerifyException, ValueError) as e:
            return op, type(e), str(e)
    return None


def _reference(op: Operation) -> None:
    op.verify(verify_nested_ops=False)


@pytest.mark.parametrize("order", ["valid-first", "invalid-alone", "invalid-first"])
@pytest.mark.parametrize("case", CASES)
def test_fast_verifier_fails_exactly_where_xdsl_fails(case: str, order: str) -> None:
    valid, invalid = CASES[case]
    module, block, values = _module()
    builds = {
        "valid-first": [valid, valid, invalid, valid],
        "invalid-alone": [invalid],
        "invalid-first": [invalid, valid],
    }[order]
    ops = [_add(block, build(values)) for build in builds]
    expected = _first_failure(module, _reference)
    assert expected is not None, "the case must break a rule xDSL checks"
    assert expected[0] is ops[builds.index(invalid)]
    assert _first_failure(module, OpVerifier().verify) == expected
    with pytest.raises(TileirError) as info:
        verify_located(module)
    assert str(info.value).endswith(f"error: {expected[2]}")


@pytest.mark.parametrize("case", CASES)
def test_valid_ops_pass_both_verifiers(case: str) -> None:
    module, block, values = _module()
    for _ in range(3):
        _add(block, CASES[case][0](values))
    assert _first_failure(module, _reference) is None
    assert _first_failure(module, OpVerifier().verify) is None


def test_terminator_misplaced_after_a_valid_signature() -> None:
    """The generic checks run for a remembered signature: a `pto.exp` that ends the one
    block of a region is not a terminator."""
    module, block, values = _module()
    _add(block, _exp(values))
    _add(block, HolderOp.create(regions=[Region(Block([_exp(values)]))]))
    expected = _first_failure(module, _reference)
    assert expected is not None and "is not a terminator" in str(expected[2])
    assert _first_failure(module, OpVerifier().verify) == expected


def test_erased_operand_after_a_valid_signature() -> None:
    """An op using an erased value fails as in xDSL (a ValueError) when an op of the same
    signature passed before it."""
    from xdsl.ir import ErasedSSAValue

    module, block, values = _module()
    _add(block, _exp(values))
    broken = _add(block, _exp(values))
    broken.operands = [ErasedSSAValue(T8, values["t"])]
    expected = _first_failure(module, _reference)
    assert expected is not None and expected[0] is broken and expected[1] is ValueError
    assert _first_failure(module, OpVerifier().verify) == expected


def test_the_irdl_check_runs_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken for pto ops: a future xDSL whose generated `verify_` has
    another shape would fail here rather than make verification silently slow."""
    for cls in (pto.ExpOp, pto.SumOp, pto.ViewOp, pto.LoopOp, pto.KernelOp, ConstantOp):
        parts = irdl_parts(cls)
        assert parts is not None and parts.op_def is cls.get_irdl_definition()
    tagged = irdl_parts(TaggedOp)
    assert tagged is not None and getattr(tagged.custom, "__name__", None) == "verify_"

    module, block, values = _module()
    for _ in range(50):
        _add(block, _exp(values))
        _add(block, _view(values, "c0"))
    calls: list[str] = []
    original = OpDef.verify

    def counting(self: OpDef, op: Operation) -> None:
        calls.append(op.name)
        original(self, op)

    monkeypatch.setattr(OpDef, "verify", counting)
    verify_located(module)
    assert calls.count("pto.exp") == 1
    assert calls.count("pto.view") == 2  # the two `pto.view` signatures of BASE and above


ISOLATION = {
    "valid": "",
    "outer value in a loop": (
        "pto.loop %i = %c0 to %c2 step %c1 {\n"
        "  %u = pto.exp %t : tensor<8x64xf32>\n"
        "  %v = arith.addi %outer, %i : index\n"
        "}"
    ),
    "outer value at the top": "%v = arith.addi %outer, %c1 : index",
    "outer value in two loops": (
        "pto.loop %i = %c0 to %c2 step %c1 {\n"
        "  %a = arith.addi %outer, %i : index\n"
        "}\n"
        "pto.loop %j = %c0 to %c2 step %c1 {\n"
        "  %b = arith.muli %outer, %j : index\n"
        "}"
    ),
    "two outer uses": (
        "pto.loop %i = %c0 to %c2 step %c1 {\n"
        "  %v = arith.addi %outer, %i : index\n"
        "}\n"
        "%w = arith.addi %outer, %c2 : index"
    ),
    "use before the definition, inside": (
        "%v = arith.addi %late, %c1 : index\n%late = arith.addi %c2, %c1 : index"
    ),
    "loop argument used in the loop only": (
        "pto.loop %i = %c0 to %c2 step %c1 {\n  %v = arith.addi %i, %i : index\n}"
    ),
}


@pytest.mark.parametrize("case", ISOLATION)
def test_kernel_isolation_matches_xdsl_trait(case: str) -> None:
    """pto.kernel's IsolatedFromAbove check raises what xDSL's trait raises."""
    from xdsl.traits import IsolatedFromAbove

    text = BASE.replace(
        "pto.kernel @k",
        "%outer = arith.constant 7 : index\npto.kernel @k",
    ).replace("-> tensor<8x64xf32>\n}", "-> tensor<8x64xf32>\n" + ISOLATION[case] + "\n}")
    module = Parser(make_context(), text).parse_module()
    kernel = next(op for op in module.walk() if isinstance(op, pto.KernelOp))

    def outcome(check: Callable[[Operation], None]) -> str | None:
        try:
            check(kernel)
        except VerifyException as e:
            return str(e)
        return None

    ours = [t for t in pto.KernelOp.traits if isinstance(t, IsolatedFromAbove)]
    assert len(ours) == 1 and type(ours[0]) is not IsolatedFromAbove
    expected = outcome(IsolatedFromAbove().verify)
    assert outcome(ours[0].verify) == expected
    assert (expected is None) == (not case.startswith(("outer", "two outer")))
    if expected is not None:
        assert "%outer" in expected  # xDSL names the first op using it


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([8, 64], None),
        ([pto.DYNAMIC_INDEX, 64], None),
        ([2**31 - 1], None),
        ([], "'pto.exp' result has rank 0; PyPTO tiles have 1 to 4 dims"),
        ([1, 1, 1, 1, 8], "'pto.exp' result has rank 5; PyPTO tiles have 1 to 4 dims"),
        ([8, 0], "'pto.exp' result [8, 0] has a dim <= 0"),
        ([2**31, 4], "'pto.exp' result has size 2147483648 in dim 0; sizes must be in 1.."),
    ],
)
def test_tile_results_trait(shape: list[int], message: str | None) -> None:
    """The trait's quick test for common tiles lets through exactly what the full
    checks let through."""
    from tileir.dialect.ops.base import TileResults

    _, _, values = _module()
    op = pto.ExpOp.create(operands=[values["t"]], result_types=[TensorType(f32, shape)])
    if message is None:
        TileResults().verify(op)
    else:
        with pytest.raises(VerifyException) as info:
            TileResults().verify(op)
        assert str(info.value).startswith(message)


def test_no_value_class_overrides_type() -> None:
    """`OpVerifier` reads an operand's type from the field behind `SSAValue.type`: no
    value class of xDSL (results, block arguments, erased values) overrides it."""
    from xdsl.ir import SSAValue

    def subclasses(cls: type) -> list[type]:
        return [cls, *(c for sub in cls.__subclasses__() for c in subclasses(sub))]

    found = subclasses(SSAValue)
    assert {"OpResult", "BlockArgument", "ErasedSSAValue"} <= {c.__name__ for c in found}
    for cls in found:
        assert cls.type is SSAValue.type, cls


def _region(kind: str, values: dict[str, SSAValue]) -> Region:
    blocks = {
        "no blocks": [],
        "an empty block": [Block()],
        "a pto.yield": [Block([pto.YieldOp()])],
        "a pto.exp last": [Block([_exp(values)])],
        "two blocks": [Block([pto.YieldOp()]), Block([pto.YieldOp()])],
    }[kind]
    return Region(blocks)


@pytest.mark.parametrize(
    "kind", ["no blocks", "an empty block", "a pto.yield", "a pto.exp last", "two blocks"]
)
@pytest.mark.parametrize("cls", [pto.StageOp, pto.LoopOp, pto.KernelOp, pto.StitchOp])
def test_single_block_terminator_matches_xdsl_trait(cls: type[Operation], kind: str) -> None:
    """The `SingleBlockImplicitTerminator` of pto's region ops raises what xDSL's raises."""
    from xdsl.traits import SingleBlockImplicitTerminator

    ours = [t for t in cls.traits if isinstance(t, SingleBlockImplicitTerminator)]
    assert len(ours) == 1 and type(ours[0]) is not SingleBlockImplicitTerminator
    _, _, values = _module()
    op = cls.create(regions=[_region(kind, values)])

    def outcome(check: Callable[[Operation], None]) -> str | None:
        try:
            check(op)
        except VerifyException as e:
            return str(e)
        return None

    expected = outcome(SingleBlockImplicitTerminator(pto.YieldOp).verify)
    assert outcome(ours[0].verify) == expected
    assert (expected is None) == (kind in ("no blocks", "a pto.yield"))


@pytest.mark.parametrize("order", ["valid-first", "broken-first"])
def test_ops_sharing_attribute_objects(order: str) -> None:
    """A valid op and a broken one whose signatures are the same attribute objects (by
    identity) but one: the broken one fails as in xDSL, whichever comes first."""
    module, block, values = _module()
    dim, keepdim = IntegerAttr(1, i64), UnitAttr()
    valid = pto.SumOp.create(
        operands=[values["t"]], result_types=[SUM_T], properties={"dim": dim, "keepdim": keepdim}
    )
    broken = pto.SumOp.create(
        operands=[values["t"]], result_types=[T8], properties={"dim": dim, "keepdim": keepdim}
    )
    for op in [valid, broken] if order == "valid-first" else [broken, valid]:
        _add(block, op)
    expected = _first_failure(module, _reference)
    assert expected is not None and expected[0] is broken
    assert _first_failure(module, OpVerifier().verify) == expected


def test_a_verifier_reused_after_the_ir_changed() -> None:
    """`OpVerifier` finds attributes met before by their `id` and keeps each object
    alive, so an attribute replaced on an op (and dropped by the IR) cannot hand its
    `id`, and so its number, to a new attribute: an op changed after it passed fails
    in the same verifier as in xDSL."""
    import gc

    _, block, values = _module()
    op = _add(block, _sum(values, dim=IntegerAttr(1, i64)))
    fast = OpVerifier()
    fast.verify(op)
    for _ in range(50):  # new objects, which may take the ids of freed ones
        op.properties["dim"] = IntegerAttr(5, i64)
        gc.collect()
        expected = _outcome_of(op.verify)
        assert expected is not None and "dim" in expected
        assert _outcome_of(fast.verify, op) == expected
        op.properties["dim"] = IntegerAttr(1, i64)
        gc.collect()
        assert _outcome_of(fast.verify, op) is None


def _outcome_of(check: Callable[..., None], *args: object) -> str | None:
    try:
        check(*args)
    except VerifyException as e:
        return str(e)
    return None
