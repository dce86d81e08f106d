"""Run `pto` kernels on numpy arrays: lower a kernel once into a plan, then run the plan.

The plan is a tree of closures over slot indices into one flat environment list (a
value's slot is fixed when the kernel is lowered), so running an op costs one Python
call plus its numpy work: there is no dispatch on the op's type and no dictionary of
SSA values per iteration. A PyPTO function's rule is on its binding (`tileir.bindings`),
in the family modules of `tileir.backends.numpy.rules`; `RULES` here holds the rules of
the IR's own structure (`arith`, `scf`, stages, loops). Each rule is a thin shim over a
function of `tileir.backends.numpy.semantics`, which holds what every op means; the
rules only add what the IR adds: valid shapes, memory and control flow.
A few calls go through `fastpaths`, which gives the same bits faster.

Runtime values: index and integer scalars are Python ints holding their signed
fixed-width value (`i1` are bools; `arith_semantics` says what each `arith` op does);
float scalars are Python floats rounded to their declared type; tiles are
`(array, valid)` pairs where `valid` is None for a fully valid tile or a tuple of valid
sizes (tail tiles);
memrefs (kernel arguments, `pto.tensor` workspaces) are numpy arrays written in place.

Valid-shape rules (what a tail tile holds):

- `pto.view` copies the valid region and zero-fills the rest; without `valid` a view of
  a memref must lie inside it, a view of a tile inherits the source's valid region
  (clipped to the window).
- Elementwise ops compute on the whole arrays and take, per dim, the minimum valid size
  over the operands (a broadcast dim of size 1 takes the others').
- Reductions and the matmul contraction only read the valid region of the reduced dim;
  `topk` only ranks the valid part (and pads with zeros when fewer than k are valid).
- `pto.assemble` writes only the valid region.
- `reshape` and `full` without `valid` give fully valid tiles; `full` with `valid` holds
  its value everywhere (only the valid region counts).
- `concat` is valid along its dim up to the first operand that is not fully valid there.

Independent loops run as whole-array numpy operations ("batched"): see `_LoopBatcher`.
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref, scf, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tileir.backends.numpy import arith_semantics as A
from tileir.backends.numpy import fastpaths, semantics
from tileir.diagnostics import TileirError, describe_runtime_error, error_at
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type

Env = list[Any]
Step = Callable[[Env], None]


class _Fallback(Exception):
    """Raised inside a batched loop body when a case is not batchable after all; the
    loop then runs iteration by iteration (always safe, see `_LoopBatcher`)."""


# --------------------------------------------------------------------------- helpers


def numpy_dtype(t: Attribute) -> np.dtype:
    """numpy dtype of a tensor / memref / scalar type's element type."""
    if isinstance(t, TensorType | MemRefType):
        t = t.get_element_type()
    return element_type(t).numpy


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType | MemRefType)
    return tuple(t.get_shape())


def _rank(v: SSAValue) -> int:
    return len(_shape(v.type))


