"""`tileir.ir`'s op builders (`new_op`, `append_ops`, `clone_ops`) and
`tileir.stamping.CopyTemplate` against
xDSL's own `Operation.create`, `Block.add_ops` and `Operation.clone`: the same fields, the
same use lists, the same printed IR."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue, Use
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    var_operand_def,
)

import tileir.stamping
from frontends.kernels import SEED_KERNELS
from frontends.pypto import load_file, load_source
from tileir.dialect import pto
from tileir.ir import (
    append_ops,
    clone_ops,
    detach_ops,
    escaping_results,
    make_context,
    move_ops,
    move_run,
    new_op,
    parse_module,
    prepend_ops,
    print_module,
    walk_list,
)
from tileir.passes import apply_pipeline, parse_pipeline
from tileir.stamping import CopyTemplate

SOURCE = """
pto.kernel @k(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  pto.loop %i = %c0 to %c4 step %c1 name "rows" unroll [2, 1] {
    %c8 = arith.constant 8 : index
    %off_1 = arith.muli %i, %c8 : index
    pto.set_vec_tile_shapes [8, 64]
    %t = pto.view %x[%off_1, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    %e = pto.exp %t : tensor<8x64xf32>
    %s = pto.sum %e, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    %b = pto.is_loop_begin %i
    pto.assemble %e into %out[%off_1, 0] : tensor<8x64xf32>, memref<32x64xf32>
  }
}
"""


def _module():
    return parse_module(SOURCE)


def _loop(module) -> pto.LoopOp:
    return next(op for op in module.walk() if isinstance(op, pto.LoopOp))


def _fields(op: Operation) -> dict[str, object]:
    """Every dataclass field of `op`, with values and uses made comparable."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(op):
        value = getattr(op, f.name)
        if f.name == "results":
            value = [(type(r), r.type, r.index, r.op is op, r.name_hint) for r in value]
        elif f.name == "_operand_uses":
            value = [(type(u), u.operation is op, u.index) for u in value]
        elif f.name == "_operands":
            value = [id(v) for v in value]
        out[f.name] = (type(value), value)
    return out


@pytest.mark.parametrize("index", range(9))
def test_new_op_sets_what_create_sets(index: int) -> None:
    body = _loop(_module()).body.block
    op = list(body.ops)[index]
    args = (
        list(op.operands),
        [r.type for r in op.results],
        op.properties,
        op.attributes,
        op.location,
    )
    made = new_op(type(op), *args)
    reference = type(op).create(
        operands=args[0],
        result_types=args[1],
        properties=args[2],
        attributes=args[3],
        location=args[4],
    )
    assert _fields(made) == _fields(reference)
    assert made.properties is not op.properties and made.attributes is not op.attributes
    # each operand gained one use by `made` (and one by `reference`), at the right index
    for n, value in enumerate(op.operands):
        users = [(u.operation, u.index) for u in value.uses]
        assert users.count((made, n)) == 1 and users.count((reference, n)) == 1


def test_new_op_fills_irdl_defaults_like_create() -> None:
    # `arith.addi` has an `overflowFlags` property with a default: create fills it in.
    c = arith.ConstantOp(IntegerAttr(1, IndexType()))
    made = new_op(arith.AddiOp, [c.result, c.result], [IndexType()], {}, {}, c.location)
    reference = arith.AddiOp.create(operands=[c.result, c.result], result_types=[IndexType()])
    assert reference.properties, "xDSL no longer fills a default here: pick another op"
    assert made.properties == reference.properties


def test_append_ops_links_like_add_ops() -> None:
    c = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(3)]
    block = Block([c[0]])
    append_ops(block, c[1:])
    assert list(block.ops) == c
    assert [op.parent for op in c] == [block] * 3
    assert block.first_op is c[0] and block.last_op is c[2]
    assert c[1].prev_op is c[0] and c[1].next_op is c[2] and c[2].next_op is None
    with pytest.raises(ValueError, match="already attached"):
        append_ops(Block(), [c[0]])


