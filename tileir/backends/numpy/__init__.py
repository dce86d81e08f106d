"""The numpy back end: run `pto` kernels on numpy arrays.

`semantics` says what every op means (pure numpy functions); `interpreter` lowers a
kernel once into a plan of closures over those functions and runs it.

```python
from tileir.backends.numpy import run
outputs = run(module, {"x": x})  # {"out": array}
```
"""

from tileir.backends.numpy.interpreter import Plan, compile_kernel, random_inputs, run

__all__ = ["Plan", "compile_kernel", "random_inputs", "run"]
