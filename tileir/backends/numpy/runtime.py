"""The numpy back end's run-time half: what a lowered plan is made of and runs with.

`compiler` (with the rules and `loops`) lowers a kernel into these objects once; from
then on only this module, the pure-numpy `semantics` / `fastpaths` / `arith_semantics`
and `tileir.errors` are needed. None of them imports xDSL, so that a plan read back
from the cache (`plan_cache`) runs without importing the IR: a `tileir-run` of a kernel
it has run before starts in about half the time.

Errors of a run are located by the `file:line:col` strings the compiler recorded, not
by the ops themselves (which stay behind with the IR).
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from tileir.errors import TileirError, describe_runtime_error, located

Env = list[Any]
Step = Callable[[Env], None]


class Fallback(Exception):
    """Raised inside a batched loop body when a case is not batchable after all; the
    loop then runs iteration by iteration (always safe, see `LoopBatch`)."""


def scalar_index(value: Any) -> int:
    """An index value that must be the same in every batched iteration, as an int."""
    if isinstance(value, np.ndarray):
        first = int(value.flat[0])
        if value.size and not np.all(value == first):
            raise Fallback
        return first
    return int(value)


def normalize_valid(valid: tuple[int, ...] | None, shape: Sequence[int]) -> tuple[int, ...] | None:
    if valid is None or tuple(valid) == tuple(shape):
        return None
    return tuple(valid)


def tile_shape(arr: np.ndarray, rank: int) -> tuple[int, ...]:
    return arr.shape[arr.ndim - rank :]


class Slots(Protocol):
    """Where an `IndexList` gets slots for its static entries (the compiler)."""

    template: list[Any]

    def new_slot(self) -> int: ...


class IndexList:
    """A mixed static / dynamic index list (`[0, %i]`) read from the environment.

    `spec` holds, per entry, (slot, 0) for a value computed at run time or (-1, constant);
    `present` is False for an absent list (an op without `valid`)."""

    def __init__(self, slots: Slots, spec: Sequence[tuple[int, int]], present: bool = True):
        self.present = present
        self.spec = tuple(spec)
        self.static = all(s < 0 for s, _ in self.spec)
        self.constant = tuple(c for _, c in self.spec)
        if not self.static:
            # Each static entry gets a slot of its own holding its value, so that one
            # `itemgetter` (a C call) reads the whole list.
            taken = []
            for s, c in self.spec:
                if s < 0:
                    s = slots.new_slot()
                    slots.template[s] = c
                taken.append(s)
            if len(taken) == 1:
                (only,) = taken
                self._get: Callable[[Env], tuple[Any, ...]] = lambda env: (env[only],)
            else:
                self._get = operator.itemgetter(*taken)

    def __call__(self, env: Env) -> tuple[Any, ...]:
        if self.static:
            return self.constant
        return self._get(env)


def sequence(steps: Sequence[tuple[Step, tuple[int, ...], str | None, str]]) -> Step:
    """Run the steps in order; after each, drop the slots of the tiles it used last
    (the second item). A Python exception of a step is reported at its op (the third
    and fourth items: its `file:line:col` and name)."""
    items = tuple((f, dead) for f, dead, _, _ in steps)
    places = tuple((where, name) for _, _, where, name in steps)

    def run(env: Env) -> None:
        f = None
        try:
            for f, dead in items:
                f(env)
                for s in dead:
                    env[s] = None
        except (TileirError, Fallback):
            raise
        except Exception as e:
            # Found by identity after the fact: the loop itself keeps no count.
            k = next((k for k, (g, _) in enumerate(items) if g is f), None)
            if k is None:
                raise
            where, name = places[k]
            raise located(where, f"'{name}': {describe_runtime_error(e)}") from e

    return run


# --------------------------------------------------------------------------- batched loops


class LoopBatch:
    """Runs a `pto.loop` whose iterations are independent as whole-array numpy ops.

    Built by `loops.batch_loop` when the kernel is lowered, which checks the static
    conditions: the body holds only index arithmetic (element reads of memory
    included), views, assembles and row-local tile ops (elementwise, casts, reductions,
    layout ops; no matmul, gather or topk, whose numpy kernels may round differently on
    a different shape), no nested loops, branches or loop-state queries, and it never
    reads (views, element reads) a memref it writes (assembles).

    At run time the index arithmetic is evaluated for all iterations at once; iterations
    are grouped by their valid shapes (a tail is its own group), the windows written by
    different iterations must be disjoint, and every group of two or more iterations runs
    once with a leading batch dim on its tiles (the others run one by one). Each tile op
    is the same semantics call on an array with one more leading dim, and every op used
    here computes each element (or each reduced row) independently of that dim, so the
    bits equal the iteration-by-iteration run. Whenever something does not fit, the loop
    runs iteration by iteration instead; that is always safe, because the iterations
    only write memory the loop never reads.
    """

    def __init__(
        self,
        iv: int,
        general: Step,
        body: Step,
        index_steps: Step,
        assembles: list[tuple[int, IndexList, IndexList, int]],
        shape_slots: list[int],
    ):
        self.iv = iv
        self.general = general
        """The loop body run one iteration at a time."""
        self.body = body
        """The body lowered with a leading batch dim on its tiles."""
        self.index_steps = index_steps
        """The loop's index arithmetic, for all iterations at once."""
        self.assembles = assembles
        """Per assemble: (destination slot, offsets, tile extents, source slot)."""
        self.shape_slots = shape_slots
        """The values that size the loop's tiles: iterations are grouped by them."""
        self.runs = 0
        """How many times the loop ran batched (for tests and benchmarks)."""

    def try_run(self, env: Env, lb: int, ub: int, step: int) -> bool:
        ivals = np.arange(lb, ub, step, dtype=np.int64)
        n = len(ivals)
        if n < 2:
            return False
        env[self.iv] = ivals
        try:
            with np.errstate(divide="raise", invalid="raise"):
                self.index_steps(env)
        except (TileirError, ArithmeticError, Fallback):
            return False
        keys = [np.broadcast_to(np.asarray(env[s], dtype=np.int64), (n,)) for s in self.shape_slots]
        if not self._disjoint(env, n):
            return False
        if keys:
            _, inverse = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            groups = [np.nonzero(inverse == g)[0] for g in range(int(inverse.max()) + 1)]
        else:
            groups = [np.arange(n)]
        try:
            for g in groups:
                if len(g) == 1:
                    env[self.iv] = int(ivals[g[0]])
                    self.general(env)
                else:
                    env[self.iv] = ivals[g]
                    self.body(env)
        except (Fallback, TileirError):
            # Run it again one iteration at a time; a real error is reported there.
            return False
        self.runs += 1
        return True

    def _disjoint(self, env: Env, n: int) -> bool:
        by_dst: dict[int, list[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]] = {}
        for dst, offsets, extents, _ in self.assembles:
            offs = [np.broadcast_to(np.asarray(o, dtype=np.int64), (n,)) for o in offsets(env)]
            ext = tuple(np.broadcast_to(np.asarray(e, dtype=np.int64), (n,)) for e in extents(env))
            by_dst.setdefault(id(env[dst]), []).append((offs, ext))
        return all(_windows_disjoint(w) for w in by_dst.values())


