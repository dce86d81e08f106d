"""Random scalar integer arithmetic for the program generator (`strategies`).

Kernels compute index and integer scalars (offsets, valid sizes, fill values, loop
state), and passes fold, move and duplicate that arithmetic; on a fixed-width machine
`true + true` is false and `-1 <u 0` is false. `int_expr` writes a small DAG of `arith`
ops on any width (i1 / i8 / i16 / i32 / i64 / index), with signed and unsigned
division, remainders, shifts, min / max, `cmpi` on every predicate, i1 logic, `select`
and the casts between widths, from edge-value constants (0, 1, -1, MIN, MAX) and the
loop's row offset when there is one, and casts the result to the type the caller
needs: a `pto.full` value, a tile-scalar operand, a `pto.where` condition.

The programs stay defined: divisors are nonzero constants other than -1 (and i1 divides
only unsigned), shift amounts are masked below the width, and no `overflow<nsw/nuw>`
flags are written (MLIR's poison is the back end's error; see `arith_semantics`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

from tileir.backends.numpy.arith_semantics import INDEX_WIDTH

WIDTHS = ("i1", "i8", "i16", "i32", "i64", "index")
"""The scalar types generated; the first shrinks best."""

_WRAPPING = (arith.AddiOp, arith.SubiOp, arith.MuliOp)
_BITWISE = (arith.AndIOp, arith.OrIOp, arith.XOrIOp)
_MINMAX = (arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp)
_SIGNED_DIV = (arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp)
_UNSIGNED_DIV = (arith.DivUIOp, arith.RemUIOp, arith.CeilDivUIOp)
_SHIFTS = (arith.ShLIOp, arith.ShRSIOp, arith.ShRUIOp)
_KINDS = ("wrap", "bitwise", "minmax", "div", "shift", "cmp", "select", "cast")
DIVISORS = (2, 3, 1, 7, -2, -3, 5)
"""Nonzero and not -1, so that no division is undefined."""


def scalar_type(name: str) -> Attribute:
    return IndexType() if name == "index" else IntegerType(int(name[1:]))


def width_of(t: Attribute) -> int:
    return INDEX_WIDTH if isinstance(t, IndexType) else t.width.data  # type: ignore[attr-defined]


def edge_values(width: int) -> tuple[int, ...]:
    if width == 1:
        return (0, -1)
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    return (0, 1, -1, 2, hi, lo, hi - 1, lo + 1, 100, -100)


def int_expr(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    emit: Callable[[Operation], SSAValue],
    target: Attribute,
    leaves: Sequence[SSAValue] = (),
    max_ops: int = 4,
) -> SSAValue:
    """An SSA value of `target` (an integer or index type) computed by a random DAG of
    up to `max_ops` arith ops on a random width. `leaves` are index values the DAG may
    read (the loop's row offset); `emit` inserts an op and returns its result."""
    t = scalar_type(draw(st.sampled_from(WIDTHS)))
    w = width_of(t)

    def const(v: int, ty: Attribute = t) -> SSAValue:
        return emit(arith.ConstantOp(IntegerAttr(v, ty, truncate_bits=True)))

    def leaf() -> SSAValue:
        if leaves and draw(st.integers(0, 2)) == 0:
            return convert(emit, leaves[draw(st.integers(0, len(leaves) - 1))], t, draw)
        v = draw(st.one_of(st.sampled_from(edge_values(w)), st.integers(-(2**70), 2**70)))
        return const(v)

    pool = [leaf()]
    for _ in range(draw(st.integers(1, max_ops))):
        a = pool[draw(st.integers(0, len(pool) - 1))]
        b = pool[draw(st.integers(0, len(pool) - 1))] if draw(st.booleans()) else leaf()
        kind = draw(st.sampled_from(_KINDS))
        if kind == "wrap":
            r = emit(draw(st.sampled_from(_WRAPPING))(a, b))
        elif kind == "bitwise":
            r = emit(draw(st.sampled_from(_BITWISE))(a, b))
        elif kind == "minmax":
            r = emit(draw(st.sampled_from(_MINMAX))(a, b))
        elif kind == "div":
            ops = _UNSIGNED_DIV if w == 1 else _SIGNED_DIV + _UNSIGNED_DIV
            divisor = const(1 if w == 1 else draw(st.sampled_from(DIVISORS)))
            r = emit(draw(st.sampled_from(ops))(a, divisor))
        elif kind == "shift":
            amount = emit(arith.AndIOp(b, const(w - 1)))  # w is a power of two
            r = emit(draw(st.sampled_from(_SHIFTS))(a, amount))
        elif kind == "cmp":
            pred = draw(st.integers(0, 9))
            r = convert(emit, emit(arith.CmpiOp(a, b, pred)), t, draw)
        elif kind == "select":
            cond = emit(arith.CmpiOp(a, b, draw(st.integers(0, 9))))
            if draw(st.booleans()):  # i1 logic on two conditions
                other = emit(arith.CmpiOp(b, leaf(), draw(st.integers(0, 9))))
                cond = emit(draw(st.sampled_from(_BITWISE + (arith.AddiOp,)))(cond, other))
            r = emit(arith.SelectOp(cond, a, b))
        else:  # through another width and back
            other = scalar_type(draw(st.sampled_from(WIDTHS)))
            r = convert(emit, convert(emit, a, other, draw), t, draw)
        pool.append(r)
    return convert(emit, pool[-1], target, draw)


def convert(
    emit: Callable[[Operation], SSAValue],
    v: SSAValue,
    target: Attribute,
    draw: Callable[[st.SearchStrategy[Any]], Any],
) -> SSAValue:
    """`v` as `target`: index_cast to / from index, sign or zero extension (at
    random) or truncation between integer widths."""
    source = v.type
    if source == target:
        return v
    if isinstance(source, IndexType) or isinstance(target, IndexType):
        return emit(arith.IndexCastOp(v, target))
    assert isinstance(source, IntegerType) and isinstance(target, IntegerType)
    if target.width.data < source.width.data:
        return emit(arith.TruncIOp(v, target))
    ext = arith.ExtSIOp if draw(st.booleans()) else arith.ExtUIOp
    return emit(ext(v, target))
