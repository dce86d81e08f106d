"""The numpy back end: run `pto` kernels on numpy arrays.

`semantics` says what every op means (pure numpy functions, the spec); `interpreter`
lowers a kernel once into a plan of closures over those functions and runs it;
`fastpaths` gives the same bits as a few semantics functions, faster.

```python
from tileir.backends.numpy import compile_kernel, random_inputs, run

outputs = run(module, {"x": x})           # {"out": array}: outputs and in-out tensors
plan = compile_kernel(module, "rope")     # lower once ...
outputs = plan(inputs)                    # ... run many times
inputs = random_inputs(module, seed=0)    # declared dtypes; ints in [0, 4)
reference = run(module, inputs, vectorize=False)  # every loop iteration by iteration
```

The names are imported on first use: the run-time modules (`runtime`, `semantics`,
`fastpaths`) import no IR, so that a plan loaded from the cache (`plan_cache`) runs
without xDSL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tileir.backends.numpy.interpreter import Plan, compile_kernel, random_inputs, run

__all__ = ["Plan", "compile_kernel", "random_inputs", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tileir.backends.numpy import interpreter

        return getattr(interpreter, name)
    raise AttributeError(f"module 'tileir.backends.numpy' has no attribute {name!r}")
