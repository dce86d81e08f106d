"""`default`: tileir's named pipeline, `tileir-opt -p default`.

Order, and why:

1. `inplace-reshape` - decided per reshape on the user's program, before copies exist;
2. `vc-split`, `semantic-labels` - stages (and their labels) are formed on one iteration,
   so that unrolling then copies whole stages and `stitch` can interleave iteration k's
   Cube stage with iteration k+1's Vector stage;
3. `loop-unroll` - only loops that carry an `unroll_list` (the user asked PyPTO to unroll
   them, so the explicit form is what PyPTO would compile anyway); no factors are
   invented: PyPTO's cost model made a one-row loop slower when unrolled, and fewer,
   larger tiles are what make kernels faster; loops whose explicit form PyPTO could not
   express (dynamic bounds and is_loop_begin / is_loop_end) are left to PyPTO;
4. `stitch` - groups of at most `max-functions` iterations (default: the kernel's own
   `stitch_function_max_num`, else PyPTO's 128, so PyPTO's runtime behaviour does not
   change unless asked);
5. `canonicalize`, `cse` - once, at the end: they fold the unrolled index arithmetic
   (`j + 1` ...) and drop what is dead (xDSL's canonicalize erases dead ops as it goes and
   runs region DCE after its walk; cse erases the duplicates it replaces, and a duplicate's
   operands are the kept op's, so it leaves nothing dead: a `dce` after them removes
   nothing, checked on generated programs in tests/passes/test_default.py); settings and
   memory writes have effects and stay. Running them earlier as well would only cost time
   (they and the verifier dominate the pipeline's run time). Both are xDSL's, with
   tileir's drivers (`tileir.passes.canonicalize`, `tileir.passes.cse`), which leave
   exactly what xDSL's leave, faster.

The IR is verified once, at the end, as `mlir-opt` does (`verify-each=true`, or
`tileir-opt --verify-each`, verifies after every pass, and a failure then names the
pass it followed); before each pass its required IR properties are checked
(`tileir.passes.contracts`). Options of
the passes are options of the pipeline: `default{unroll-factors=4,2,1 max-functions=8}`;
for anything else spell the pipeline out:
`tileir-opt -p 'vc-split,semantic-labels,loop-unroll{max-body-ops=512},stitch'`.
Passes that are not installed (written in parallel) are skipped.

```mlir
// before
pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [8, 4, 2, 1] { ... }
// after -p default
pto.loop %i = %c0 to %c8 step %c8 name "rows_LoopUnroll8" {
  pto.stitch size 8 max 128 { ... 8 iterations, interleaved ... }
}
pto.loop ... name "rows_LoopUnroll4" { pto.stitch size 4 max 128 { ... } }
pto.loop ... name "rows_LoopUnroll1" { ... }
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tileir.passes.canonicalize import TileirCanonicalizePass
from tileir.passes.contracts import check_establishes, check_requires, expand
from tileir.passes.cse import RegionAwareCSE
from tileir.passes.loop_unroll import DEFAULT_MAX_UNROLLED_OPS, LoopUnrollPass
from tileir.passes.stitch import StitchPass
from tileir.timing import Timings, step_labels, timed


def _optional(name: str) -> type[ModulePass] | None:
    """A pass of another module, or None while it does not exist yet."""
    from tileir.passes import get_all_passes

    factory = get_all_passes().get(name)
    if factory is None:
        return None
    try:
        return factory()
    except ImportError:
        return None


def _check_nesting(module: ModuleOp) -> None:
    """Refuse IR nested deeper than the passes can walk (the verifier refuses it too,
    but a module built in Python reaches the passes unverified)."""
    from tileir.diagnostics import error_at
    from tileir.dialect.pto import MAX_NESTING, nesting_error

    deep = nesting_error(module)
    if deep is not None:
        raise error_at(
            deep[0],
            f"'{deep[0].name}' is nested {deep[1]} regions deep; tileir's passes handle at "
            f"most {MAX_NESTING}",
        )


def run_passes(
    ctx: Context,
    module: ModuleOp,
    passes: Sequence[ModulePass],
    *,
    verify: bool = True,
    verify_each: bool = False,
    timings: Timings | None = None,
) -> None:
    """Run `passes` (composite ones expanded) on `module`: each pass's requirements are
    checked before it runs; the IR is verified once at the end (`verify`), or after
    every pass with `verify_each`, which also checks what each pass establishes.
    `timings` gets a row per step and per kind of check (`tileir.timing`)."""
    from tileir.diagnostics import verify_located

    span = partial(timed, timings)
    with span("[nesting check]"):
        _check_nesting(module)
    steps = expand(passes)
    for p, label in zip(steps, step_labels([p.name for p in steps])):
        with span("[contracts]"):
            check_requires(p, module)
        with span(label):
            p.apply(ctx, module)
        if verify_each:
            with span("[verify]"):
                verify_located(module, f"after pass '{p.name}'")
            with span("[contracts]"):
                check_establishes(p, module)
    if verify and not verify_each and steps:
        names = ",".join(p.name for p in steps)
        with span("[verify]"):
            verify_located(
                module, f"after the pipeline '{names}'; --verify-each names the pass that broke it"
            )


@dataclass(frozen=True)
class DefaultPipelinePass(ModulePass):
    """The default pipeline; see the module docstring for its order."""

    name = "default"

    unroll_factors: tuple[int, ...] | None = None
    """Unroll list for every loop (default: only loops with their own unroll_list)."""

    unroll_max_body_ops: int | None = None
    """Cap on a loop body's size after unrolling."""

    unroll_loops: tuple[str, ...] | None = None
    """Only unroll loops with these names."""

    max_functions: int | None = None
    """Stitch group size (PyPTO's stitch_function_max_num)."""

    interleave: bool = True
    """Interleave iterations inside a stitch group."""

    unroll: bool = True
    """Run loop-unroll and stitch at all."""

    unroll_max_ops: int = DEFAULT_MAX_UNROLLED_OPS
    """loop-unroll's cap on one loop's unrolled size (body ops x copies)."""

    verify_each: bool = False
    """Verify after every step (and check what it establishes), not only at the end."""

    def passes(self) -> list[ModulePass]:
        steps: list[ModulePass] = []
        for name in ("inplace-reshape", "vc-split", "semantic-labels"):
            cls = _optional(name)
            if cls is not None:
                steps.append(cls())
        if self.unroll:
            steps += [
                LoopUnrollPass(
                    self.unroll_factors,
                    self.unroll_max_body_ops,
                    self.unroll_loops,
                    emittable=True,
                    max_unrolled_ops=self.unroll_max_ops,
                ),
                StitchPass(self.max_functions, self.interleave),
            ]
        steps += [TileirCanonicalizePass(), RegionAwareCSE()]
        return steps

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(ctx, op, self.passes(), verify_each=self.verify_each)
