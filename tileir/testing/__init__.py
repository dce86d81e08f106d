"""Testing tools for `pto` passes: random programs and translation validation.

- `modules()` / `kernels()`: hypothesis strategies for random, verifying `pto`
  programs (loops with tails, workspaces, casts, matmuls, ...); `inputs_for(module)`
  draws inputs for one of their kernels; `features(module)` says what a module holds.
- `check_pass(pass_or_pipeline, module)`: runs the module on the numpy back end before
  and after each pass, on the same inputs, and raises `SemanticsMismatch` (with a
  reproducer) when the outputs differ; also checks verification and text round-trips.
- `random_inputs(module, kernel, seed)`: reproducible inputs without hypothesis.

```python
from hypothesis import given
from tileir.testing import check_pass, modules

@given(modules())
def test_my_pass_keeps_meaning(module):
    check_pass(MyPass(), module)
```

The strategies need `hypothesis` (the `test` extra); the checker does not, so that
`tileir-opt --verify-semantics` works in a plain install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tileir.testing.check import (
    CheckFailure,
    RoundTripFailure,
    SemanticsGuard,
    SemanticsMismatch,
    Tolerance,
    UnrunnableProgram,
    VerificationFailure,
    check_pass,
    check_round_trip,
    compare_outputs,
    run_kernel,
)
from tileir.testing.inputs import random_inputs

if TYPE_CHECKING:
    from tileir.testing.strategies import features, inputs_for, kernels, modules

_STRATEGIES = ("modules", "kernels", "inputs_for", "features")

__all__ = [
    "CheckFailure",
    "RoundTripFailure",
    "SemanticsGuard",
    "SemanticsMismatch",
    "Tolerance",
    "UnrunnableProgram",
    "VerificationFailure",
    "check_pass",
    "check_round_trip",
    "compare_outputs",
    "features",
    "inputs_for",
    "kernels",
    "modules",
    "random_inputs",
    "run_kernel",
]


def __getattr__(name: str) -> Any:
    # hypothesis is imported only when a strategy is asked for.
    if name in _STRATEGIES:
        from tileir.testing import strategies

        return getattr(strategies, name)
    raise AttributeError(f"module 'tileir.testing' has no attribute {name!r}")