def _windows_disjoint(windows: Sequence[tuple[list[np.ndarray], tuple[np.ndarray, ...]]]) -> bool:
    """Whether the windows written by different iterations never overlap.

    `windows` holds, per assemble into one destination, its offsets and extents per dim
    (arrays of one entry per iteration). Two boxes are disjoint when they are disjoint
    in one dim; for each pair of assembles (an assemble with itself included) some dim
    must separate every pair of different iterations. Same-iteration overlaps are fine:
    the batched run keeps the program order within an iteration.
    """
    return all(
        any(_separated(oa[d], ea[d], ob[d], eb[d]) for d in range(len(oa)))
        for a, (oa, ea) in enumerate(windows)
        for ob, eb in windows[a:]
    )


def _separated(oa: np.ndarray, ea: np.ndarray, ob: np.ndarray, eb: np.ndarray) -> bool:
    """In one dim: no window [ob_j, ob_j + eb_j) overlaps [oa_k, oa_k + ea_k) for j != k."""
    order = np.argsort(ob, kind="stable")
    sb, se, si = ob[order], eb[order], order
    emax = int(se.max())
    # Candidates start in (oa - emax, oa + ea): found by binary search, then checked.
    lo = np.searchsorted(sb, oa - emax, side="right")
    hi = np.searchsorted(sb, oa + ea, side="left")
    count = hi - lo
    k = np.nonzero(count == 1)[0]
    j = lo[k]
    clash = (si[j] != k) & (sb[j] + se[j] > oa[k]) & (ea[k] > 0) & (se[j] > 0)
    if np.any(clash):
        return False
    for k in np.nonzero(count > 1)[0]:
        for j in range(lo[k], hi[k]):
            if si[j] != k and sb[j] + se[j] > oa[k] and ea[k] > 0 and se[j] > 0:
                return False
    return True


