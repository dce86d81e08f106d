"""`@pypto.frontend.jit` in interpret mode: a kernel you call with tensors.

Calling a `Kernel` does what PyPTO's jit wrapper does on the device, on the CPU:

1. bind the call to the function's parameters (tensors and scalars, positional or by
   name) and look the call's signature up in the kernel's cache: every tensor's shape
   and dtype, every other argument's value; dims that a cached specialisation left
   dynamic (`pypto.DYNAMIC`, `pypto.frontend.dynamic`) do not count, as in PyPTO;
2. on a miss, *specialise*: build the kernel's `pto` IR for that signature with tileir's
   PyPTO frontend (`build_module`, the one seam to it), run `TILEIR_PIPELINE` on it if
   set, and lower it to a numpy back-end plan;
3. run the plan with every output (and in-out) tensor as the numpy view of its memory
   (`tileir.interpret.tensors`): the plan writes into the caller's tensor in place, as
   PyPTO does (a non-contiguous output, or one sharing memory with another argument,
   is computed into a copy and written back).

`TILEIR_VERIFY_SEMANTICS=1` keeps the kernel as the frontend built it beside the passed
one: at specialisation each pass is checked on the call's own inputs
(`tileir.testing.SemanticsGuard`, which names the pass), and on every call the two
plans' outputs are compared (`tileir.testing.compare_outputs`); a difference raises
`SemanticsMismatch` with the first differing element.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tileir.diagnostics import TileirError
from tileir.interpret.tensors import describe, is_tensor, to_numpy

if TYPE_CHECKING:
    from tileir.backends.numpy import Plan

PIPELINE_ENV = "TILEIR_PIPELINE"
VERIFY_ENV = "TILEIR_VERIFY_SEMANTICS"


class KernelError(TileirError):
    """tileir cannot read or run a kernel: the located error (`file:line:col: error:`,
    a line of the kernel) and the call it happened on."""


def build_module(
    fn: Callable[..., Any], arguments: Mapping[str, Any], options: Mapping[str, Any]
) -> ModuleOp:
    """The kernel `fn` specialised to one call (`arguments` by parameter name: numpy
    arrays for tensors, Python values for the rest): the seam to tileir's frontend, which
    reads it from the live function (its globals and closure) as a `JitKernel` with the
    decorator's `options`."""
    from frontends.pypto import load_function
    from frontends.pypto.standin import JitKernel

    return load_function(JitKernel(fn, dict(options)), **arguments)


Pattern = frozenset[tuple[str, int]]
"""The `(parameter, dim)`s a specialisation leaves dynamic (`?` in its IR)."""


def _key_of(value: Any, dynamic: Sequence[int] = ()) -> Hashable:
    """The cache key of one argument: shape (`None` for the `dynamic` dims) and dtype
    for a tensor, else the value."""
    if is_tensor(value):
        shape = tuple(None if d in dynamic else s for d, s in enumerate(value.shape))
        return ("tensor", shape, str(value.dtype))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))  # a config object: its identity
    return (type(value).__name__, value)


def _key(values: Mapping[str, Any], pattern: Pattern) -> Hashable:
    return tuple(
        (name, _key_of(v, [d for n, d in pattern if n == name])) for name, v in values.items()
    )


@dataclass
class Specialisation:
    """One signature's kernel: the plan to run, and with verification on, the plan of
    the kernel before the passes."""

    plan: Plan
    module: ModuleOp
    reference: Plan | None = None
    pipeline: str = ""