def test_clone_ops_prints_as_xdsl_clone() -> None:
    # two copies of the loop body for %i -> the first op's result, once by clone_ops,
    # once by xDSL's clone op by op with one growing value mapping
    ours, theirs = _module(), _module()
    for module, clone in (
        (ours, lambda ops, m: clone_ops(ops, m)),
        (theirs, lambda ops, m: [op.clone(m) for op in ops]),
    ):
        loop = _loop(module)
        body = loop.body.block
        ops = [op for op in body.ops if not isinstance(op, pto.YieldOp)]
        mapping = {loop.induction_var: ops[1].results[0]}
        copies = clone(ops, dict(mapping))
        for op in copies:
            body.insert_op_before(op, body.last_op)
    assert print_module(ours) == print_module(theirs)
    assert print_module(ours).count("pto.exp") == 2


def test_clone_ops_copies_regions_as_xdsl_clone() -> None:
    ours, theirs = _module(), _module()
    for module, clone in (
        (ours, lambda op: clone_ops([op], {})[0]),
        (theirs, lambda op: op.clone()),
    ):
        loop = _loop(module)
        loop.parent.insert_op_after(clone(loop), loop)
    assert print_module(ours) == print_module(theirs)
    assert print_module(ours).count("pto.loop") == 2


def test_prepend_ops_links_like_insert_ops_before() -> None:
    c = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(5)]
    block = Block(c[3:])
    prepend_ops(block, c[:3])
    assert list(block.ops) == c and [op.parent for op in c] == [block] * 5
    assert block.first_op is c[0] and block.last_op is c[4] and c[0].prev_op is None
    assert c[2].next_op is c[3] and c[3].prev_op is c[2]
    assert [op.prev_op for op in c[1:]] == c[:-1] and [op.next_op for op in c[:-1]] == c[1:]
    empty = Block()
    d = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(2)]
    prepend_ops(empty, d)
    assert list(empty.ops) == d and empty.first_op is d[0] and empty.last_op is d[1]
    prepend_ops(empty, [])
    assert list(empty.ops) == d
    with pytest.raises(ValueError, match="already attached"):
        prepend_ops(Block(), [arith.ConstantOp(IntegerAttr(9, IndexType())), c[0]])
    assert list(block.ops) == c  # (refused before any op was linked)


def test_move_run_relinks_both_blocks() -> None:
    c = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(5)]
    source, target = Block(c), Block()
    move_run(c[1:4], target)
    assert list(source.ops) == [c[0], c[4]] and list(target.ops) == c[1:4]
    assert [op.parent for op in c] == [source, target, target, target, source]
    assert c[0].next_op is c[4] and c[4].prev_op is c[0]
    assert c[1].prev_op is None and c[3].next_op is None and target.last_op is c[3]
    move_run(c[:1], target)  # a run at the start, onto a non-empty block
    assert list(source.ops) == [c[4]] and source.first_op is c[4]
    assert list(target.ops) == [c[1], c[2], c[3], c[0]]
    with pytest.raises(ValueError, match="not consecutive"):
        move_run([c[1], c[3]], Block())


@pytest.mark.parametrize("order", [(1, 3, 0, 4), (4, 3, 2, 1, 0), (0, 2, 4), (5, 1, 6), (3, 1)])
def test_move_ops_links_like_detach_then_add_op(order: tuple[int, ...]) -> None:
    """`move_ops` against xDSL's `detach` and `add_op`, op by op, on two copies: ops of
    a block in any order, some of them the block's ends, and ops in no block (5, 6),
    onto a block holding an op already."""
    results = []
    for ours in (True, False):
        c = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(8)]
        source, target = Block(c[:5]), Block([c[7]])
        moved = [c[k] for k in order]
        if ours:
            move_ops(moved, target)
        else:
            for op in moved:
                if op.parent is not None:
                    op.detach()
                target.add_op(op)
        links = [
            (
                c.index(op.prev_op) if op.prev_op else None,
                c.index(op.next_op) if op.next_op else None,
                op.parent is source,
                op.parent is target,
            )
            for op in c
        ]
        ends = [source.first_op, source.last_op, target.first_op, target.last_op]
        results.append((links, [c.index(op) if op else None for op in ends]))
    assert results[0] == results[1]
    with pytest.raises(ValueError, match="in the block already"):
        move_ops([c[7]], target)


