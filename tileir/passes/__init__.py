"""tileir's passes. Each is a `ModulePass` registered here by its kebab-case name."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


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

    def stitch() -> type[ModulePass]:
        from tileir.passes.stitch import StitchPass

        return StitchPass

    def default() -> type[ModulePass]:
        from tileir.passes.pipeline import DefaultPipelinePass

        return DefaultPipelinePass

    return {
        "vc-split": vc_split,
        "semantic-labels": semantic_labels,
        "inplace-reshape": inplace_reshape,
        "loop-unroll": loop_unroll,
        "stitch": stitch,
        "default": default,
    }
