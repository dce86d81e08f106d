"""`loop-unroll`: the cascade schedule, the IR it writes, and that programs keep their
meaning (numpy back end) for static and dynamic bounds and any factor list."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import run
from tileir.dialect import pto
from tileir.ir import make_context, parse_module
from tileir.passes.loop_unroll import Chunk, LoopUnrollPass, trip_count, unroll_schedule
from tileir.testing import check_pass, modules

# --------------------------------------------------------------------------- schedule


def test_schedule_13_rows_8_4_2_1() -> None:
    # 13 = 8 + 4 + 1: one chunk of 8 at 0, one of 4 at 8, one of 1 at 12.
    assert unroll_schedule(0, 13, 1, [8, 4, 2, 1]) == [
        Chunk(8, 0, 1),
        Chunk(4, 8, 1),
        Chunk(1, 12, 1),
    ]


def test_schedule_empty_and_single() -> None:
    assert unroll_schedule(0, 0, 1, [8, 4, 2, 1]) == []
    assert unroll_schedule(5, 3, 1, [4, 1]) == []
    assert unroll_schedule(0, 1, 1, [8, 4, 2, 1]) == [Chunk(1, 0, 1)]


def test_schedule_non_dividing_factors() -> None:
    # [5, 2] on 13 iterations: 2 chunks of 5 (10), 1 of 2 (12), 1 of 1 (13).
    assert unroll_schedule(0, 13, 1, [5, 2]) == [Chunk(5, 0, 2), Chunk(2, 10, 1), Chunk(1, 12, 1)]
    # step 3 from 2 to 20: indices 2, 5, ..., 17 (6 of them) -> one chunk of 4, one of 2.
    assert unroll_schedule(2, 20, 3, [4, 2]) == [Chunk(4, 2, 1), Chunk(2, 14, 1)]


factor_lists = st.lists(st.integers(1, 9), min_size=1, max_size=4, unique=True)


@given(factor_lists, st.integers(-20, 40), st.integers(-20, 60), st.integers(1, 5))
def test_schedule_visits_every_index_once_in_order(factors, start, stop, step) -> None:
    visited = [i for c in unroll_schedule(start, stop, step, factors) for i in c.indices(step)]
    assert visited == list(range(start, stop, step))
    assert trip_count(start, stop, step) == len(range(start, stop, step))


# --------------------------------------------------------------------------- coverage in IR

K = 48
"""Length of the shift register that records the visited indices."""


def _visit_recorder(start: int, stop: int | None, step: int, factors: list[int]) -> str:
    """A kernel whose loop shifts x[i] (= i + 1) into a K-long register each iteration
    and writes the register out: `out` is the visit sequence, zero-padded on the left.
    `stop=None` makes the bound dynamic (the row count of x)."""
    rows = "?" if stop is None else str(max(stop, 1) + 8)
    dyn = ' attributes {dynamic_dims = {x = ["S"]}}' if stop is None else ""
    ub = (
        "%S = memref.dim %x, %c0 : memref<?x1xf32>"
        if stop is None
        else f"%S = arith.constant {stop} : index"
    )
    unroll = f" unroll [{', '.join(map(str, sorted(set(factors) | {1}, reverse=True)))}]"
    return f"""
