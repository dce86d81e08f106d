"""Interpret mode: PyPTO kernels and their tests, run on the CPU by tileir.

PyPTO's counterpart of Triton's `TRITON_INTERPRET=1`. While it is on, `import pypto`
gives a stand-in whose `@pypto.frontend.jit` returns a `Kernel`: calling it with torch
CPU tensors or numpy arrays specialises the kernel to the call (tileir's PyPTO frontend),
runs it on the numpy back end and writes the outputs into the argument tensors in place.
The NPU calls of PyPTO scripts (`import torch_npu`, `.npu()`, `torch.npu.set_device`,
`pypto.runtime._device_synchronize()`, `TILE_FWK_DEVICE_ID`) go to the CPU.

```sh
tileir-interpret my_test.py ARGS            # or: python -m tileir.interpret my_test.py
pytest -p tileir.interpret tests/ops/       # a PyPTO test suite, unchanged, on the CPU
TILEIR_PIPELINE=default TILEIR_VERIFY_SEMANTICS=1 pytest -p tileir.interpret ...
```

```python
from tileir.interpret import interpret_mode

with interpret_mode():
    import my_kernels               # imports `pypto`: the stand-in
    my_kernels.rope(x, cos, sin, out)
```

Nothing is patched unless interpret mode is on; `disable()` restores everything.
"""

from tileir.interpret.kernel import Kernel, KernelError, jit
from tileir.interpret.mode import disable, enable, enabled, interpret_mode
from tileir.interpret.standin import InterpretError

__all__ = [
    "InterpretError",
    "Kernel",
    "KernelError",
    "disable",
    "enable",
    "enabled",
    "interpret_mode",
    "jit",
]

# `pytest -p tileir.interpret` loads this module as a plugin; its hooks live in
# `plugin` (which imports pytest), loaded only by pytest.
pytest_plugins = ["tileir.interpret.plugin"]
