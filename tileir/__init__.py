"""tileir: an MLIR-style tile IR for PyPTO kernels, built on xDSL."""

from tileir.ir import make_context, parse_module, print_module

__all__ = ["make_context", "parse_module", "print_module"]
