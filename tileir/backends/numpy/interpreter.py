"""Run `pto` kernels on numpy arrays: lower a kernel once into a plan, then run the plan.

The plan is a tree of closures over slot indices into one flat environment list (a
value's slot is fixed when the kernel is lowered), so running an op costs one Python
call plus its numpy work: there is no dispatch on the op's type and no dictionary of
SSA values per iteration. A PyPTO function's rule is on its binding (`tileir.bindings`),
in the family modules of `tileir.backends.numpy.rules`; the rules of the IR's own structure
are in `scalar_rules` (`arith`) and `loops` (stages, `scf.if`, loops), registered in
`compiler.RULES`. Each rule is a thin shim over a
function of `tileir.backends.numpy.semantics`, which holds what every op means; the
rules only add what the IR adds: valid shapes, memory and control flow.
A few calls go through `fastpaths`, which gives the same bits faster.

Runtime values: index and integer scalars are Python ints holding their signed
fixed-width value (`i1` are bools; `arith_semantics` says what each `arith` op does);
float scalars are Python floats rounded to their declared type; tiles are
`(array, valid)` pairs where `valid` is None for a fully valid tile or a tuple of valid
sizes (tail tiles);
memrefs (kernel arguments, `pto.tensor` workspaces) are numpy arrays written in place.

Valid-shape rules (what a tail tile holds):

- `pto.view` copies the valid region and zero-fills the rest; without `valid` a view of
  a memref must lie inside it, a view of a tile inherits the source's valid region
  (clipped to the window).
- Elementwise ops compute on the whole arrays and take, per dim, the minimum valid size
  over the operands (a broadcast dim of size 1 takes the others').
- Reductions and the matmul contraction only read the valid region of the reduced dim;
  `topk` only ranks the valid part (and pads with zeros when fewer than k are valid).
- `pto.assemble` writes only the valid region.
- `reshape` and `full` without `valid` give fully valid tiles; `full` with `valid` holds
  its value everywhere (only the valid region counts).
- `concat` is valid along its dim up to the first operand that is not fully valid there.

Independent loops run as whole-array numpy operations ("batched"): see `runtime.LoopBatch` (made by `loops.batch_loop`).

This module lowers a kernel into its plan (`compile_kernel`, `run`, `random_inputs`);
`compiler` holds the lowering core, `runtime` the plan (`Plan`) and what it runs with.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ModuleOp,
)

from tileir.backends.numpy import loops, scalar_rules  # noqa: F401  (registers their rules)
from tileir.backends.numpy.compiler import _Compiler, _shape, numpy_dtype
from tileir.backends.numpy.runtime import Plan
from tileir.diagnostics import TileirError, location_of
from tileir.dialect import pto


def find_kernel(module: ModuleOp | pto.KernelOp, kernel: str | None = None) -> pto.KernelOp:
    """The kernel named `kernel`, or the only kernel of the module."""
    if isinstance(module, pto.KernelOp):
        return module
    kernels = [op for op in module.walk() if isinstance(op, pto.KernelOp)]
    if kernel is not None:
        for k in kernels:
            if k.sym_name.data == kernel:
                return k
        names = ", ".join(f"@{k.sym_name.data}" for k in kernels) or "none"
        raise TileirError(f"error: no kernel @{kernel} in the module (kernels: {names})")
    if len(kernels) != 1:
        names = ", ".join(f"@{k.sym_name.data}" for k in kernels) or "none"
        raise TileirError(
            f"error: the module has {len(kernels)} kernels ({names}); name one with kernel="
        )
    return kernels[0]


def _lower(kernel: pto.KernelOp, vectorize: bool) -> Plan:
    args = kernel.body.block.args
    names = kernel.names
    # Memory by its root (a memref a stage passes on is the argument it names).
    roots = {pto.memory_root(o.dst) for o in kernel.walk() if isinstance(o, pto.AssembleOp)}
    written = {a for a in args if a in roots}
    c = _Compiler()
    c.read_only = {a for a in args if a not in written}
    arg_slots = [c.slot(a) for a in args]
    c.vectorize = vectorize
    body = c.block(kernel.body.block)
    types = {n: a.type for n, a in zip(names, args)}
    return Plan(
        name=kernel.sym_name.data,
        where=location_of(kernel),
        arg_names=names,
        outputs=[n for n, a in zip(names, args) if a in written],
        arg_slots=arg_slots,
        body=body,
        template=c.template,
        batchers=c.batchers,
        # Read off the IR once: looking an xDSL type up per call costs more than a small
        # kernel's run.
        dtypes={n: numpy_dtype(t) for n, t in types.items()},
        shapes={
            n: tuple(-1 if s == DYNAMIC_INDEX else s for s in _shape(t)) for n, t in types.items()
        },
        dynamic_names={n: tuple(kernel.dynamic_names(n)) for n in names},
        kernel=kernel,
    )


def compile_kernel(
    module: ModuleOp | pto.KernelOp, kernel: str | None = None, *, vectorize: bool = True
) -> Plan:
    """Lower a kernel once; the plan runs it on any inputs. `vectorize=False` runs
    every loop iteration by iteration (the reference for the batched path)."""
    return _lower(find_kernel(module, kernel), vectorize)


def run(
    module: ModuleOp | pto.KernelOp,
    inputs: Mapping[str, np.ndarray],
    kernel: str | None = None,
    *,
    vectorize: bool = True,
) -> dict[str, np.ndarray]:
    """Run a kernel on numpy arrays (by argument name); returns the arrays of the
    arguments it writes (outputs and in-out tensors) by name. Inputs are copied, never
    modified; outputs not given start as zeros."""
    return compile_kernel(module, kernel, vectorize=vectorize)(inputs)


def random_inputs(
    module: ModuleOp | pto.KernelOp | Plan,
    kernel: str | None = None,
    seed: int = 0,
    dims: Mapping[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Random arrays for a kernel's required inputs (`Plan.random_inputs`). `module` may be
    the kernel's plan (then it is not lowered again)."""
    plan = module if isinstance(module, Plan) else compile_kernel(module, kernel)
    return plan.random_inputs(seed, dims)
