"""Pass contracts: the IR properties a pass requires and the ones it establishes.

A pass states them as class attributes, `requires` and `establishes` (tuples of
property names; xDSL's own passes state none). Each property is a predicate on the IR
itself, not a flag set by the pass that made it, so it holds just as well for a module
printed by one `tileir-opt` run and read by the next, or written by hand. The pipeline
runners (`apply_pipeline`, `default`, `tileir-opt`) check every pass's requirements
before it runs; a missing one is an error naming the pass that establishes it:

    $ tileir-opt -p semantic-labels plain.mlir
    error: pass 'semantic-labels' requires staged IR (every tile op inside a
    `pto.stage`), which pass 'vc-split' establishes: run `-p vc-split,semantic-labels`

With `--verify-each` the runners also check, after each pass, that what it claims to
establish holds (a broken claim is a bug in the pass, reported as such).

| property         | holds when                                              | established by  |
| ---------------- | ------------------------------------------------------- | --------------- |
| `staged`         | every tile op sits inside a `pto.stage`                 | `vc-split`        |
| `labelled`       | staged, and every stage has a semantic label            | `semantic-labels` |
| `unrolled`       | no loop holds an unroll list `loop-unroll` would expand | `loop-unroll`     |
| `legal-for-pypto`| no `pto.stage` / `pto.stitch` / `pto.transfer` is left   | `pypto-legalize`  |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xdsl.ir import Operation
from xdsl.passes import ModulePass

from tileir.diagnostics import TileirError
from tileir.ir import block_ops


@dataclass(frozen=True)
class Property:
    """A fact about the IR that passes may require or establish."""

    name: str
    holds_when: str
    """What the predicate checks, in the words of the error message."""
    provider: str
    """Name of the pass that establishes it."""
    holds: Callable[[Operation], bool]


def _region_ops(root: Operation, into: Callable[[Operation], bool] = lambda op: True):
    """The ops with regions inside `root`, descending into those for which `into` holds:
    the properties are about region ops (or about the ops outside stages), and looking
    only at `op.regions` of the others is much cheaper than a test of their class."""
    stack = [root]
    while stack:
        for region in stack.pop().regions:
            for block in region.blocks:
                for op in block_ops(block):  # (xDSL's `block.ops` is a Python iterator)
                    if op.regions:
                        yield op
                        if into(op):
                            stack.append(op)


def _staged(module: Operation) -> bool:
    from tileir.dialect.pto import StageOp
    from tileir.passes.stages import kernels, op_unit

    # Every op inside a stage is staged: only the ops outside stages are looked at.
    def outside(root: Operation):
        stack = [root]
        while stack:
            for region in stack.pop().regions:
                for block in region.blocks:
                    for op in block_ops(block):
                        if not op.regions:
                            yield op
                        elif not isinstance(op, StageOp):
                            stack.append(op)

    return all(op_unit(op) is None for kernel in kernels(module) for op in outside(kernel))


def _labelled(module: Operation) -> bool:
    from tileir.dialect.pto import StageOp

    return _staged(module) and all(
        op.label is not None for op in _region_ops(module) if isinstance(op, StageOp)
    )


def _unrolled(module: Operation) -> bool:
    from tileir.dialect.pto import LoopOp, LoopUnrollOp
    from tileir.passes.loop_unroll import left_to_pypto

    for op in _region_ops(module):
        if isinstance(op, LoopUnrollOp):
            return False
        if isinstance(op, LoopOp) and op.factors not in ([], [1]) and not left_to_pypto(op):
            return False
    return True


def _legal_for_pypto(module: Operation) -> bool:
    from tileir.dialect.pto import StageOp, StitchOp, TransferOp
    from tileir.passes.stages import walk_ops

    return not any(isinstance(op, StageOp | StitchOp | TransferOp) for op in walk_ops(module))


PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in (
        Property("staged", "every tile op inside a `pto.stage`", "vc-split", _staged),
        Property(
            "labelled",
            "every tile op inside a `pto.stage` with a semantic label",
            "semantic-labels",
            _labelled,
        ),
        Property(
            "unrolled",
            "no loop with an unroll list that loop-unroll would expand",
            "loop-unroll",
            _unrolled,
        ),
        Property(
            "legal-for-pypto",
            "no `pto.stage`, `pto.stitch` or `pto.transfer` left",
            "pypto-legalize",
            _legal_for_pypto,
        ),
    )
}


def requires(p: ModulePass) -> tuple[str, ...]:
    return tuple(getattr(p, "requires", ()))


def establishes(p: ModulePass) -> tuple[str, ...]:
    return tuple(getattr(p, "establishes", ()))


def _property(name: str, p: ModulePass) -> Property:
    try:
        return PROPERTIES[name]
    except KeyError:
        raise TileirError(
            f"error: pass '{p.name}' names an unknown IR property {name!r} "
            f"(known: {', '.join(PROPERTIES)})"
        ) from None


def check_requires(p: ModulePass, module: Operation) -> None:
    """Raise a `TileirError` naming the providing pass if a requirement of `p` fails."""
    for name in requires(p):
        prop = _property(name, p)
        if not prop.holds(module):
            raise TileirError(
                f"error: pass '{p.name}' requires {name} IR ({prop.holds_when}), which pass "
                f"'{prop.provider}' establishes: run `-p {prop.provider},{p.name}`"
            )


def check_establishes(p: ModulePass, module: Operation) -> None:
    """Raise a `TileirError` if `p` did not establish what it declares (a pass bug)."""
    for name in establishes(p):
        prop = _property(name, p)
        if not prop.holds(module):
            raise TileirError(
                f"error: internal: pass '{p.name}' should establish {name} IR "
                f"({prop.holds_when}) but did not"
            )


def expand(passes: Iterable[ModulePass]) -> list[ModulePass]:
    """`passes` with every composite pass (one with a `passes()` method, as `default`)
    replaced by its steps, so that contracts and verification apply to each step."""
    out: list[ModulePass] = []
    for p in passes:
        steps = getattr(p, "passes", None)
        out += expand(steps()) if callable(steps) else [p]
    return out
