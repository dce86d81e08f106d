"""Random inputs for a kernel, from a seed: the same seed always gives the same arrays.

The checker and `tileir-opt --verify-semantics` run a module before and after a pass on
the same inputs; a seed (rather than the arrays) is what a reproducer needs to record.
This module needs only numpy, so that the CLI works without hypothesis installed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp

from tileir.dialect.dtypes import element_type
from tileir.dialect.pto import KernelOp

FILLS = ("small-ints", "normal", "wide")
"""How input values are drawn. `small-ints` are exact in every element type (so
failures read easily), `normal` are N(0, 1) rounded to the element type, `wide` mixes
magnitudes from 1e-3 to 1e3 and signs, which exercises rounding and cast modes."""

DEFAULT_DYNAMIC_SIZES = (1, 24)
"""Inclusive range of a `?` dim's size when nothing else is asked for: small, so that
runs stay fast, and large enough to cover several tiles plus a tail."""


def find_kernel(module: ModuleOp, name: str | None = None) -> KernelOp:
    """The kernel called `name`, or the only / first kernel of the module."""
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    if not kernels:
        raise ValueError("the module has no pto.kernel")
    if name is None:
        return kernels[0]
    for k in kernels:
        if k.sym_name.data == name:
            return k
    names = ", ".join(k.sym_name.data for k in kernels)
    raise ValueError(f"no kernel @{name} in the module (it has {names})")


def kernel_names(module: ModuleOp) -> list[str]:
    return [op.sym_name.data for op in module.walk() if isinstance(op, KernelOp)]


def dynamic_symbols(kernel: KernelOp) -> list[str]:
    """The names of the kernel's `?` dims, each once, in argument order."""
    out: list[str] = []
    for name in kernel.names:
        for s in kernel.dynamic_names(name):
            if s not in out:
                out.append(s)
    return out


def concrete_shapes(kernel: KernelOp, sizes: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Each argument's shape with its `?` dims replaced by `sizes[symbol]`."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, arg in zip(kernel.names, kernel.body.block.args):
        assert isinstance(arg.type, MemRefType)
        symbols = iter(kernel.dynamic_names(name))
        shape = [sizes[next(symbols)] if d == DYNAMIC_INDEX else d for d in arg.type.get_shape()]
        shapes[name] = tuple(shape)
    return shapes


def fill(
    shape: tuple[int, ...], dtype: np.dtype, kind: str, rng: np.random.Generator
) -> np.ndarray:
    """An array of `shape` and `dtype` drawn the `kind` way (see `FILLS`)."""
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if kind == "small-ints":
        raw = rng.integers(-3, 4, size=shape).astype(np.float64)
    elif kind == "normal":
        raw = rng.standard_normal(size=shape)
    elif kind == "wide":
        raw = rng.standard_normal(size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)
    else:
        raise ValueError(f"unknown fill {kind!r} (one of {', '.join(FILLS)})")
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        bound = min(8, info.max) if kind != "wide" else min(1000, info.max)
        raw = np.clip(np.rint(raw if kind == "small-ints" else raw * 4), -bound, bound)
        return raw.astype(dtype)
    # bf16 / fp8 go through float32: ml_dtypes rounds to nearest even.
    return raw.astype(np.float32).astype(dtype)


def random_inputs(
    module: ModuleOp,
    kernel: str | None = None,
    seed: int = 0,
    *,
    sizes: Mapping[str, int] | None = None,
    fill_kind: str | None = None,
) -> dict[str, np.ndarray]:
    """Arrays for every argument of `kernel` (outputs too: their initial contents are
    part of the input, since `assemble` writes only a tile's valid region).

    `?` dims take `sizes[symbol]` where given, else a size drawn from the seed.
    Reproducible: the same module, kernel, seed and options give the same arrays.
    """
    k = find_kernel(module, kernel)
    rng = np.random.default_rng(seed)
    chosen = dict(sizes or {})
    for s in dynamic_symbols(k):
        if s not in chosen:
            chosen[s] = int(rng.integers(DEFAULT_DYNAMIC_SIZES[0], DEFAULT_DYNAMIC_SIZES[1] + 1))
    kind = fill_kind or FILLS[int(rng.integers(0, len(FILLS)))]
    out: dict[str, np.ndarray] = {}
    for (name, shape), arg in zip(concrete_shapes(k, chosen).items(), k.body.block.args):
        assert isinstance(arg.type, MemRefType)
        dtype = element_type(arg.type.get_element_type()).numpy
        out[name] = fill(shape, dtype, kind, rng)
    return out