def test_detach_ops_unlinks_like_detach() -> None:
    c = [arith.ConstantOp(IntegerAttr(k, IndexType())) for k in range(4)]
    block = Block(c)
    detach_ops([c[0], c[2], c[3], c[0]])  # (an op already detached is skipped)
    assert list(block.ops) == [c[1]] and block.first_op is c[1] and block.last_op is c[1]
    assert c[1].prev_op is None and c[1].next_op is None
    assert all(op.parent is None and op.prev_op is None and op.next_op is None for op in c[::2])


@pytest.mark.parametrize("seed", SEED_KERNELS, ids=[k.name for k in SEED_KERNELS])
def test_walk_list_is_xdsls_walk(seed) -> None:
    """`walk_list(op)` lists what `op.walk()` yields, in its order, for every op of the
    seed kernels after `default` (stages, loops, branches, stitch groups nested)."""
    module = load_file(seed.path)
    apply_pipeline(module, "default{unroll-factors=2}")
    for op in module.walk():
        assert walk_list(op) == list(op.walk())


def _escaping_by_xdsl(run: list[Operation]) -> list:
    """The reference: a result escapes when some use is by an op that is none of `run`
    and lies in none of them (xDSL's `uses` and `is_ancestor`)."""
    return [
        r
        for op in run
        for r in op.results
        if any(all(not m.is_ancestor(u.operation) for m in run) for u in r.uses)
    ]


@pytest.mark.parametrize("seed", SEED_KERNELS, ids=[k.name for k in SEED_KERNELS])
def test_escaping_results_as_xdsl_says(seed) -> None:
    """Every run of up to 6 consecutive ops of every block of a seed kernel (after
    vc-split, so that stages nest ops)."""
    module = load_source(seed.path.read_text(), str(seed.path))
    for p in parse_pipeline("vc-split"):
        p.apply(make_context(), module)
    checked = 0
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                ops = list(block.ops)
                for start in range(len(ops)):
                    for n in range(1, 7):
                        run = ops[start : start + n]
                        assert escaping_results(run, block) == _escaping_by_xdsl(run)
                        checked += 1
    assert checked > 0


NESTED = """
pto.kernel @k(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  pto.loop %i = %c0 to %c4 step %c1 name "rows" {
    %off_1 = arith.muli %i, %c8 : index
    %t = pto.view %x[%off_1, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    pto.loop %k = %c0 to %c4 step %c1 name "inner" {
      %s = arith.addi %k, %off_1 : index
      %u = pto.view %x[%s, 0] : memref<32x64xf32> -> tensor<8x64xf32>
      %e = pto.exp %u : tensor<8x64xf32>
      pto.assemble %e into %out[%s, 0] : tensor<8x64xf32>, memref<32x64xf32>
    }
    %b = pto.is_loop_begin %i
    %e = pto.add %t, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    pto.assemble %e into %out[%off_1, 0] : tensor<8x64xf32>, memref<32x64xf32>
  }
}
"""


