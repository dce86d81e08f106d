"""The numpy rules of MLIR's `arith` on scalars and of `memref.dim` / `tensor.dim`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Operation

from tileir.backends.numpy import arith_semantics as A
from tileir.backends.numpy import fastpaths
from tileir.backends.numpy.compiler import _Compiler, _rank, _shape, numpy_dtype, rule
from tileir.backends.numpy.runtime import Env, Step, scalar_index
from tileir.diagnostics import error_at

# --------------------------------------------------------------------------- scalars
# MLIR's `arith` on scalars: each rule is a shim over `arith_semantics` (the spec, with
# the value conventions and what is poison); it reads widths, predicates and flags off
# the op once, when the kernel is lowered.


def _width(t: Attribute) -> int:
    """The bit width an integer / index scalar computes in."""
    if isinstance(t, IndexType):
        return A.INDEX_WIDTH
    assert isinstance(t, IntegerType)
    return t.width.data


def _float_dtype(t: Attribute) -> np.dtype:
    """numpy dtype of a scalar float type (f64 too: arith may compute in it)."""
    return np.dtype(np.float64) if isinstance(t, Float64Type) else numpy_dtype(t)


def _flags(op: Operation, name: str) -> frozenset[str]:
    attr = op.properties.get(name)
    return frozenset(str(f.value) for f in getattr(attr, "data", ()))


def _constant_value(op: arith.ConstantOp) -> Any:
    value = op.value
    if isinstance(value, IntegerAttr):
        return A.value(value.value.data, _width(value.type))
    if isinstance(value, FloatAttr):
        # The constant's value is its declared type's: round the double once.
        return float(np.asarray(value.value.data, dtype=_float_dtype(value.type)))
    if isinstance(value, DenseIntOrFPElementsAttr):
        t = op.result.type
        arr = np.asarray(
            value.get_values(),
            dtype=np.float64 if isinstance(value.get_element_type(), AnyFloat) else np.int64,
        )
        arr = arr.astype(numpy_dtype(t))
        shape = _shape(t)
        return (np.broadcast_to(arr, shape).copy() if arr.size == 1 else arr.reshape(shape), None)
    raise error_at(op, f"the numpy back end does not support the constant {value}")


@rule(arith.ConstantOp)
def _constant(c: _Compiler, op: Operation) -> Step | None:
    assert isinstance(op, arith.ConstantOp)
    c.template[c.slot(op.result)] = _constant_value(op)
    return None


def _is_index_like(t: Attribute) -> bool:
    return isinstance(t, IndexType | IntegerType)


def _scalar_operands(op: Operation, what: str, ok: Callable[[Attribute], bool]) -> None:
    for v in (*op.operands, *op.results):
        if not ok(v.type):
            raise error_at(op, f"the numpy back end runs '{op.name}' only on {what} scalars")


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


_INT_BINARY: tuple[type[Operation], ...] = (
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.DivSIOp,
    arith.DivUIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.FloorDivSIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.ShLIOp,
    arith.ShRSIOp,
    arith.ShRUIOp,
    arith.MaxSIOp,
    arith.MinSIOp,
    arith.MaxUIOp,
    arith.MinUIOp,
)


@rule(*_INT_BINARY)
def _int_binary(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "index and integer", _is_index_like)
    name, width = op.name.removeprefix("arith."), _width(op.results[0].type)
    fn = fastpaths.int_binary(name, width, _flags(op, "overflowFlags"))
    a, b, r = c.slot(op.operands[0]), c.slot(op.operands[1]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = fn(env[a], env[b])

    return run


@rule(arith.CmpiOp)
def _cmpi(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, arith.CmpiOp)
    _scalar_operands(op, "index and integer", _is_index_like)
    pred = A.CMPI_PREDICATES[op.predicate.value.data]
    width = _width(op.lhs.type)
    a, b, r = c.slot(op.lhs), c.slot(op.rhs), c.slot(op.result)

    def run(env: Env) -> None:
        env[r] = A.cmpi_elementwise(pred, width, env[a], env[b])

    return run


@rule(arith.SelectOp)
def _select(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, arith.SelectOp)
    if isinstance(op.result.type, TensorType):
        raise error_at(op, "the numpy back end runs 'arith.select' only on scalars; use pto.where")
    cond, a, b, r = c.slot(op.cond), c.slot(op.lhs), c.slot(op.rhs), c.slot(op.result)
    if c.batch:

        def run(env: Env) -> None:
            env[r] = np.where(env[cond], env[a], env[b])

    else:

        def run(env: Env) -> None:
            env[r] = A.select(env[cond], env[a], env[b])

    return run


_INT_CASTS: dict[type[Operation], Callable[[int, int, int], Any]] = {
    arith.IndexCastOp: A.index_cast,
    arith.ExtSIOp: A.extsi,
    arith.ExtUIOp: A.extui,
    arith.TruncIOp: A.trunci,
}


@rule(*_INT_CASTS)
def _int_cast(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "index and integer", _is_index_like)
    fn = _INT_CASTS[type(op)]
    width, to = _width(op.operands[0].type), _width(op.results[0].type)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = A.elementwise(lambda x: fn(x, width, to), env[a])

    return run


_EXTENDED: dict[type[Operation], Callable[[int, int, int], tuple[Any, Any]]] = {
    arith.AddUIExtendedOp: A.addui_extended,
    arith.MulUIExtendedOp: A.mului_extended,
    arith.MulSIExtendedOp: A.mulsi_extended,
}


@rule(*_EXTENDED)
def _extended(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "index and integer", _is_index_like)
    fn, width = _EXTENDED[type(op)], _width(op.operands[0].type)
    a, b = c.slot(op.operands[0]), c.slot(op.operands[1])
    r0, r1 = c.slot(op.results[0]), c.slot(op.results[1])

    def run(env: Env) -> None:
        env[r0], env[r1] = fn(width, env[a], env[b])

    return run


_FLOAT_BINARY: tuple[type[Operation], ...] = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
)


@rule(*_FLOAT_BINARY)
def _float_binary(c: _Compiler, op: Operation) -> Step:
    """Scalar float arithmetic, computed in the declared type (f32 stays f32)."""
    _scalar_operands(op, "float", _is_float)
    name, dtype = op.name.removeprefix("arith."), _float_dtype(op.results[0].type)
    flags = _flags(op, "fastmath")
    a, b, r = c.slot(op.operands[0]), c.slot(op.operands[1]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = A.float_binary(name, dtype, env[a], env[b], flags)

    return run


@rule(arith.NegfOp)
def _negf(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "float", _is_float)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = A.negf(env[a])

    return run


@rule(arith.CmpfOp)
def _cmpf(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, arith.CmpfOp)
    _scalar_operands(op, "float", lambda t: _is_float(t) or t == IntegerType(1))
    pred = A.CMPF_PREDICATES[op.predicate.value.data]
    flags = _flags(op, "fastmath")
    a, b, r = c.slot(op.lhs), c.slot(op.rhs), c.slot(op.result)

    def run(env: Env) -> None:
        env[r] = A.cmpf(pred, env[a], env[b], flags)

    return run


@rule(arith.SIToFPOp, arith.UIToFPOp)
def _int_to_float(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "integer and float", lambda t: _is_float(t) or _is_index_like(t))
    fn = A.sitofp if isinstance(op, arith.SIToFPOp) else A.uitofp
    width, dtype = _width(op.operands[0].type), _float_dtype(op.results[0].type)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = fn(env[a], width, dtype)

    return run


@rule(arith.FPToSIOp, arith.FPToUIOp)
def _float_to_int(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "integer and float", lambda t: _is_float(t) or _is_index_like(t))
    fn = A.fptosi if isinstance(op, arith.FPToSIOp) else A.fptoui
    width = _width(op.results[0].type)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = fn(env[a], width)

    return run


@rule(arith.ExtFOp, arith.TruncFOp)
def _float_cast(c: _Compiler, op: Operation) -> Step:
    _scalar_operands(op, "float", _is_float)
    fn = A.extf if isinstance(op, arith.ExtFOp) else A.truncf
    dtype = _float_dtype(op.results[0].type)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = fn(env[a], dtype)

    return run


@rule(arith.BitcastOp)
def _bitcast(c: _Compiler, op: Operation) -> Step:
    def side(t: Attribute) -> np.dtype | int:
        return _width(t) if _is_index_like(t) else _float_dtype(t)

    _scalar_operands(op, "integer and float", lambda t: _is_float(t) or _is_index_like(t))
    source, target = side(op.operands[0].type), side(op.results[0].type)
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = A.bitcast(env[a], source, target)

    return run


@rule(memref.DimOp)
def _memref_dim(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, memref.DimOp)
    src, d, r = c.slot(op.source), c.slot(op.index), c.slot(op.result)

    def run(env: Env) -> None:
        env[r] = env[src].shape[scalar_index(env[d])]

    return run


@rule(tensor.DimOp)
def _tensor_dim(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, tensor.DimOp)
    rank = _rank(op.source)
    src, d, r = c.slot(op.source), c.slot(op.index), c.slot(op.result)

    def run(env: Env) -> None:
        arr = env[src][0]
        env[r] = arr.shape[arr.ndim - rank + scalar_index(env[d])]

    return run
