"""tileir's passes. Each is a `ModulePass` registered here by its kebab-case name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

if TYPE_CHECKING:
    from tileir.timing import Timings


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory, imported lazily so that `--help` stays fast."""

    def vc_split() -> type[ModulePass]:
        from tileir.passes.vc_split import VCSplitPass

        return VCSplitPass

    def semantic_labels() -> type[ModulePass]:
        from tileir.passes.semantic_labels import SemanticLabelsPass

        return SemanticLabelsPass

    def inplace_reshape() -> type[ModulePass]:
        from tileir.passes.inplace_reshape import InplaceReshapePass

        return InplaceReshapePass

    def loop_unroll() -> type[ModulePass]:
        from tileir.passes.loop_unroll import LoopUnrollPass

        return LoopUnrollPass

    def loop_fusion() -> type[ModulePass]:
        from tileir.passes.loop_fusion import LoopFusionPass

        return LoopFusionPass

    def stitch() -> type[ModulePass]:
        from tileir.passes.stitch import StitchPass

        return StitchPass

    def coarsen() -> type[ModulePass]:
        from tileir.passes.coarsen import CoarsenPass

        return CoarsenPass

    def set_unroll_list() -> type[ModulePass]:
        from tileir.passes.unroll_list import SetUnrollListPass

        return SetUnrollListPass

    def sink_invariants() -> type[ModulePass]:
        from tileir.passes.sink import SinkInvariantsPass

        return SinkInvariantsPass

    def pypto_legalize() -> type[ModulePass]:
        from tileir.backends.pypto.legalize import PyptoLegalizePass

        return PyptoLegalizePass

    def default() -> type[ModulePass]:
        from tileir.passes.pipeline import DefaultPipelinePass

        return DefaultPipelinePass

    return {
        "vc-split": vc_split,
        "semantic-labels": semantic_labels,
        "inplace-reshape": inplace_reshape,
        "loop-unroll": loop_unroll,
        "loop-fusion": loop_fusion,
        "stitch": stitch,
        "coarsen": coarsen,
        "set-unroll-list": set_unroll_list,
        "sink-invariants": sink_invariants,
        "pypto-legalize": pypto_legalize,
        "default": default,
    }


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes (canonicalize, cse, dce, ...) plus tileir's; tileir's win a clash."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    return {**xdsl_passes(), **get_all_passes()}


def parse_pipeline(
    spec: str, passes: dict[str, Callable[[], type[ModulePass]]] | None = None
) -> list[ModulePass]:
    """The passes of a pipeline string such as `"vc-split,loop-unroll{factors=4,2,1},cse"`
    (options inside `{}` are separated by spaces). A malformed string is a `TileirError`
    that points at the character (xDSL raises a `BaseException` there, which would get
    past a caller's `except Exception`)."""
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    from tileir.diagnostics import TileirError

    try:
        return list(PassPipeline.parse_spec(passes or available_passes(), spec).passes)
    except ArgSpecParseError as e:
        where = str(e).split("\n", 1)[-1]
        raise TileirError(f"error: the pass pipeline does not parse:\n{where}") from None


def apply_pipeline(
    module: ModuleOp,
    spec: str,
    *,
    verify: bool = True,
    verify_each: bool = False,
    timings: Timings | None = None,
) -> ModuleOp:
    """Run a pipeline string on `module` in place. Each pass's required IR properties
    are checked before it runs (`tileir.passes.contracts`); the IR is verified once at
    the end (`verify`), or after every pass with `verify_each` (a located `TileirError`
    then names the pass after which the IR broke), as `mlir-opt` does. `timings`
    (`tileir.timing.Timings`) gets the time of each step and check; its `report()` is
    what `tileir-opt --time-passes` prints."""
    from tileir.ir import make_context
    from tileir.passes.pipeline import run_passes

    run_passes(
        make_context(),
        module,
        parse_pipeline(spec),
        verify=verify,
        verify_each=verify_each,
        timings=timings,
    )
    return module