@pytest.mark.parametrize("source", [SOURCE, NESTED], ids=["flat", "nested"])
def test_copy_template_stamps_what_clone_ops_makes(source: str) -> None:
    # three copies of the loop body, for %i -> three different values, once stamped
    # from one template and once by `clone_ops`: the same printed IR, the same fields
    # (operands compared by their place in the copies), the same uses
    ours, theirs = parse_module(source), parse_module(source)
    made: dict[str, list[list[Operation]]] = {"ours": [], "theirs": []}
    for key, module in (("ours", ours), ("theirs", theirs)):
        loop = _loop(module)
        body = loop.body.block
        ops = [op for op in body.ops if not isinstance(op, pto.YieldOp)]
        template = CopyTemplate(ops, [loop.induction_var]) if key == "ours" else None
        values = [ops[0].results[0], loop.lower_bound, loop.induction_var]
        for value in values:
            block = Block()
            if template is not None:
                copies = template.stamp([value], block)
                assert list(block.ops) == copies
            else:
                copies = clone_ops(ops, {loop.induction_var: value})
                append_ops(block, copies)
            made[key].append(copies)
            for op in copies:
                op.detach()
            body.insert_ops_before(copies, body.last_op)
    assert print_module(ours) == print_module(theirs)
    assert print_module(ours).count("pto.exp") == 4

    def numbered(copies: list[Operation]) -> list[dict[str, object]]:
        # fields with every value named by (op position, result index) or kept by id
        where = {id(r): (n, r.index) for n, op in enumerate(copies) for r in op.results}
        out = []
        for op in copies:
            fields = _fields(op)
            fields["_operands"] = [where.get(id(v), "outside") for v in op.operands]
            for name in ("parent", "_next_op", "_prev_op", "regions"):
                fields.pop(name)
            out.append(fields)
        return out

    def uses(copies: list[Operation]) -> list[list[int]]:
        # per op, the operand indices at which its operands' use lists hold it
        return [
            sorted(
                u.index
                for v in {id(v): v for v in op.operands}.values()
                for u in v.uses
                if u.operation is op
            )
            for op in copies
        ]

    for a, b in zip(made["ours"], made["theirs"], strict=True):
        assert numbered(a) == numbered(b)
        assert uses(a) == uses(b) == [list(range(len(op.operands))) for op in a]


def test_copy_template_needs_one_value_per_input() -> None:
    loop = _loop(_module())
    ops = [op for op in loop.body.block.ops if not isinstance(op, pto.YieldOp)]
    with pytest.raises(ValueError, match="one value per input"):
        CopyTemplate(ops, [loop.induction_var]).stamp([], Block())


def _copied_three_times(source: str, how: str) -> tuple[object, list[list[Operation]]]:
    """`source`'s loop body copied three times (for %i -> three different values) into
    the body, before its terminator: by one `CopyTemplate` ("stamp"), by `clone_ops`
    ("clone_ops"), or by xDSL's `clone` op by op with one growing mapping ("xdsl")."""
    module = parse_module(source)
    loop = _loop(module)
    body = loop.body.block
    ops = [op for op in body.ops if not isinstance(op, pto.YieldOp)]
    template = CopyTemplate(ops, [loop.induction_var]) if how == "stamp" else None
    made: list[list[Operation]] = []
    for value in [ops[0].results[0], loop.lower_bound, loop.induction_var]:
        block = Block()
        if template is not None:
            copies = template.stamp([value], block)
            assert list(block.ops) == copies and block.last_op is copies[-1]
            assert all(op.parent is block for op in copies) and copies[-1].next_op is None
            assert [op.prev_op for op in copies] == [None, *copies[:-1]]
        elif how == "clone_ops":
            copies = clone_ops(ops, {loop.induction_var: value})
            append_ops(block, copies)
        else:
            mapping = {loop.induction_var: value}
            copies = [op.clone(mapping) for op in ops]
            block.add_ops(copies)
        made.append(copies)
        for op in copies:
            op.detach()
        body.insert_ops_before(copies, body.last_op)
    return module, made


