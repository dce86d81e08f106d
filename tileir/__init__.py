"""tileir: an MLIR-style tile IR for PyPTO kernels, built on xDSL.

The names below are imported on first use, so that `import tileir.tools.run` (the start
of every tool) loads no xDSL or numpy before the tool can handle Ctrl-C."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tileir.ir import make_context, parse_module, print_module

__all__ = ["make_context", "parse_module", "print_module"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tileir import ir

        return getattr(ir, name)
    raise AttributeError(f"module 'tileir' has no attribute {name!r}")