class Kernel:
    """A `@pypto.frontend.jit` function in interpret mode (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], options: Mapping[str, Any]):
        functools.update_wrapper(self, fn)
        self._original_func = fn  # PyPTO's name for it; tileir's frontend reads it
        self.options = dict(options)
        self.signature = inspect.signature(fn)
        self.cache: dict[Hashable, Specialisation] = {}
        self._patterns: list[Pattern] = [frozenset()]
        """Dynamic-dim patterns of the specialisations so far: a call whose signature
        differs from a cached one only in dims that one left dynamic reuses it."""
        self.specialisations = 0
        """How many times IR was built for this kernel (one per new call signature)."""

    def __repr__(self) -> str:
        return f"<interpreted PyPTO kernel {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True  # pytest shows the test's line and the located error
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel {self.__name__}: {e}") from None
        bound.apply_defaults()
        values = bound.arguments
        spec = next(
            (s for p in self._patterns if (s := self.cache.get(_key(values, p))) is not None),
            None,
        )
        if spec is None:
            spec = self._specialise(values)
            pattern = frozenset(
                (name, d)
                for name in spec.plan.arg_names
                for d, size in enumerate(spec.plan.shape(name))
                if size == -1
            )
            if pattern not in self._patterns:
                self._patterns.append(pattern)
            self.cache[_key(values, pattern)] = spec
        arrays = {
            name: to_numpy(v, f"kernel {self.__name__}, argument {name!r}")
            for name, v in values.items()
            if is_tensor(v)
        }
        self._run(spec, values, arrays)

    # ---------------------------------------------------------------- specialising

    def _call_text(self, values: Mapping[str, Any]) -> str:
        return ", ".join(f"{n}: {describe(v)}" for n, v in values.items())

    def _located(self, e: BaseException, values: Mapping[str, Any], doing: str) -> KernelError:
        message = str(e) if isinstance(e, TileirError) else f"error: {type(e).__name__}: {e}"
        return KernelError(f"{message}\n  ({doing} {self.__name__}({self._call_text(values)}))")

    def _specialise(self, values: Mapping[str, Any]) -> Specialisation:
        __tracebackhide__ = True
        self.specialisations += 1
        arguments = {
            n: to_numpy(v, f"kernel {self.__name__}, argument {n!r}") if is_tensor(v) else v
            for n, v in values.items()
        }
        try:
            module = build_module(self._original_func, arguments, self.options)
        except TileirError as e:
            raise self._located(e, values, "reading kernel") from None
        pipeline = os.environ.get(PIPELINE_ENV, "").strip()
        verify = os.environ.get(VERIFY_ENV, "") not in ("", "0")
        from tileir.backends.numpy import compile_kernel

        reference = None
        try:
            if verify and pipeline:
                reference = compile_kernel(module.clone())
                self._checked_pipeline(module, pipeline, arguments)
            elif pipeline:
                from tileir.passes import apply_pipeline

                apply_pipeline(module, pipeline)
            plan = compile_kernel(module)
        except TileirError as e:
            raise self._located(e, values, f"compiling (pipeline {pipeline!r})") from None
        return Specialisation(plan, module, reference, pipeline)

    def _checked_pipeline(self, module: ModuleOp, pipeline: str, arrays: Mapping[str, Any]):
        """Apply `pipeline` pass by pass, each checked on this call's inputs."""
        from tileir.ir import make_context
        from tileir.testing.check import SemanticsGuard, resolve_passes

        inputs = {n: a for n, a in arrays.items() if isinstance(a, np.ndarray)}
        guard = SemanticsGuard(inputs=inputs, round_trip=False)
        guard.before(module)
        ctx = make_context()
        for p in resolve_passes(pipeline):
            p.apply(ctx, module)
            guard.after(p, module)

    # ---------------------------------------------------------------- running

    def _run(
        self, spec: Specialisation, values: Mapping[str, Any], arrays: dict[str, np.ndarray]
    ) -> None:
        __tracebackhide__ = True
        plan = spec.plan
        missing = [n for n in plan.arg_names if n not in arrays]
        if missing:
            raise TypeError(
                f"kernel {self.__name__}: argument {missing[0]!r} must be a tensor, "
                f"got {describe(values.get(missing[0]))}"
            )
        inputs = {n: arrays[n] for n in plan.arg_names}
        try:
            # the reference first: the plan writes its outputs into `inputs`' arrays
            expected = spec.reference(inputs) if spec.reference is not None else None
            outputs = plan(inputs, in_place=_unaliased(plan.outputs, inputs))
            if expected is not None:
                self._compare(spec, expected, outputs)
        except TileirError as e:
            raise self._located(e, values, "running kernel") from None
        for name, out in outputs.items():
            target = arrays[name]
            if out is target:
                continue  # written in place
            if target.shape != out.shape:
                raise KernelError(
                    f"error: kernel {self.__name__}: output {name!r} is "
                    f"{describe(values[name])} but the kernel wrote {out.dtype}{list(out.shape)}"
                )
            target[...] = out

    def _compare(
        self,
        spec: Specialisation,
        expected: Mapping[str, np.ndarray],
        outputs: Mapping[str, np.ndarray],
    ) -> None:
        from tileir.testing.check import SemanticsMismatch, compare_outputs

        diff = compare_outputs(expected, outputs)
        if diff is not None:
            raise SemanticsMismatch(
                f"{VERIFY_ENV}: kernel {self.__name__} after pipeline {spec.pipeline!r} "
                f"computes something else than before it: {diff.message} "
                "(before = the kernel as read, after = after the passes)",
                kernel=self.__name__,
                output=diff.output,
                index=diff.index,
            )


def _unaliased(outputs: Sequence[str], arrays: Mapping[str, np.ndarray]) -> list[str]:
    """The outputs the plan may write straight into the caller's memory: those sharing
    it with no other argument. (A tensor passed as both an input and an output keeps
    the numpy back end's meaning, inputs read as they were when the call began.)"""
    return [
        name
        for name in outputs
        if not any(
            other != name and np.may_share_memory(arrays[name], a) for other, a in arrays.items()
        )
    ]


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`pypto.frontend.jit` in interpret mode: `@jit`, `@jit()` and `@jit(**options)`
    (PyPTO's options are kept on the kernel; none changes what it computes)."""
    if fn is not None:
        if not inspect.isfunction(fn):
            raise TypeError("pypto.frontend.jit can only decorate functions")
        return Kernel(fn, options)
    return lambda f: jit(f, **options)