pto.kernel @visits(%x: memref<{rows}x1xf32>, %out: memref<1x{K}xf32>){dyn} {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {start} : index
  %st = arith.constant {step} : index
  {ub}
  %zero = arith.constant 0.0 : f32
  %init = pto.full %zero : f32 -> tensor<1x{K}xf32>
  %reg = pto.tensor "reg" : memref<1x{K}xf32>
  pto.assemble %init into %reg[0, 0] : tensor<1x{K}xf32>, memref<1x{K}xf32>
  pto.loop %i = %lb to %S step %st name "visit"{unroll} {{
    %old = pto.view %reg[0, 1] : memref<1x{K}xf32> -> tensor<1x{K - 1}xf32>
    %v = pto.view %x[%i, 0] : memref<{rows}x1xf32> -> tensor<1x1xf32>
    %new = pto.concat dim 1, %old, %v : tensor<1x{K - 1}xf32>, tensor<1x1xf32> -> tensor<1x{K}xf32>
    pto.assemble %new into %reg[0, 0] : tensor<1x{K}xf32>, memref<1x{K}xf32>
  }}
  %all = pto.view %reg[0, 0] : memref<1x{K}xf32> -> tensor<1x{K}xf32>
  pto.assemble %all into %out[0, 0] : tensor<1x{K}xf32>, memref<1x{K}xf32>
}}
"""


def _expected_visits(indices: list[int]) -> np.ndarray:
    seq = [float(i + 1) for i in indices][-K:]
    return np.array([[0.0] * (K - len(seq)) + seq], dtype=np.float32)


@given(
    factor_lists,
    st.integers(0, 6),
    st.integers(0, 30),
    st.integers(1, 4),
    st.booleans(),
)
def test_unrolled_ir_visits_every_index_once_in_order(factors, start, stop, step, dynamic) -> None:
    text = _visit_recorder(start, None if dynamic else stop, step, factors)
    module = parse_module(text)
    rows = max(stop, 1) + 8
    x = (np.arange(rows, dtype=np.float32) + 1).reshape(rows, 1)
    if dynamic:
        x = x[: max(stop, 1)]
        bound = max(stop, 1)
    else:
        bound = stop
    expected = _expected_visits(list(range(start, bound, step)))
    LoopUnrollPass().apply(make_context(), module)
    module.verify()
    assert not any(isinstance(op, pto.LoopOp) and op.unroll_list for op in module.walk())
    np.testing.assert_array_equal(run(module, {"x": x})["out"], expected)


# --------------------------------------------------------------------------- IR shape

ROWS13 = """
pto.kernel @rows(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [8, 4, 2, 1] {
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %r = pto.exp %t : tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
"""


def _loops(module) -> list[tuple[str, int]]:
    """(name, copies of the body) of every loop, copies counted by its assembles."""
    out = []
    for op in module.walk():
        if isinstance(op, pto.LoopOp):
            n = sum(isinstance(o, pto.AssembleOp) for o in op.body.walk())
            out.append((op.loop_name.data if op.loop_name else "", n))
    return out


def test_rows13_chunk_loops() -> None:
    module = parse_module(ROWS13)
    LoopUnrollPass().apply(make_context(), module)
    assert _loops(module) == [
        ("rows_LoopUnroll8", 8),
        ("rows_LoopUnroll4", 4),
        ("rows_LoopUnroll1", 1),
    ]


def test_options_factors_cap_and_names() -> None:
    module = parse_module(ROWS13)
    LoopUnrollPass(factors=(3,)).apply(make_context(), module)
    # 13 = 4 x 3 + 1
    assert _loops(module) == [("rows_LoopUnroll3", 3), ("rows_LoopUnroll1", 1)]

    module = parse_module(ROWS13)
    # The body has 3 ops: 8 x 3 = 24 > 12 is dropped, 4 x 3 = 12 stays.
    LoopUnrollPass(max_body_ops=12).apply(make_context(), module)
    assert _loops(module) == [("rows_LoopUnroll4", 4), ("rows_LoopUnroll1", 1)]

    module = parse_module(ROWS13)
    LoopUnrollPass(loops=("other",)).apply(make_context(), module)
    assert _loops(module) == [("rows", 1)]


def test_loop_without_unroll_list_is_left_alone() -> None:
    module = parse_module(ROWS13.replace(" unroll [8, 4, 2, 1]", ""))
    LoopUnrollPass().apply(make_context(), module)
    assert _loops(module) == [("rows", 1)]


def test_bad_factors_option_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="loop-unroll: option factors"):
        LoopUnrollPass(factors=(0, 2)).apply(make_context(), parse_module(ROWS13))


# --------------------------------------------------------------------------- loop state

BEGIN_END = """
pto.kernel @state(%x: memref<{rows}x4xf32>, %first: memref<1x4xf32>, %last: memref<1x4xf32>){dyn} {{
  %c0 = arith.constant 0 : index
  %lb = arith.constant {start} : index
  %st = arith.constant {step} : index
  {ub}
  pto.loop %i = %lb to %ub step %st name "l" unroll [{factors}] {{
    %t = pto.view %x[%i, 0] : memref<{rows}x4xf32> -> tensor<1x4xf32>
    %b = pto.is_loop_begin %i
    scf.if %b {{
      pto.assemble %t into %first[0, 0] : tensor<1x4xf32>, memref<1x4xf32>
    }}
    %e = pto.is_loop_end %i
    scf.if %e {{
      pto.assemble %t into %last[0, 0] : tensor<1x4xf32>, memref<1x4xf32>
    }}
  }}
}}
"""


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize(
    ("start", "stop", "step", "factors"),
    [(0, 13, 1, "8, 4, 2, 1"), (2, 20, 3, "4, 2, 1"), (1, 2, 1, "3, 2, 1"), (0, 11, 2, "5, 2, 1")],
)
def test_is_loop_begin_end_keep_their_meaning(dynamic, start, stop, step, factors) -> None:
    text = BEGIN_END.format(
        rows="?" if dynamic else stop,
        dyn=' attributes {dynamic_dims = {x = ["S"]}}' if dynamic else "",
        ub="%ub = memref.dim %x, %c0 : memref<?x4xf32>"
        if dynamic
        else f"%ub = arith.constant {stop} : index",
        start=start,
        step=step,
        factors=factors,
    )
    module = parse_module(text)
    x = np.arange(stop * 4, dtype=np.float32).reshape(stop, 4) + 1
    indices = list(range(start, stop, step))
    LoopUnrollPass().apply(make_context(), module)
    module.verify()
    got = run(module, {"x": x})
    np.testing.assert_array_equal(got["first"], x[indices[0]][None])
    np.testing.assert_array_equal(got["last"], x[indices[-1]][None])
    remaining = {op.name for op in module.walk()}
    # Static bounds keep PyPTO's own queries (on the chunk loops); dynamic ones compare.
    assert ("arith.cmpi" in remaining) == dynamic


# --------------------------------------------------------------------------- loop_unroll

LOOP_UNROLL = """
pto.kernel @chunks(%out: memref<{n}x1xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cn = arith.constant {n} : index
  pto.loop_unroll %i, %len = %c0 to %cn step %c1 name "tok" unroll [{factors}] {{
    %as_int = arith.index_cast %len : index to i32
    %as_f = arith.sitofp %as_int : i32 to f32
    %t = pto.full %as_f : f32 -> tensor<1x1xf32>
    pto.assemble %t into %out[%i, 0] : tensor<1x1xf32>, memref<{n}x1xf32>
  }}
}}
"""


def test_loop_unroll_chunks_get_constant_lengths() -> None:
    module = parse_module(LOOP_UNROLL.format(n=13, factors="8, 4, 2, 1"))
    before = run(module, {})["out"]
    LoopUnrollPass().apply(make_context(), module)
    module.verify()
    assert not any(isinstance(op, pto.LoopUnrollOp) for op in module.walk())
    assert _loops(module) == [
        ("tok_LoopUnroll8", 1),
        ("tok_LoopUnroll4", 1),
        ("tok_LoopUnroll1", 1),
    ]
    expected = np.zeros((13, 1), np.float32)
    expected[0], expected[8], expected[12] = 8, 4, 1  # chunk starts hold chunk lengths
    np.testing.assert_array_equal(run(module, {})["out"], expected)
    np.testing.assert_array_equal(before, expected)


# --------------------------------------------------------------------------- generated programs


@given(modules(templates=("rows", "accumulate", "softmax", "cube")))
def test_generated_programs_keep_their_outputs(module) -> None:
    check_pass(LoopUnrollPass(), module, n_inputs=2)


@given(modules(templates=("rows", "accumulate")), factor_lists)
def test_generated_programs_with_forced_factors(module, factors) -> None:
    check_pass(LoopUnrollPass(factors=tuple(factors)), module, n_inputs=2)


def test_fast_builders_make_what_xdsl_makes() -> None:
    """The constants and index additions loop-unroll makes with `new_op` have every
    field the xDSL constructors give (`from_int_and_width`, `AddiOp(a, b)`)."""
    import dataclasses

    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType

    from tileir.passes.loop_unroll import _add, _const

    def fields(op) -> dict[str, object]:
        out = {}
        for f in dataclasses.fields(op):
            value = getattr(op, f.name)
            if f.name == "results":
                value = [(type(r), r.type, r.index, r.name_hint) for r in value]
            elif f.name == "_operand_uses":
                value = [(u.index, u.operation is op) for u in value]
            out[f.name] = value
        return out

    made: list = []
    a, b = _const(made, 5), _const(made, 7)
    assert fields(made[0]) == fields(arith.ConstantOp.from_int_and_width(5, IndexType()))
    assert _const(made, 5).owner.value is made[0].value  # (one shared attribute per value)
    assert fields(_add(a, b)) == fields(arith.AddiOp(a, b))


@pytest.mark.parametrize(
    "header",
    ['name "rows" idx_name "r" unroll [2, 1] parallel', "unroll [2, 1]", 'idx_name "k"'],
)
def test_fast_chunk_loop_is_what_loop_op_makes(header: str) -> None:
    """A chunk loop (made by `new_op`) has every field `LoopOp(...)` gives it, the same
    properties in the same order, and the same body block (one index argument named as
    the original loop's); its terminator every field `YieldOp()` gives."""
    import dataclasses

    from xdsl.dialects.builtin import UNKNOWN_LOC

    from tileir.ir import new_op, print_module
    from tileir.passes.loop_unroll import _Bounds, _new_chunk_loop, _plan, chunk_name

    module = parse_module(
        "pto.kernel @k(%x: memref<8x4xf32>) {\n"
        "  %c0 = arith.constant 0 : index\n  %c8 = arith.constant 8 : index\n"
        "  %c1 = arith.constant 1 : index\n"
        f"  pto.loop %row = %c0 to %c8 step %c1 {header} {{\n  }}\n}}"
    )
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    c = _plan(_Bounds.of(loop), [2, 1], [], False)[0]
    made, j = _new_chunk_loop(loop, c)
    name = loop.loop_name.data if loop.loop_name is not None else None
    reference = pto.LoopOp(
        c.lb,
        c.ub,
        c.step,
        name=chunk_name(name, c.factor),
        idx_name=loop.idx_name.data if loop.idx_name is not None else None,
        parallel=loop.parallel is not None,
    )
    reference.induction_var.name_hint = loop.induction_var.name_hint

    def fields(op) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in dataclasses.fields(op):
            value = getattr(op, f.name)
            if f.name == "_operand_uses":
                value = [(u.index, u.operation is op) for u in value]
            elif f.name == "regions":
                value = [
                    [
                        (
                            [(type(a), a.type, a.name_hint, a.location, a.index) for a in b.args],
                            list(b.ops),
                        )
                        for b in r.blocks
                    ]
                    for r in value
                ]
            out[f.name] = value
        out["property order"] = list(op.properties)
        return out

    assert fields(made) == fields(reference)
    assert j is made.induction_var and j.name_hint == "row"
    assert made.body.parent is made and made.body.block.parent is made.body
    yield_op = new_op(pto.YieldOp, (), (), {}, {}, UNKNOWN_LOC)
    assert fields(yield_op) == fields(pto.YieldOp())
    made.body.block.add_op(yield_op)
    reference.body.block.add_op(pto.YieldOp())
    assert print_module(made) == print_module(reference)
