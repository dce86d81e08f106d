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

Independent loops run as whole-array numpy operations ("batched"): see `loops._LoopBatcher`.

This module holds the plan (`Plan`, `compile_kernel`, `run`, `random_inputs`); `compiler`
holds the lowering core.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Mapping

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ModuleOp,
)

from tileir.backends.numpy import loops, scalar_rules  # noqa: F401  (registers their rules)
from tileir.backends.numpy.compiler import _Compiler, _shape, numpy_dtype
from tileir.diagnostics import TileirError, error_at
from tileir.dialect import pto

# --------------------------------------------------------------------------- the plan


class Plan:
    """A kernel lowered for the numpy back end; call it with input arrays by name.

    >>> plan = compile_kernel(module)        # doctest: +SKIP
    >>> outputs = plan({"x": x})             # {"out": array}
    """

    def __init__(self, kernel: pto.KernelOp, vectorize: bool = True):
        self.kernel = kernel
        self.name = kernel.sym_name.data
        self.arg_names = kernel.names
        args = kernel.body.block.args
        self.arg_types = {n: a.type for n, a in zip(self.arg_names, args)}
        # Memory by its root (a memref a stage passes on is the argument it names).
        roots = {pto.memory_root(o.dst) for o in kernel.walk() if isinstance(o, pto.AssembleOp)}
        written = {a for a in args if a in roots}
        self.outputs = [n for n, a in zip(self.arg_names, args) if a in written]
        """Arguments some assemble writes: returned; zero-initialised unless given."""
        self.inputs = [n for n in self.arg_names if n not in self.outputs]
        """Arguments never written: required inputs."""
        c = _Compiler()
        c.read_only = {a for a in args if a not in written}
        self._arg_slots = [c.slot(a) for a in args]
        c.vectorize = vectorize
        self._body = c.block(kernel.body.block)
        self._template = c.template
        self._batchers = c.batchers
        # Read off the IR once: looking an xDSL type up per call costs more than a small
        # kernel's run.
        self._dtypes = {n: numpy_dtype(t) for n, t in self.arg_types.items()}
        self._shapes = {
            n: tuple(-1 if s == DYNAMIC_INDEX else s for s in _shape(t))
            for n, t in self.arg_types.items()
        }
        self._dynamic_names = {n: tuple(kernel.dynamic_names(n)) for n in self.arg_names}

    @property
    def batched_runs(self) -> int:
        """How many loop executions so far ran as whole-array (batched) numpy ops."""
        return sum(b.runs for b in self._batchers)

    def dtype(self, name: str) -> np.dtype:
        return self._dtypes[name]

    def shape(self, name: str) -> tuple[int, ...]:
        """The declared shape of an argument, -1 for a dynamic dim."""
        return self._shapes[name]

    def _bind(
        self, inputs: Mapping[str, np.ndarray], in_place: Collection[str] = ()
    ) -> dict[str, np.ndarray]:
        k = self.kernel
        unknown = sorted(set(inputs) - set(self.arg_names))
        if unknown:
            raise error_at(
                k,
                f"kernel @{self.name} has no argument {unknown[0]!r} "
                f"(its arguments: {', '.join(self.arg_names)})",
            )
        missing = [n for n in self.inputs if n not in inputs]
        if missing:
            raise error_at(
                k,
                f"kernel @{self.name}: missing input {missing[0]!r} ({self._describe(missing[0])})",
            )
        dims: dict[str, tuple[int, str]] = {}
        arrays: dict[str, np.ndarray] = {}
        for name in self.arg_names:
            if name not in inputs:
                continue
            x = np.asarray(inputs[name])
            if x.dtype != self.dtype(name):
                raise error_at(
                    k,
                    f"kernel @{self.name}: input {name!r} has dtype {x.dtype}, expected "
                    f"{self.dtype(name)} ({self._describe(name)})",
                )
            declared = self.shape(name)
            if x.ndim != len(declared) or any(
                d != -1 and d != s for d, s in zip(declared, x.shape)
            ):
                raise error_at(
                    k,
                    f"kernel @{self.name}: input {name!r} has shape {list(x.shape)}, "
                    f"expected {self._describe(name)}",
                )
            names = iter(self._dynamic_names[name])
            for d, s in zip(declared, x.shape):
                if d != -1:
                    continue
                sym = next(names)
                if sym in dims and dims[sym][0] != s:
                    raise error_at(
                        k,
                        f"kernel @{self.name}: dynamic dim {sym} is {dims[sym][0]} in "
                        f"{dims[sym][1]!r} but {s} in {name!r}",
                    )
                dims[sym] = (s, name)
            if name in self.outputs:
                direct = name in in_place and x.flags.c_contiguous and x.flags.writeable
                arrays[name] = x if direct else np.array(x, copy=True, order="C")
            else:
                # The kernel never writes it: share the caller's data, read-only.
                arrays[name] = x.view()
                arrays[name].flags.writeable = False
        for name in self.outputs:
            if name in arrays:
                continue
            names = iter(self._dynamic_names[name])
            shape = []
            for d in self.shape(name):
                if d == -1:
                    sym = next(names)
                    if sym not in dims:
                        raise error_at(
                            k,
                            f"kernel @{self.name}: cannot size output {name!r}: its dynamic "
                            f"dim {sym} is not set by any input",
                        )
                    d = dims[sym][0]
                shape.append(d)
            arrays[name] = np.zeros(shape, self.dtype(name))
        return arrays

    def _describe(self, name: str) -> str:
        dyn = iter(self._dynamic_names[name])
        dims = [str(next(dyn)) if d == -1 else str(d) for d in self.shape(name)]
        return f"[{', '.join(dims)}] {self.dtype(name)}"

    def __call__(
        self, inputs: Mapping[str, np.ndarray], *, in_place: Collection[str] = ()
    ) -> dict[str, np.ndarray]:
        """Run the kernel; returns the written arguments by name. Inputs are copied, never
        modified, except the outputs named in `in_place`: those the kernel writes
        straight into (as a device does, and without a copy in and out) when they are
        C-contiguous and writeable, and the result is then that same array (`is`)."""
        arrays = self._bind(inputs, in_place)
        env = list(self._template)
        for name, s in zip(self.arg_names, self._arg_slots):
            env[s] = arrays[name]
        # A run makes no reference cycles, but its many short-lived arrays trigger the
        # cyclic collector, whose full passes walk every live object (the xDSL IR too)
        # and can cost more than the run: pause it for the run.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with np.errstate(all="ignore"):
                self._body(env)
        finally:
            if collecting:
                gc.enable()
        return {n: arrays[n] for n in self.outputs}


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


def compile_kernel(
    module: ModuleOp | pto.KernelOp, kernel: str | None = None, *, vectorize: bool = True
) -> Plan:
    """Lower a kernel once; the plan runs it on any inputs. `vectorize=False` runs
    every loop iteration by iteration (the reference for the batched path)."""
    return Plan(find_kernel(module, kernel), vectorize=vectorize)


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
    """Random arrays for a kernel's required inputs, in their declared dtypes.

    Floats are standard normal (rounded to the dtype); integers are in [0, 4), so that
    they are in range as indices of gather / index_select on any dim of size >= 4; bools
    are fair coins. Dynamic dims take their size from `dims` (by symbol name), else 16.
    `module` may be the kernel's plan (then it is not lowered again).
    """
    plan = module if isinstance(module, Plan) else compile_kernel(module, kernel)
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in plan.inputs:
        syms = iter(plan._dynamic_names[name])
        shape = [(dims or {}).get(next(syms), 16) if d == -1 else d for d in plan.shape(name)]
        dtype = plan.dtype(name)
        if dtype == np.bool_:
            out[name] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":
            out[name] = rng.integers(0, 4, shape).astype(dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return out