# --------------------------------------------------------------------------- the plan


class Plan:
    """A kernel lowered for the numpy back end; call it with input arrays by name.

    >>> plan = compile_kernel(module)        # doctest: +SKIP
    >>> outputs = plan({"x": x})             # {"out": array}
    """

    def __init__(
        self,
        *,
        name: str,
        where: str | None,
        arg_names: Sequence[str],
        outputs: Sequence[str],
        arg_slots: Sequence[int],
        body: Step,
        template: list[Any],
        batchers: list[LoopBatch],
        dtypes: Mapping[str, np.dtype],
        shapes: Mapping[str, tuple[int, ...]],
        dynamic_names: Mapping[str, tuple[str, ...]],
        kernel: Any = None,
    ):
        self.name = name
        self.where = where
        """`file:line:col` of the kernel, for errors of a run."""
        self.arg_names = list(arg_names)
        self.outputs = list(outputs)
        """Arguments some assemble writes: returned; zero-initialised unless given."""
        self.inputs = [n for n in self.arg_names if n not in self.outputs]
        """Arguments never written: required inputs."""
        self._arg_slots = list(arg_slots)
        self._body = body
        self._template = template
        self._batchers = batchers
        self._dtypes = dict(dtypes)
        self._shapes = dict(shapes)
        self._dynamic_names = dict(dynamic_names)
        self.kernel = kernel
        """The `pto.kernel` op it was lowered from; None for a plan read from the cache."""

    def __getstate__(self) -> dict[str, Any]:
        # The IR stays behind: a plan read back from the cache runs without xDSL.
        return {**self.__dict__, "kernel": None}

    def error(self, message: str) -> TileirError:
        """An error of this kernel's run, at the kernel."""
        return located(self.where, message)

    def dynamic_names(self, name: str) -> tuple[str, ...]:
        """The symbols of an argument's `?` dims, in order."""
        return self._dynamic_names[name]

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
        unknown = sorted(set(inputs) - set(self.arg_names))
        if unknown:
            raise self.error(
                f"kernel @{self.name} has no argument {unknown[0]!r} "
                f"(its arguments: {', '.join(self.arg_names)})",
            )
        missing = [n for n in self.inputs if n not in inputs]
        if missing:
            raise self.error(
                f"kernel @{self.name}: missing input {missing[0]!r} ({self._describe(missing[0])})",
            )
        dims: dict[str, tuple[int, str]] = {}
        arrays: dict[str, np.ndarray] = {}
        for name in self.arg_names:
            if name not in inputs:
                continue
            x = np.asarray(inputs[name])
            if x.dtype != self.dtype(name):
                raise self.error(
                    f"kernel @{self.name}: input {name!r} has dtype {x.dtype}, expected "
                    f"{self.dtype(name)} ({self._describe(name)})",
                )
            declared = self.shape(name)
            if x.ndim != len(declared) or any(
                d != -1 and d != s for d, s in zip(declared, x.shape)
            ):
                raise self.error(
                    f"kernel @{self.name}: input {name!r} has shape {list(x.shape)}, "
                    f"expected {self._describe(name)}",
                )
            names = iter(self._dynamic_names[name])
            for d, s in zip(declared, x.shape):
                if d != -1:
                    continue
                sym = next(names)
                if sym in dims and dims[sym][0] != s:
                    raise self.error(
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
                        raise self.error(
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

    def random_inputs(
        self, seed: int = 0, dims: Mapping[str, int] | None = None
    ) -> dict[str, np.ndarray]:
        """Random arrays for the required inputs, in their declared dtypes.

        Floats are standard normal (rounded to the dtype); integers are in [0, 4), so that
        they are in range as indices of gather / index_select on any dim of size >= 4;
        bools are fair coins. Dynamic dims take their size from `dims` (by symbol name),
        else 16.
        """
        rng = np.random.default_rng(seed)
        out: dict[str, np.ndarray] = {}
        for name in self.inputs:
            syms = iter(self._dynamic_names[name])
            shape = [(dims or {}).get(next(syms), 16) if d == -1 else d for d in self.shape(name)]
            dtype = self.dtype(name)
            if dtype == np.bool_:
                out[name] = rng.integers(0, 2, shape).astype(bool)
            elif dtype.kind in "iu":
                out[name] = rng.integers(0, 4, shape).astype(dtype)
            else:
                out[name] = rng.standard_normal(shape).astype(np.float32).astype(dtype)
        return out