def _use_lists(module) -> dict[object, object]:
    """Every value of `module` (by its owner's place in the walk) with its use list in
    `first_use` order (each use by its op's place and operand index, its `_prev_use`
    checked against the chain), and every op's, use's and result's instance fields."""
    where = {id(op): n for n, op in enumerate(module.walk())}
    out: dict[object, object] = {}
    for n, op in enumerate(module.walk()):
        out["op", n] = sorted(vars(op))
        values = [(("result", n, r.index), r) for r in op.results]
        for k, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                values += [(("arg", n, k, b, a.index), a) for a in block.args]
        for u in op._operand_uses:
            out["use", n, u.index] = (sorted(vars(u)), u.operation is op)
        for key, value in values:
            if isinstance(value, OpResult):
                out["fields", *key] = (sorted(vars(value)), value.op is op, value.name_hint)
            chain, use, prev = [], value.first_use, None
            while use is not None:
                assert use._prev_use is prev
                chain.append((where[id(use.operation)], use.index))
                prev, use = use, use._next_use
            out[key] = chain
    return out


NESTED_LAST = """
pto.kernel @k(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  pto.loop %i = %c0 to %c4 step %c1 name "rows" {
    %t = pto.view %x[%i, 0] : memref<32x64xf32> -> tensor<8x64xf32>
    pto.loop %k = %c0 to %c4 step %c1 name "inner" {
      %s = arith.addi %k, %i : index
      %e = pto.exp %t : tensor<8x64xf32>
      pto.assemble %e into %out[%s, 0] : tensor<8x64xf32>, memref<32x64xf32>
    }
  }
}
"""
"""A body whose last op has a region (copied by `clone_ops`'s means, then linked)."""


@pytest.mark.parametrize(
    "source", [SOURCE, NESTED, NESTED_LAST], ids=["flat", "nested", "nested-last"]
)
def test_copy_template_use_lists_match_clone(source: str) -> None:
    # the order of every value's uses (what rewrites that walk `uses` see first), and
    # which fields each object holds, as clone_ops and (flat) xDSL's clone leave them
    stamped, _ = _copied_three_times(source, "stamp")
    cloned, _ = _copied_three_times(source, "clone_ops")
    ours = _use_lists(stamped)
    assert print_module(stamped) == print_module(cloned)
    assert ours == _use_lists(cloned)
    assert sum(len(v) for k, v in ours.items() if k[0] in ("result", "arg")) > 30
    if source is SOURCE:
        xdsl, _ = _copied_three_times(source, "xdsl")
        assert print_module(stamped) == print_module(xdsl)
        assert ours == _use_lists(xdsl)


def test_copy_template_fills_irdl_defaults_like_create() -> None:
    # an op whose default property is missing (taken out after it was made): its
    # copies get the default, as `create` and `clone_ops` give it, and the op keeps none
    c = arith.ConstantOp(IntegerAttr(1, IndexType()))
    add = arith.AddiOp(c.result, c.result)
    name = next(iter(add.properties))
    del add.properties[name]
    block = Block([c, add])
    stamped = CopyTemplate([add], [c.result]).stamp([c.result], Block())
    cloned = clone_ops([add], {})
    reference = arith.AddiOp.create(operands=[c.result, c.result], result_types=[IndexType()])
    assert stamped[0].properties == cloned[0].properties == reference.properties
    assert name in stamped[0].properties and name not in add.properties
    assert stamped[0].properties is not cloned[0].properties and list(block.ops) == [c, add]