def _is_tile(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


def _scalar(value: Any) -> int:
    """An index value that must be the same in every batched iteration, as an int."""
    if isinstance(value, np.ndarray):
        first = int(value.flat[0])
        if value.size and not np.all(value == first):
            raise _Fallback
        return first
    return int(value)


def _normalize_valid(valid: tuple[int, ...] | None, shape: Sequence[int]) -> tuple[int, ...] | None:
    if valid is None or tuple(valid) == tuple(shape):
        return None
    return tuple(valid)


def _tile_shape(arr: np.ndarray, rank: int) -> tuple[int, ...]:
    return arr.shape[arr.ndim - rank :]


class _IndexList:
    """A mixed static / dynamic index list (`[0, %i]`) read from the environment."""

    def __init__(self, compiler: _Compiler, values: Sequence[int | SSAValue] | None):
        self.present = values is not None
        self.spec = tuple(
            (compiler.slot(v), 0) if isinstance(v, SSAValue) else (-1, int(v))
            for v in (values or ())
        )
        self.static = all(s < 0 for s, _ in self.spec)
        self.constant = tuple(c for _, c in self.spec)
        if not self.static:
            # Each static entry gets a slot of its own holding its value, so that one
            # `itemgetter` (a C call) reads the whole list.
            slots = []
            for s, c in self.spec:
                if s < 0:
                    s = compiler.new_slot()
                    compiler.template[s] = c
                slots.append(s)
            if len(slots) == 1:
                (only,) = slots
                self._get: Callable[[Env], tuple[Any, ...]] = lambda env: (env[only],)
            else:
                self._get = operator.itemgetter(*slots)

    def __call__(self, env: Env) -> tuple[Any, ...]:
        if self.static:
            return self.constant
        return self._get(env)


def _result_shape(compiler: _Compiler, t: Attribute, sizes: Sequence[SSAValue]) -> _IndexList:
    """The shape of a result type whose `?` dims come from `sizes` operands."""
    it = iter(sizes)
    return _IndexList(compiler, [next(it) if s == DYNAMIC_INDEX else s for s in _shape(t)])


# --------------------------------------------------------------------------- compiler


Rule = Callable[["_Compiler", Operation], "Step | None"]
RULES: dict[type[Operation], Rule] = {}


def rule(*op_types: type[Operation]) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for t in op_types:
            RULES[t] = fn
        return fn

    return register


def _rule_for(op: Operation) -> Rule | None:
    """`RULES` holds the rules of the IR's own structure (arith, scf, stages, loops);
    a PyPTO function's rule is on its binding."""
    found = RULES.get(type(op))
    if found is not None:
        return found
    # Imported here: the bindings import this module's rules.
    from tileir.bindings import BY_OP

    binding = BY_OP.get(type(op))
    return binding.numpy if binding is not None else None


class _Compiler:
    """Lowers one kernel into steps. `batch` is set while lowering the batched form of a
    loop body, where index values may be arrays (one entry per iteration) and tiles may
    carry one leading batch dim."""

    def __init__(self) -> None:
        self.slots: dict[SSAValue, int] = {}
        self.template: list[Any] = []
        self.batch = False
        self.vectorize = True
        """Whether independent loops may run batched (False: the reference path)."""
        self.read_only: set[SSAValue] = set()
        """Memrefs no op writes (kernel inputs never assembled into)."""
        self.batchers: list[_LoopBatcher] = []
        self.loop_slots: dict[Operation, tuple[int, int]] = {}
        """loop op -> (slot of its (lb, ub, step), slot of its chunk length or -1)."""
        self.dies_at: dict[Operation, tuple[SSAValue, ...]] = {}
        """op -> the tiles computed in its block whose last use it is."""

    def slot(self, value: SSAValue) -> int:
        s = self.slots.get(value)
        if s is None:
            s = self.slots[value] = len(self.template)
            self.template.append(None)
        return s

    def new_slot(self) -> int:
        self.template.append(None)
        return len(self.template) - 1

    def block(self, block: Block) -> Step:
        self.dies_at.update(self._last_uses(block))
        steps: list[tuple[Step, Operation]] = []
        for op in block.ops:
            if isinstance(op, pto.YieldOp | scf.YieldOp):
                continue
            r = _rule_for(op)
            if r is None:
                raise error_at(op, f"the numpy back end does not support '{op.name}'")
            step = r(self, op)
            if step is not None:
                steps.append((step, op))
        return _sequence(self._free_dead_tiles(steps))

    @staticmethod
    def _last_uses(block: Block) -> dict[Operation, tuple[SSAValue, ...]]:
        """Each tile computed in `block` (and not yielded) under the op of the block
        that uses it last."""
        last_use: dict[SSAValue, Operation] = {}
        for op in block.ops:
            for user in op.walk():
                for v in user.operands:
                    last_use[v] = op
        kept = {v for v in (block.last_op.operands if block.last_op else ())}
        dying: dict[Operation, list[SSAValue]] = {}
        for op in block.ops:
            for v in op.results:
                if isinstance(v.type, TensorType) and v not in kept:
                    dying.setdefault(last_use.get(v, op), []).append(v)
        return {op: tuple(vs) for op, vs in dying.items()}

    def _free_dead_tiles(
        self, steps: list[tuple[Step, Operation]]
    ) -> list[tuple[Step, Operation, tuple[int, ...]]]:
        """Drop each tile computed in `block` from the environment after its last use in
        the block, as Python frees a temporary: on large tiles this keeps the memory the
        run holds (and the fresh pages it touches) close to what hand-written numpy
        needs."""
        stepped = {op for _, op in steps}  # the others' values live in the template
        out: list[tuple[Step, Operation, tuple[int, ...]]] = []
        for step, op in steps:
            dead = tuple(self.slot(v) for v in self.dies_at.get(op, ()) if v.owner in stepped)
            out.append((step, op, dead))
        return out


def _sequence(steps: Sequence[tuple[Step, Operation, tuple[int, ...]]]) -> Step:
    """Run the steps in order; after each, drop the slots of the tiles it used last
    (the third item). A Python exception of a step is reported at its op."""
    items = tuple((f, dead) for f, _, dead in steps)
    op_of = {id(f): op for f, op, _ in steps}

    def run(env: Env) -> None:
        f = None
        try:
            for f, dead in items:
                f(env)
                for s in dead:
                    env[s] = None
        except (TileirError, _Fallback):
            raise
        except Exception as e:
            op = op_of.get(id(f))
            if op is None:
                raise
            raise error_at(op, f"'{op.name}': {describe_runtime_error(e)}") from e

    return run


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
        env[r] = env[src].shape[_scalar(env[d])]

    return run


@rule(tensor.DimOp)
def _tensor_dim(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, tensor.DimOp)
    rank = _rank(op.source)
    src, d, r = c.slot(op.source), c.slot(op.index), c.slot(op.result)

    def run(env: Env) -> None:
        arr = env[src][0]
        env[r] = arr.shape[arr.ndim - rank + _scalar(env[d])]

    return run


@rule(pto.TransferOp)
def _transfer(c: _Compiler, op: Operation) -> Step:
    a, r = c.slot(op.operands[0]), c.slot(op.results[0])

    def run(env: Env) -> None:
        env[r] = env[a]

    return run


def _yield_copy(c: _Compiler, block: Block, results: Sequence[SSAValue]) -> Step | None:
    term = block.last_op
    if not results:
        return None
    assert term is not None
    pairs = [(c.slot(v), c.slot(res)) for v, res in zip(term.operands, results)]

    def copy(env: Env) -> None:
        for s, t in pairs:
            env[t] = env[s]

    return copy


@rule(pto.StageOp, pto.StitchOp)
def _stage(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.StageOp | pto.StitchOp)
    body = c.block(op.body.block)
    out = _yield_copy(c, op.body.block, op.outputs)
    if out is None:
        return body

    def run(env: Env) -> None:
        body(env)
        out(env)

    return run


@rule(scf.IfOp)
def _if(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, scf.IfOp)
    cond = c.slot(op.cond)

    def branch(region: Any) -> Step:
        if not region.blocks:
            return lambda env: None
        block = region.block
        body = c.block(block)
        out = _yield_copy(c, block, op.output)
        if out is None:
            return body

        def run(env: Env) -> None:
            body(env)
            out(env)

        return run

    then, other = branch(op.true_region), branch(op.false_region)

    def run(env: Env) -> None:
        if env[cond]:
            then(env)
        else:
            other(env)

    return run


def _loop_bounds(c: _Compiler, op: pto._LoopBase) -> Callable[[Env], tuple[int, int, int]]:
    lb, ub, st = c.slot(op.lower_bound), c.slot(op.upper_bound), c.slot(op.step)

    def bounds(env: Env) -> tuple[int, int, int]:
        step = env[st]
        if step <= 0:
            raise error_at(op, f"'{op.name}' step {step} must be positive")
        return env[lb], env[ub], step

    return bounds


@rule(pto.LoopOp)
def _loop(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.LoopOp)
    info = c.new_slot()
    c.loop_slots[op] = (info, -1)
    bounds = _loop_bounds(c, op)
    iv = c.slot(op.induction_var)
    body = c.block(op.body.block)
    batcher = _LoopBatcher.create(c, op, body) if c.vectorize and not c.batch else None

    def run(env: Env) -> None:
        lb, ub, step = bounds(env)
        env[info] = (lb, ub, step)
        if batcher is not None and batcher.try_run(env, lb, ub, step):
            return
        for i in range(lb, ub, step):
            env[iv] = i
            body(env)

    return run


@rule(pto.LoopUnrollOp)
def _loop_unroll(c: _Compiler, op: Operation) -> Step:
    assert isinstance(op, pto.LoopUnrollOp)
    info = c.new_slot()
    chunk = c.slot(op.chunk_length)
    c.loop_slots[op] = (info, chunk)
    bounds = _loop_bounds(c, op)
    iv = c.slot(op.induction_var)
    factors = sorted(op.factors, reverse=True)
    body = c.block(op.body.block)

    def run(env: Env) -> None:
        lb, ub, step = bounds(env)
        env[info] = (lb, ub, step)
        i = lb
        while i < ub:
            left = -(-(ub - i) // step)
            n = next((f for f in factors if f <= left), 0)
            if n == 0:
                raise error_at(op, f"no unroll factor of {factors} fits the {left} iterations left")
            env[iv] = i
            env[chunk] = n
            body(env)
            i += n * step

    return run


# --------------------------------------------------------------------------- batching


_BATCHABLE: tuple[type[Operation], ...] = (
    arith.ConstantOp,
    *_INT_BINARY,
    *_INT_CASTS,
    arith.CmpiOp,
    arith.SelectOp,
    memref.DimOp,
    pto.ViewOp,
    pto.AssembleOp,
    pto.CastOp,
    pto.WhereOp,
    pto.FullOp,
    pto.ReshapeOp,
    pto.TransposeOp,
    pto.ConcatOp,
    pto.UnsqueezeOp,
    pto.ExpandCloneOp,
    pto.GathermaskOp,
    pto.TransferOp,
    pto.StageOp,
    pto.StitchOp,
    pto.YieldOp,
    pto.SetVecTileShapesOp,
    pto.SetCubeTileShapesOp,
    pto.SetSemanticLabelOp,
    pto.SetOptionsOp,
)

_INDEX_OPS: tuple[type[Operation], ...] = (
    *_INT_BINARY,
    *_INT_CASTS,
    arith.CmpiOp,
    arith.SelectOp,
    memref.DimOp,
    pto.GetTensorDataOp,
)


def _batchable_op(op: Operation) -> bool:
    if isinstance(op, pto.GetTensorDataOp):
        # one element per iteration, gathered at once; of a tile it would be per batch row
        return isinstance(op.source.type, MemRefType)
    if isinstance(op, _INDEX_OPS):
        # batched values are int64 / bool arrays
        return all(_is_index_like(r.type) and _width(r.type) <= 64 for r in op.results)
    if isinstance(op, _BATCHABLE):
        return True
    # Imported here: the bindings and their rules import this module.
    from tileir.backends.numpy.rules import elementwise, reduce
    from tileir.bindings import BY_OP

    binding = BY_OP.get(type(op))
    return binding is not None and binding.numpy in (
        elementwise.unary_rule,
        elementwise.binary_rule,
        reduce.reduce_rule,
    )


def _read_batched(
    src: np.ndarray, offs: Sequence[Any], shape: tuple[int, ...], valid: tuple[int, ...]
) -> np.ndarray:
    """The tiles at `offs` (ints, or arrays with one entry per iteration) stacked on a
    new leading dim: the same values `read_window` gives for each iteration."""
    varying = [d for d, o in enumerate(offs) if isinstance(o, np.ndarray)]
    n = len(offs[varying[0]])
    for d, o in enumerate(offs):
        lo, hi = (int(o.min()), int(o.max())) if isinstance(o, np.ndarray) else (o, o)
        if lo < 0 or hi + valid[d] > src.shape[d]:
            raise _Fallback  # the iteration-by-iteration run reports it
    if len(varying) == 1:
        d = varying[0]
        o = offs[d]
        region = [
            slice(x, x + v) if k != d else slice(None) for k, (x, v) in enumerate(zip(offs, valid))
        ]
        base = int(o[0])
        if valid[d] and np.array_equal(o, base + valid[d] * np.arange(n)):
            region[d] = slice(base, base + n * valid[d])
            slab = src[tuple(region)]
            slab = slab.reshape(slab.shape[:d] + (n, valid[d]) + slab.shape[d + 1 :])
        else:
            idx = o[:, None] + np.arange(valid[d])
            slab = np.take(src[tuple(region)], idx, axis=d)
        data = np.moveaxis(slab, d, 0)
    else:
        data = np.stack(
            [
                src[tuple(slice(int(_at(x, k)), int(_at(x, k)) + v) for x, v in zip(offs, valid))]
                for k in range(n)
            ]
        )
    if valid == shape:
        return np.ascontiguousarray(data)
    out = np.zeros((n, *shape), src.dtype)
    out[(slice(None), *(slice(0, v) for v in valid))] = data
    return out


def _at(x: Any, k: int) -> Any:
    return x[k] if isinstance(x, np.ndarray) else x


def _batched_memory_view(
    src: int, r: int, offsets: _IndexList, valid_of: _IndexList, shape_of: _IndexList
) -> Step:
    def read(env: Env) -> None:
        shape = tuple(_scalar(s) for s in shape_of(env))
        valid = tuple(_scalar(v) for v in valid_of(env)) if valid_of.present else shape
        offs = offsets(env)
        if not any(isinstance(o, np.ndarray) for o in offs):
            offs = tuple(int(o) for o in offs)
            try:
                tile = semantics.read_window(env[src], offs, shape, valid)
            except semantics.SemanticsError:
                raise _Fallback from None
        else:
            tile = _read_batched(env[src], offs, shape, valid)
        env[r] = (tile, _normalize_valid(valid, shape))

    return read


def _batched_assemble(src: int, dst: int, offsets: _IndexList, rank: int) -> Step:
    def write(env: Env) -> None:
        arr, valid = env[src]
        target = env[dst]
        offs = offsets(env)
        batched = arr.ndim > rank
        shape = _tile_shape(arr, rank)
        v = valid or shape
        varying = [d for d, o in enumerate(offs) if isinstance(o, np.ndarray)]
        if not varying:
            # Every iteration writes the same window (the disjointness check allows
            # this only for one iteration): the last one wins, as in the sequential run.
            semantics.write_window(
                target, arr[-1] if batched else arr, [int(o) for o in offs], valid
            )
            return
        n = len(offs[varying[0]])
        if not batched:
            arr = np.broadcast_to(arr, (n, *arr.shape))
        data = arr[(slice(None), *(slice(0, x) for x in v))]
        if len(varying) == 1 and v[varying[0]]:
            d = varying[0]
            o = offs[d]
            base = int(o[0])
            if np.array_equal(o, base + v[d] * np.arange(n)):
                region = tuple(
                    slice(base, base + n * v[d]) if k == d else slice(int(x), int(x) + e)
                    for k, (x, e) in enumerate(zip(offs, v))
                )
                moved = np.moveaxis(data, 0, d)
                target[region] = moved.reshape(moved.shape[:d] + (n * v[d],) + moved.shape[d + 2 :])
                return
        for k in range(n):
            region = tuple(slice(int(_at(x, k)), int(_at(x, k)) + e) for x, e in zip(offs, v))
            target[region] = data[k]

    return write


def _windows_disjoint(windows: Sequence[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]) -> bool:
    """Whether the windows written by different iterations never overlap.

    `windows` holds, per assemble into one destination, its offsets and extents per dim
    (arrays of one entry per iteration). Two boxes are disjoint when they are disjoint
    in one dim; for each pair of assembles (an assemble with itself included) some dim
    must separate every pair of different iterations. Same-iteration overlaps are fine:
    the batched run keeps the program order within an iteration.
    """
    return all(
        any(_separated(oa[d], ea[d], ob[d], eb[d]) for d in range(len(oa)))
        for a, (oa, ea) in enumerate(windows)
        for ob, eb in windows[a:]
    )


def _separated(oa: np.ndarray, ea: np.ndarray, ob: np.ndarray, eb: np.ndarray) -> bool:
    """In one dim: no window [ob_j, ob_j + eb_j) overlaps [oa_k, oa_k + ea_k) for j != k."""
    order = np.argsort(ob, kind="stable")
    sb, se, si = ob[order], eb[order], order
    emax = int(se.max())
    # Candidates start in (oa - emax, oa + ea): found by binary search, then checked.
    lo = np.searchsorted(sb, oa - emax, side="right")
    hi = np.searchsorted(sb, oa + ea, side="left")
    count = hi - lo
    k = np.nonzero(count == 1)[0]
    j = lo[k]
    clash = (si[j] != k) & (sb[j] + se[j] > oa[k]) & (ea[k] > 0) & (se[j] > 0)
    if np.any(clash):
        return False
    for k in np.nonzero(count > 1)[0]:
        for j in range(lo[k], hi[k]):
            if si[j] != k and sb[j] + se[j] > oa[k] and ea[k] > 0 and se[j] > 0:
                return False
    return True


class _LoopBatcher:
    """Runs a `pto.loop` whose iterations are independent as whole-array numpy ops.

    Static conditions (checked when the kernel is lowered): the body holds only index
    arithmetic (element reads of memory included), views, assembles and row-local tile
    ops (elementwise, casts, reductions,
    layout ops; no matmul, gather or topk, whose numpy kernels may round differently on
    a different shape), no nested loops, branches or loop-state queries, and it never
    reads (views, element reads) a memref it writes (assembles).

    At run time the index arithmetic is evaluated for all iterations at once; iterations
    are grouped by their valid shapes (a tail is its own group), the windows written by
    different iterations must be disjoint, and every group of two or more iterations runs
    once with a leading batch dim on its tiles (the others run one by one). Each tile op
    is the same semantics call on an array with one more leading dim, and every op used
    here computes each element (or each reduced row) independently of that dim, so the
    bits equal the iteration-by-iteration run. Whenever something does not fit, the loop
    runs iteration by iteration instead; that is always safe, because the iterations
    only write memory the loop never reads.
    """

    def __init__(self, c: _Compiler, op: pto.LoopOp, general: Step):
        self.iv = c.slot(op.induction_var)
        self.general = general
        previous = c.batch
        c.batch = True
        try:
            self.body = c.block(op.body.block)
            index_ops = [o for o in op.body.walk() if isinstance(o, _INDEX_OPS)]
            self.index_steps = _sequence([(_rule_for(o)(c, o), o, ()) for o in index_ops])  # type: ignore[misc]
        finally:
            c.batch = previous
        shape_values: list[SSAValue] = []
        self.assembles: list[tuple[int, _IndexList, _IndexList, int]] = []
        for o in op.body.walk():
            if isinstance(o, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
                shape_values += list(o.valid_shape)
                shape_values += list(getattr(o, "sizes", ()))
            if isinstance(o, pto.AssembleOp):
                self.assembles.append(
                    (
                        c.slot(o.dst),
                        _IndexList(c, o.mixed_offsets),
                        _tile_extents(c, o.src),
                        c.slot(o.src),
                    )
                )
        self.shape_slots = sorted({c.slot(v) for v in shape_values})
        self.runs = 0
        """How many times the loop ran batched (for tests and benchmarks)."""

    @staticmethod
    def create(c: _Compiler, op: pto.LoopOp, general: Step) -> _LoopBatcher | None:
        written: set[SSAValue] = set()
        read: set[SSAValue] = set()
        for o in op.body.walk():
            if o is op:
                continue
            if not _batchable_op(o):
                return None
            if isinstance(o, pto.AssembleOp):
                written.add(o.dst)
            if isinstance(o, pto.ViewOp | pto.GetTensorDataOp) and isinstance(
                o.source.type, MemRefType
            ):
                read.add(o.source)
            for v in o.operands:
                if not isinstance(v.type, TensorType | MemRefType | IndexType | IntegerType):
                    # A float scalar computed in the loop would differ per iteration.
                    if _defined_inside(v, op) and not isinstance(v.owner, arith.ConstantOp):
                        return None
        if not written:
            return None
        # Memory is compared by root: writes through two names of one memory (or a read
        # of memory written under another name) are not checked disjoint window by window.
        roots = {pto.memory_root(v) for v in written}
        if len(roots) < len(written) or roots & {pto.memory_root(v) for v in read}:
            return None
        if not all(_index_computable(v, op) for v in _window_indices(op)):
            # A window index that only a stage (or another region) yields is not computed
            # by the batcher's index steps: run such loops one iteration at a time.
            return None
        batcher = _LoopBatcher(c, op, general)
        c.batchers.append(batcher)
        return batcher

    def try_run(self, env: Env, lb: int, ub: int, step: int) -> bool:
        ivals = np.arange(lb, ub, step, dtype=np.int64)
        n = len(ivals)
        if n < 2:
            return False
        env[self.iv] = ivals
        try:
            with np.errstate(divide="raise", invalid="raise"):
                self.index_steps(env)
        except (TileirError, ArithmeticError, _Fallback):
            return False
        keys = [np.broadcast_to(np.asarray(env[s], dtype=np.int64), (n,)) for s in self.shape_slots]
        if not self._disjoint(env, n):
            return False
        if keys:
            _, inverse = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            groups = [np.nonzero(inverse == g)[0] for g in range(int(inverse.max()) + 1)]
        else:
            groups = [np.arange(n)]
        try:
            for g in groups:
                if len(g) == 1:
                    env[self.iv] = int(ivals[g[0]])
                    self.general(env)
                else:
                    env[self.iv] = ivals[g]
                    self.body(env)
        except (_Fallback, TileirError):
            # Run it again one iteration at a time; a real error is reported there.
            return False
        self.runs += 1
        return True

    def _disjoint(self, env: Env, n: int) -> bool:
        by_dst: dict[int, list[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]] = {}
        for dst, offsets, extents, _ in self.assembles:
            offs = [np.broadcast_to(np.asarray(o, dtype=np.int64), (n,)) for o in offsets(env)]
            ext = tuple(np.broadcast_to(np.asarray(e, dtype=np.int64), (n,)) for e in extents(env))
            by_dst.setdefault(id(env[dst]), []).append((offs, ext))
        return all(_windows_disjoint(w) for w in by_dst.values())


def _window_indices(loop: Operation) -> list[SSAValue]:
    """The index values that place or size the loop's views and assembles."""
    values: list[SSAValue] = []
    for o in loop.walk():
        if isinstance(o, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
            values += [*o.valid_shape, *getattr(o, "sizes", ())]
        if isinstance(o, pto.ViewOp | pto.AssembleOp):
            values += list(o.offsets)
    return values


def _index_computable(v: SSAValue, loop: Operation) -> bool:
    """True when the batcher's index steps compute `v`: it comes from outside the loop,
    is the loop's index, or is index arithmetic over such values."""
    if not _defined_inside(v, loop):
        return True
    owner = v.owner
    if isinstance(owner, Block):
        return owner.parent_op() is loop
    if isinstance(owner, arith.ConstantOp):
        return True
    return isinstance(owner, _INDEX_OPS) and all(
        _index_computable(operand, loop) for operand in owner.operands
    )


def _defined_inside(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def _tile_extents(c: _Compiler, v: SSAValue) -> _IndexList:
    """An upper bound of the extents a tile writes: its valid shape operands where the
    tile comes straight from a view / full / reshape with `valid`, else its type's shape."""
    owner = v.owner
    if isinstance(owner, pto.ViewOp | pto.FullOp | pto.ReshapeOp):
        valid = owner.mixed_valid_shape
        if valid is not None:
            return _IndexList(c, valid)
    shape = _shape(v.type)
    if DYNAMIC_INDEX in shape:
        if isinstance(owner, pto.ViewOp | pto.FullOp):
            it = iter(owner.sizes)
            return _IndexList(c, [next(it) if s == DYNAMIC_INDEX else s for s in shape])
        return _IndexList(c, [2**62 if s == DYNAMIC_INDEX else s for s in shape])
    return _IndexList(c, list(shape))


# --------------------------------------------------------------------------- the plan


class Plan:
    """A kernel lowered for the numpy back end; call it with input arrays by name.

    >>> plan = compile_kernel(module)        # doctest: +SKIP
    >>> outputs = plan({"x": x})             # {"out": array}
    """

    def __init__(self, kernel: pto.KernelOp, vectorize: bool = True):
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.arg_names = kernel.names
        args = kernel.body.block.args
        self.arg_types = {n: a.type for n, a in zip(self.arg_names, args)}
        # Memory by its root (a memref a stage passes on is the argument it names).
        roots = {pto.memory_root(o.dst) for o in kernel.walk() if isinstance(o, pto.AssembleOp)}
        written = {a for a in args if a in roots}
        self.outputs = [n for n, a in zip(self.arg_names, args) if a in written]
        """Arguments some assemble writes: returned; zero-initialised unless given."""
        self.inputs = [n for n in self.arg_names if n not in self.outputs]
        """Arguments never written: required inputs."""
        c = _Compiler()
        c.read_only = {a for a in args if a not in written}
        self._arg_slots = [c.slot(a) for a in args]
        c.vectorize = vectorize
        self._body = c.block(kernel.body.block)
        self._template = c.template
        self._batchers = c.batchers

    @property
    def batched_runs(self) -> int:
        """How many loop executions so far ran as whole-array (batched) numpy ops."""
        return sum(b.runs for b in self._batchers)

    def dtype(self, name: str) -> np.dtype:
        return numpy_dtype(self.arg_types[name])

    def shape(self, name: str) -> tuple[int, ...]:
        """The declared shape of an argument, -1 for a dynamic dim."""
        return tuple(-1 if s == DYNAMIC_INDEX else s for s in _shape(self.arg_types[name]))

    def _bind(
        self, inputs: Mapping[str, np.ndarray], in_place: Collection[str] = ()
    ) -> dict[str, np.ndarray]:
        k = self.kernel
        unknown = sorted(set(inputs) - set(self.arg_names))
        if unknown:
            raise error_at(
                k,
                f"kernel @{self.name} has no argument {unknown[0]!r} "
                f"(its arguments: {', '.join(self.arg_names)})",
            )
        missing = [n for n in self.inputs if n not in inputs]
        if missing:
            raise error_at(
                k,
                f"kernel @{self.name}: missing input {missing[0]!r} ({self._describe(missing[0])})",
            )
        dims: dict[str, tuple[int, str]] = {}
        arrays: dict[str, np.ndarray] = {}
        for name in self.arg_names:
            if name not in inputs:
                continue
            x = np.asarray(inputs[name])
            if x.dtype != self.dtype(name):
                raise error_at(
                    k,
                    f"kernel @{self.name}: input {name!r} has dtype {x.dtype}, expected "
                    f"{self.dtype(name)} ({self._describe(name)})",
                )
            declared = self.shape(name)
            if x.ndim != len(declared) or any(
                d != -1 and d != s for d, s in zip(declared, x.shape)
            ):
                raise error_at(
                    k,
                    f"kernel @{self.name}: input {name!r} has shape {list(x.shape)}, "
                    f"expected {self._describe(name)}",
                )
            names = iter(k.dynamic_names(name))
            for d, s in zip(declared, x.shape):
                if d != -1:
                    continue
                sym = next(names)
                if sym in dims and dims[sym][0] != s:
                    raise error_at(
                        k,
                        f"kernel @{self.name}: dynamic dim {sym} is {dims[sym][0]} in "
                        f"{dims[sym][1]!r} but {s} in {name!r}",
                    )
                dims[sym] = (s, name)
            if name in self.outputs:
                direct = name in in_place and x.flags.c_contiguous and x.flags.writeable
                arrays[name] = x if direct else np.array(x, copy=True, order="C")
            else:
                # The kernel never writes it: share the caller's data, read-only.
                arrays[name] = x.view()
                arrays[name].flags.writeable = False
        for name in self.outputs:
            if name in arrays:
                continue
            names = iter(k.dynamic_names(name))
            shape = []
            for d in self.shape(name):
                if d == -1:
                    sym = next(names)
                    if sym not in dims:
                        raise error_at(
                            k,
                            f"kernel @{self.name}: cannot size output {name!r}: its dynamic "
                            f"dim {sym} is not set by any input",
                        )
                    d = dims[sym][0]
                shape.append(d)
            arrays[name] = np.zeros(shape, self.dtype(name))
        return arrays

    def _describe(self, name: str) -> str:
        dyn = iter(self.kernel.dynamic_names(name))
        dims = [str(next(dyn)) if d == -1 else str(d) for d in self.shape(name)]
        return f"[{', '.join(dims)}] {self.dtype(name)}"

    def __call__(
        self, inputs: Mapping[str, np.ndarray], *, in_place: Collection[str] = ()
    ) -> dict[str, np.ndarray]:
        """Run the kernel; returns the written arguments by name. Inputs are copied, never
        modified, except the outputs named in `in_place`: those the kernel writes
        straight into (as a device does, and without a copy in and out) when they are
        C-contiguous and writeable, and the result is then that same array (`is`)."""
        arrays = self._bind(inputs, in_place)
        env = list(self._template)
        for name, s in zip(self.arg_names, self._arg_slots):
            env[s] = arrays[name]
        # A run makes no reference cycles, but its many short-lived arrays trigger the
        # cyclic collector, whose full passes walk every live object (the xDSL IR too)
        # and can cost more than the run: pause it for the run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with np.errstate(all="ignore"):
                self._body(env)
        finally:
            if collecting:
                gc.enable()
        return {n: arrays[n] for n in self.outputs}


def find_kernel(module: ModuleOp | pto.KernelOp, kernel: str | None = None) -> pto.KernelOp:
    """The kernel named `kernel`, or the only kernel of the module."""
    if isinstance(module, pto.KernelOp):
        return module
    kernels = [op for op in module.walk() if isinstance(op, pto.KernelOp)]
    if kernel is not None:
        for k in kernels:
            if k.sym_name.data == kernel:
                return k
        names = ", ".join(f"@{k.sym_name.data}" for k in kernels) or "none"
        raise TileirError(f"error: no kernel @{kernel} in the module (kernels: {names})")
    if len(kernels) != 1:
        names = ", ".join(f"@{k.sym_name.data}" for k in kernels) or "none"
        raise TileirError(
            f"error: the module has {len(kernels)} kernels ({names}); name one with kernel="
        )
    return kernels[0]


def compile_kernel(
    module: ModuleOp | pto.KernelOp, kernel: str | None = None, *, vectorize: bool = True
) -> Plan:
    """Lower a kernel once; the plan runs it on any inputs. `vectorize=False` runs
    every loop iteration by iteration (the reference for the batched path)."""
    return Plan(find_kernel(module, kernel), vectorize=vectorize)


def run(
    module: ModuleOp | pto.KernelOp,
    inputs: Mapping[str, np.ndarray],
    kernel: str | None = None,
    *,
    vectorize: bool = True,
) -> dict[str, np.ndarray]:
    """Run a kernel on numpy arrays (by argument name); returns the arrays of the
    arguments it writes (outputs and in-out tensors) by name. Inputs are copied, never
    modified; outputs not given start as zeros."""
    return compile_kernel(module, kernel, vectorize=vectorize)(inputs)


def random_inputs(
    module: ModuleOp | pto.KernelOp | Plan,
    kernel: str | None = None,
    seed: int = 0,
    dims: Mapping[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Random arrays for a kernel's required inputs, in their declared dtypes.

    Floats are standard normal (rounded to the dtype); integers are in [0, 4), so that
    they are in range as indices of gather / index_select on any dim of size >= 4; bools
    are fair coins. Dynamic dims take their size from `dims` (by symbol name), else 16.
    `module` may be the kernel's plan (then it is not lowered again).
    """
    plan = module if isinstance(module, Plan) else compile_kernel(module, kernel)
    rng = np.random.default_rng(seed)
    k = plan.kernel
    out: dict[str, np.ndarray] = {}
    for name in plan.inputs:
        syms = iter(k.dynamic_names(name))
        shape = [(dims or {}).get(next(syms), 16) if d == -1 else d for d in plan.shape(name)]
        dtype = plan.dtype(name)
        if dtype == np.bool_:
            out[name] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":
            out[name] = rng.integers(0, 4, shape).astype(dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return out
