"""`pypto-legalize`: turn tileir's structure into PyPTO's flat form, with the settings
PyPTO 0.2.0 needs. The PyPTO writer (`emitter`) prints the result one statement per op.

Contract. Requires: verified `pto` IR (stages, stitch groups and transfers allowed).
Establishes: no `pto.stage`, `pto.stitch` or `pto.transfer` is left; every tile op
(except the rank-exempt ones below) runs under a vector tile shape of its result's rank;
each `is_loop_begin / is_loop_end` has one use, right after it. The output verifies
(`lower_for_pypto` checks it), and legal IR is a fixed point.

- `pto.stage` / `pto.stitch` bodies are inlined (their results become the yielded
  values), `pto.transfer` is the identity. A stage's `label` / `tile` / `cube`
  attributes become `set_semantic_label` / `set_vec_tile_shapes` /
  `set_cube_tile_shapes` statements right before the stage's first tile op, but only
  where that setting is not already in force there (the user's own settings inside
  the stage body count; at the top of a loop body nothing counts as in force, since
  PyPTO traces a body once per unroll factor). The stitch group size goes to PyPTO
  through the kernel's `jit_options.runtime_options.stitch_function_max_num`, which the
  `stitch` pass sets.
- PyPTO 0.2.0 fails with only `Run pass failed` when the vector tile shape in force
  has a different rank than an op's result. Before every tile op (except `view`,
  `reshape` and the Cube's ops, which PyPTO does not check) whose rank differs from
  the shape in force, a `set_vec_tile_shapes` is inserted: the user's last shape cut to
  its last dims or padded with leading 1s (the last dim, which the 32-byte rule is
  about, is kept), or the result shape where the user set none. Within a loop body the
  shape in force at the top is the one before the loop, and, when the body changes it,
  also the one at the end of the body (PyPTO traces the body once per unroll factor
  with the settings left by the previous trace).
- `is_loop_begin / is_loop_end` are pure, so passes may move them away from their
  `scf.if`; PyPTO only accepts them written in the `if` itself, so each use gets its
  own query right before it.

Before / after (`-p pypto-legalize`; more in tests/filecheck/passes/pypto_legalize.mlir):

```mlir
%y = pto.stage vector label "post" tile [8, 32] {
  %s = pto.sum %m, 1 : tensor<8x32xf32> -> tensor<8xf32>
  pto.yield %s : tensor<8xf32>
} -> tensor<8xf32>
// becomes
pto.set_semantic_label "post"
pto.set_vec_tile_shapes [8, 32]
pto.set_vec_tile_shapes [32]
%s = pto.sum %m, 1 : tensor<8x32xf32> -> tensor<8xf32>
```
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tileir.bindings.matmul import CUBE_OPS
from tileir.diagnostics import verify_located
from tileir.dialect import pto

__all__ = ["PyptoLegalizePass", "lower_for_pypto"]

_RANK_EXEMPT = (pto.ViewOp, pto.ReshapeOp, pto.TransferOp, *CUBE_OPS)
"""Tile ops whose result rank PyPTO 0.2.0 does not check against the vector tile shape
(the seed kernels view and reshape across ranks; the Cube's ops run on the Cube tiles)."""


_UNKNOWN = ("?",)
"""A setting whose value differs between the ways control can reach a point."""


@dataclass
class _Settings:
    """The settings in force at a point of the program, as PyPTO traces it."""

    vec: tuple = ()
    cube: tuple = ()
    label: tuple = ()

    def copy(self) -> _Settings:
        return _Settings(self.vec, self.cube, self.label)

    def apply(self, op: Operation) -> bool:
        if isinstance(op, pto.SetVecTileShapesOp):
            self.vec = tuple(op.shape.get_values())
        elif isinstance(op, pto.SetCubeTileShapesOp):
            self.cube = _cube_values(op)
        elif isinstance(op, pto.SetSemanticLabelOp):
            self.label = (op.label.data,)
        else:
            return False
        return True

    def join(self, other: _Settings) -> _Settings:
        def meet(a: tuple, b: tuple) -> tuple:
            return a if a == b else _UNKNOWN

        return _Settings(
            meet(self.vec, other.vec), meet(self.cube, other.cube), meet(self.label, other.label)
        )


def _cube_values(op: pto.SetCubeTileShapesOp) -> tuple:
    vals = [*op.m.get_values(), *op.k.get_values(), *op.n.get_values()]
    return (*vals, op.enable_split_k is not None)


def _is_tile_op(op: Operation) -> bool:
    """An op that works on tiles (a unit op in PyPTO's sense): it has a tensor operand
    or result and is not a setting, a transfer or a region."""
    if isinstance(op, pto.SETTING_OPS) or op.regions:
        return False
    values = [*op.operands, *op.results]
    return any(isinstance(v.type, TensorType) for v in values)


def regions_of(op: Operation) -> Iterator[Block]:
    for region in op.regions:
        yield from region.blocks


def _flatten(block: Block, state: _Settings) -> _Settings:
    """Inline the stages and stitch groups of `block` (see `lower_for_pypto`)."""
    for op in list(block.ops):
        if state.apply(op):
            continue
        if isinstance(op, pto.TransferOp):
            op.result.replace_all_uses_with(op.input)
            Rewriter.erase_op(op)
        elif isinstance(op, pto.StageOp):
            _materialise_stage_settings(op, state.copy())
            state = _flatten(op.body.block, state)
            _inline(op)
        elif isinstance(op, pto.StitchOp):
            state = _flatten(op.body.block, state)
            _inline(op)
        elif isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            # PyPTO traces a body once per unroll factor / path, each trace starting
            # with the settings the previous one left: unknown here.
            _flatten(op.body.block, _Settings(_UNKNOWN, _UNKNOWN, _UNKNOWN))
            state = _Settings(_UNKNOWN, _UNKNOWN, _UNKNOWN)
        elif isinstance(op, scf.IfOp):
            ends = [_flatten(b, state.copy()) for b in regions_of(op)]
            if len(ends) == 1:
                ends.append(state)
            state = ends[0].join(ends[1])
    return state


def _materialise_stage_settings(stage: pto.StageOp, state: _Settings) -> None:
    """Insert the stage's settings before its first tile op where not in force."""
    first = None
    for op in stage.body.block.ops:
        if state.apply(op):
            continue
        if op.regions or (_is_tile_op(op) and not isinstance(op, pto.TransferOp)):
            first = op
            break
    if first is None:
        return
    wanted: list[Operation] = []
    if stage.label is not None and state.label != (stage.label.data,):
        wanted.append(pto.SetSemanticLabelOp(stage.label.data))
    if stage.tile_shape is not None and state.vec != tuple(stage.tile_shape.get_values()):
        wanted.append(pto.SetVecTileShapesOp(stage.tile_shape.get_values()))
    if stage.cube_tile is not None:
        v = list(stage.cube_tile.get_values())
        if state.cube[:6] != tuple(v) or state.cube == _UNKNOWN:
            wanted.append(pto.SetCubeTileShapesOp(v[0:2], v[2:4], v[4:6]))
    Rewriter.insert_op(wanted, InsertPoint.before(first))


def _inline(op: pto.StageOp | pto.StitchOp) -> None:
    block = op.body.block
    term = block.last_op
    yielded = list(term.operands) if isinstance(term, pto.YieldOp) else []
    for res, val in zip(op.results, yielded, strict=True):
        res.replace_all_uses_with(val)
    for inner in list(block.ops):
        if inner is term:
            continue
        inner.detach()
        Rewriter.insert_op(inner, InsertPoint.before(op))
    Rewriter.erase_op(op)


@dataclass
class _RankState:
    user: tuple[int, ...] | None
    """The vector tile shape the program set last (inserted shapes do not count)."""
    current: tuple | None
    """The shape in force; `_UNKNOWN` where paths disagree, None before any."""


def _adapt(shape: Sequence[int], rank: int) -> list[int]:
    shape = list(shape)
    if len(shape) >= rank:
        return shape[len(shape) - rank :]
    return [1] * (rank - len(shape)) + shape


def _fix_ranks(block: Block, state: _RankState) -> _RankState:
    """Insert `set_vec_tile_shapes` where an op's rank differs from the shape in force."""
    for op in list(block.ops):
        if isinstance(op, pto.SetVecTileShapesOp):
            shape = tuple(op.shape.get_values())
            state = _RankState(shape, shape)
            continue
        if isinstance(op, pto.LoopOp | pto.LoopUnrollOp):
            body = op.body.block
            end = _fix_ranks(body, _RankState(state.user, state.current))
            if end.current != state.current:
                # A later trace of the body starts where the previous one ended.
                _fix_ranks(body, _RankState(end.user, _UNKNOWN))
                state = _RankState(end.user, _UNKNOWN)
            else:
                state = end
            continue
        if isinstance(op, scf.IfOp):
            ends = [_fix_ranks(b, _RankState(state.user, state.current)) for b in regions_of(op)]
            if len(ends) == 1:
                ends.append(state)
            same = ends[0].current == ends[1].current
            state = _RankState(ends[0].user, ends[0].current if same else _UNKNOWN)
            continue
        if isinstance(op, _RANK_EXEMPT) or not _is_tile_op(op):
            continue
        results = [r for r in op.results if isinstance(r.type, TensorType)]
        if not results:
            continue
        shape = results[0].type.get_shape()
        if state.current is not None and state.current != _UNKNOWN:
            if len(state.current) == len(shape):
                continue
        base = state.user if state.user is not None else [1 if d < 0 else d for d in shape]
        new = tuple(_adapt(base, len(shape)))
        Rewriter.insert_op(pto.SetVecTileShapesOp(new), InsertPoint.before(op))
        state = _RankState(state.user, new)
    return state


def _loop_state_at_uses(kernel: pto.KernelOp) -> None:
    """Give each use of `is_loop_begin` / `is_loop_end` its own query right before it:
    PyPTO only accepts them written in the `if` itself, and they are pure, so passes
    may have moved them away from their `scf.if`."""
    for op in [o for o in kernel.walk() if isinstance(o, pto.IsLoopBeginOp | pto.IsLoopEndOp)]:
        for use in list(op.result.uses):
            if use.operation.prev_op is op and len(list(op.result.uses)) == 1:
                continue
            query = type(op)(op.index)
            Rewriter.insert_op(query, InsertPoint.before(use.operation))
            use.operation.operands[use.index] = query.result
        if not op.result.uses:
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class PyptoLegalizePass(ModulePass):
    """`pypto-legalize`: rewrite every kernel into PyPTO's flat, statement-ordered form
    with the settings PyPTO 0.2.0 needs (the contract is the module docstring)."""

    name = "pypto-legalize"
    establishes: ClassVar[tuple[str, ...]] = ("legal-for-pypto",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, pto.KernelOp)]:
            _flatten(kernel.body.block, _Settings())
            _loop_state_at_uses(kernel)
            _fix_ranks(kernel.body.block, _RankState(None, None))


def lower_for_pypto(module: ModuleOp) -> ModuleOp:
    """A verified copy of `module` after `pypto-legalize`. `emit_module(m)` prints
    exactly `lower_for_pypto(m)`, so this is what the frontend reads back from the
    emitted source."""
    out = module.clone()
    PyptoLegalizePass().apply(Context(), out)
    verify_located(out, "after pass 'pypto-legalize'")
    return out