REGIONS = """
pto.kernel @k(%x: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  pto.loop %i = %c0 to %c4 step %c1 name "rows" {
    %off_1 = arith.muli %i, %c8 : index
    %y = pto.stage vector label "pre" tile [8, 64] {
      pto.set_semantic_label "pre"
      %a = pto.view %x[%off_1, 0] : memref<32x64xf32> -> tensor<8x64xf32>
      %e = pto.exp %a : tensor<8x64xf32>
      %f = pto.add %e, %a : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
      pto.yield %f : tensor<8x64xf32>
    } -> tensor<8x64xf32>
    pto.loop %k = %c0 to %c4 step %c1 name "inner" {
      %s = arith.addi %k, %off_1 : index
      pto.stage vector label "in" tile [8, 64] {
        %u = pto.view %x[%s, 0] : memref<32x64xf32> -> tensor<8x64xf32>
        %v = pto.add %u, %y : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
        pto.assemble %v into %out[%k, 0] : tensor<8x64xf32>, memref<32x64xf32>
        pto.yield
      }
    }
    %sum = scf.for %j = %c0 to %c4 step %c1 iter_args(%7 = %off_1) -> (index) {
      %next = arith.addi %7, %j : index
      scf.yield %next : index
    }
    %first = pto.is_loop_begin %i
    %r, %r2 = scf.if %first -> (index, index) {
      %p = arith.addi %off_1, %c8 : index
      scf.yield %p, %i : index, index
    } else {
      %q = arith.muli %i, %sum : index
      scf.yield %c8, %q : index, index
    }
    pto.stitch size 1 max 4 {
      pto.stage vector label "post" tile [8, 64] {
        %w = pto.exp %y : tensor<8x64xf32>
        pto.assemble %w into %out[%r, %r2] : tensor<8x64xf32>, memref<32x64xf32>
        pto.yield
      }
      pto.yield
    }
  }
}
"""
"""A loop body after `vc-split`: a stage of several ops, a nested loop (its stage uses
the inner index, a value of the body and one of the first stage), an `scf.for` with
an accumulator (two block arguments, one unnamed), an `scf.if` with two results and both
branches, a stitch group holding a stage."""


@irdl_op_definition
class _OwnPostInitOp(IRDLOperation):
    """An op of a class with its own `__post_init__` (`new_op` defers to `create`)."""

    name = "test.own_post_init"
    arg = operand_def(IndexType)
    res = result_def(IndexType)
    body = region_def()

    def __post_init__(self) -> None:
        super().__post_init__()


@irdl_op_definition
class _AnyRegionsOp(IRDLOperation):
    """An op whose region may hold any number of blocks."""

    name = "test.any_regions"
    args = var_operand_def()
    body = region_def()


def _with_odd_ops(module, how: str) -> None:
    """Ops `CopyTemplate` leaves to `clone_ops`'s means, put into `REGIONS`'s body:
    "create" an op of a class with its own `__post_init__` (with a region whose block
    argument and ops are used inside it, and a result used after it) inside the inner
    loop; "multi-block" a two-block region op at the top of the body and one inside
    the first stage (which then goes whole to xDSL's `clone`)."""
    loop = _loop(module)
    i = loop.induction_var
    inner = next(op for op in loop.body.block.ops if isinstance(op, pto.LoopOp))
    if how == "create":
        k = inner.induction_var
        s = inner.body.block.first_op
        block = Block(arg_types=[IndexType()])
        block.args[0].name_hint = "a"
        add = arith.AddiOp(block.args[0], k)
        block.add_ops([add, arith.MuliOp(add.result, s.results[0])])
        odd = _OwnPostInitOp.create(
            operands=[s.results[0]], result_types=[IndexType()], regions=[Region(block)]
        )
        odd.results[0].name_hint = "odd"
        inner.body.block.insert_op_after(odd, s)
        inner.body.block.insert_op_after(arith.AddiOp(odd.results[0], i), odd)
    else:
        stage = next(op for op in loop.body.block.ops if isinstance(op, pto.StageOp))

        def two_blocks(value) -> _AnyRegionsOp:
            first = Block([arith.AddiOp(value, i)], arg_types=[IndexType()])
            second = Block([arith.MuliOp(value, value)])
            return _AnyRegionsOp.create(operands=[value], regions=[Region([first, second])])

        loop.body.block.insert_op_before(two_blocks(i), loop.body.block.first_op)
        stage.body.block.insert_op_before(
            two_blocks(stage.body.block.first_op.next_op.operands[1]),
            stage.body.block.last_op,
        )


