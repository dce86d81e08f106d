"""The seed kernels (read by the PyPTO frontend) through vc-split, semantic-labels and
inplace-reshape: the numpy back end's outputs stay bit-identical, the module verifies
and round-trips after each pass, every stage has a label, and a second run is a no-op."""

from __future__ import annotations

import numpy as np
import pytest

from frontends.kernels import SEED_KERNELS, SeedKernel
from tileir.ir import make_context, print_module
from tileir.passes.inplace_reshape import InplaceReshapePass
from tileir.passes.semantic_labels import SemanticLabelsPass, check_labels
from tileir.passes.stages import flow_pattern, kernels
from tileir.passes.vc_split import VCSplitPass
from tileir.testing import check_pass


def _load(seed: SeedKernel):
    from frontends.pypto import load_file

    return load_file(seed.path)


@pytest.mark.parametrize("seed", SEED_KERNELS, ids=[k.name for k in SEED_KERNELS])
def test_seed_kernel_through_the_three_passes(seed: SeedKernel) -> None:
    module = _load(seed)
    inputs = seed.make_inputs(np.random.default_rng(0))
    passes = [VCSplitPass(), SemanticLabelsPass(), InplaceReshapePass()]
    after = check_pass(passes, module, inputs=inputs, kernel=seed.kernel)
    assert check_labels(after) == []
    kernel = next(k for k in kernels(after) if k.sym_name.data == seed.kernel)
    assert flow_pattern(kernel)
    text = print_module(after)
    ctx = make_context()
    for p in passes:
        p.apply(ctx, after)
    assert print_module(after) == text


def test_sk03_and_rope_b_flow_patterns() -> None:
    """The seed documents' V/C arrangements: SK-03 is V -> C -> V (plus the parameter
    cast before the loop), RoPE B is pure Vector."""
    patterns = {}
    for seed in SEED_KERNELS:
        if seed.name in ("linear_projection", "rope_interleave"):
            module = _load(seed)
            VCSplitPass().apply(make_context(), module)
            kernel = next(k for k in kernels(module) if k.sym_name.data == seed.kernel)
            patterns[seed.name] = flow_pattern(kernel)
    assert patterns == {"linear_projection": "V2,C1,V1", "rope_interleave": "V1"}


EXPECTED_LABELS = {
    # The user's labels where the kernel sets them (SK-03 sets rmsnorm / linear / post;
    # the gamma cast before the loop has none and is derived).
    "linear_projection": ["cast", "rmsnorm", "linear", "post"],
    # Derived by the rule table from what each stage computes.
    "rope_interleave": ["rope"],
    "rope_half_split": ["rope"],
    "rope_rotate_half": ["rope"],
    "rms_norm_rope": ["cast", "rmsnorm-rope"],
    "gelu_tanh": ["gelu"],
    "gelu_erf": ["gelu"],
    "mean": ["reduce"],
    "type_as": ["cast"],
    "embedding_gather": ["gather"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_LABELS))
def test_seed_kernel_labels(name: str) -> None:
    seed = next(k for k in SEED_KERNELS if k.name == name)
    module = _load(seed)
    ctx = make_context()
    VCSplitPass().apply(ctx, module)
    SemanticLabelsPass().apply(ctx, module)
    kernel = next(k for k in kernels(module) if k.sym_name.data == seed.kernel)
    from tileir.passes.stages import stages

    assert [s.label.data for s in stages(kernel)] == EXPECTED_LABELS[name]