def _canonical(module, blocks: list[Block]) -> dict[object, object]:
    """Every object of `module` and of `blocks` (ops, their results, uses, regions,
    blocks and block arguments; found by xDSL's walks, so by the ops' links) named by
    its place, with its instance fields in the order they were set, each value that
    is such an object given by its name (attributes, locations, ints, names as they
    are; dicts and tuples item by item)."""
    names: dict[int, object] = {}
    objects: list[tuple[object, object]] = []

    def name(obj: object, label: object) -> None:
        names[id(obj)] = label
        objects.append((label, obj))

    ops = [("module", n, op) for n, op in enumerate(module.walk())]
    for c, block in enumerate(blocks):
        name(block, ("copy block", c))
        ops += [(c, n, op) for n, op in enumerate(o for top in block.ops for o in top.walk())]
    for where, n, op in ops:
        name(op, ("op", where, n))
        for r in op.results:
            name(r, ("result", where, n, r.index))
        for u in op._operand_uses:
            name(u, ("use", where, n, u.index))
        for k, region in enumerate(op.regions):
            name(region, ("region", where, n, k))
            for b, block in enumerate(region.blocks):
                name(block, ("block", where, n, k, b))
                for a in block.args:
                    name(a, ("arg", where, n, k, b, a.index))

    def value(v: object) -> object:
        if id(v) in names:
            return names[id(v)]
        if isinstance(v, dict):
            return ("dict", [(k, value(x)) for k, x in v.items()])
        if isinstance(v, tuple | list):
            return (type(v), [value(x) for x in v])
        assert not isinstance(v, Operation | SSAValue | Block | Region | Use), v
        return v

    return {
        label: (type(obj), [(k, value(v)) for k, v in vars(obj).items()]) for label, obj in objects
    }


@pytest.mark.parametrize("odd", ["", "create", "multi-block"])
def test_copy_template_stamps_region_ops_as_clone_ops(odd: str, monkeypatch) -> None:
    # `REGIONS`'s body copied three times into new blocks (for %i -> three different
    # values), once stamped from one template and once by `clone_ops`: every object
    # of the module and of the copies holds the same fields with the same values
    # (uses in the same order in every use list, with the same back links; the same
    # parent, first/last/prev/next links of ops, blocks and regions; the same block
    # arguments), set in the same order
    made = {}
    for how in ("stamp", "clone_ops"):
        module = parse_module(REGIONS)
        if odd:
            _with_odd_ops(module, odd)
        loop = _loop(module)
        ops = [op for op in loop.body.block.ops if not isinstance(op, pto.YieldOp)]
        template = CopyTemplate(ops, [loop.induction_var])
        blocks = []
        off = next(op for op in ops if isinstance(op, arith.MuliOp)).result
        for v in [off, loop.lower_bound, loop.induction_var]:
            block = Block()
            if how == "stamp":
                with monkeypatch.context() as patch:
                    if not odd:  # (and the template makes them itself)
                        patch.setattr(tileir.stamping, "_clone_one_pass", None)
                    copies = template.stamp([v], block)
            else:
                copies = clone_ops(ops, {loop.induction_var: v})
                append_ops(block, copies)
            assert copies == list(block.ops)
            blocks.append(block)
        made[how] = (module, blocks)
    (stamped, ours), (cloned, theirs) = made["stamp"], made["clone_ops"]
    assert print_module(stamped) == print_module(cloned)
    assert _canonical(stamped, ours) == _canonical(cloned, theirs)
    copied = [op for block in ours for top in block.ops for op in top.walk()]
    assert len({id(op.properties) for op in copied}) == len(copied)
    assert len({id(op.attributes) for op in copied}) == len(copied)
    assert sum(isinstance(op, pto.StageOp) for op in copied) == 9
    args = [a for op in copied for r in op.regions for b in r.blocks for a in b.args]
    assert len(args) == 3 * {"": 3, "create": 4, "multi-block": 5}[odd]
    assert all(a.first_use for a in args if not isinstance(a.block.parent_op(), _AnyRegionsOp))
