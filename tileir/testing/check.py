"""Translation validation: run a module before and after a pass, on the same inputs,
and demand the same outputs.

`check_pass(pass_or_pipeline, module)` clones the module, applies the pass (or each
pass of a pipeline in turn), and after each pass checks that

1. the module still verifies,
2. it round-trips through text (custom and generic form print -> parse -> print),
3. the numpy back end gives the same outputs on the same inputs as before the pass:
   bit for bit by default (NaN equals NaN), or within a stated `Tolerance`.

A failure raises a `CheckFailure` (an `AssertionError`, so pytest and hypothesis report
it as a test failure) whose message names the pass, the kernel, the output, the first
differing element, and holds a reproducer: the module text before the pass and the input
seed. `tileir-opt --verify-semantics[=N]` runs the same check after every pass of a
user's pipeline (see `SemanticsGuard`).

This module needs only numpy and xDSL (no hypothesis), so the CLI can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tileir.diagnostics import TileirError, verify_located
from tileir.ir import make_context, parse_module, print_module
from tileir.passes import parse_pipeline
from tileir.testing.inputs import kernel_names, random_inputs

Inputs = Mapping[str, np.ndarray]
Outputs = Mapping[str, np.ndarray]


# --------------------------------------------------------------------------- failures


class CheckFailure(AssertionError):
    """A pass broke a module: it no longer verifies, round-trips, or means the same."""

    def __init__(self, message: str, reproducer: str = ""):
        self.summary = message
        """The message without the reproducer (what a CLI prints)."""
        self.reproducer = reproducer
        full = message if not reproducer else f"{message}\n\nreproducer:\n{reproducer}"
        super().__init__(full)


class VerificationFailure(CheckFailure):
    """The module does not verify after the pass."""


class RoundTripFailure(CheckFailure):
    """Printing and parsing the module after the pass does not give it back."""


class SemanticsMismatch(CheckFailure):
    """The module computes something else after the pass."""

    def __init__(
        self,
        message: str,
        reproducer: str = "",
        *,
        pass_name: str = "",
        kernel: str = "",
        output: str | None = None,
        index: tuple[int, ...] | None = None,
    ):
        self.pass_name, self.kernel, self.output, self.index = pass_name, kernel, output, index
        super().__init__(message, reproducer)


class UnrunnableProgram(Exception):
    """The module fails on the numpy back end *before* the pass: nothing to compare
    against (for example a gather whose random index input is out of range)."""


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Tolerance:
    """Where a pass may change rounding (reassociating a sum, fusing ops), outputs are
    compared with `|after - before| <= atol + rtol * |before|` (NaN equal to NaN,
    infinities equal only to themselves); integer and bool outputs stay exact."""

    rtol: float = 0.0
    atol: float = 0.0

    @staticmethod
    def of(value: Tolerance | float | tuple[float, float] | None) -> Tolerance | None:
        if value is None or isinstance(value, Tolerance):
            return value
        if isinstance(value, tuple):
            return Tolerance(*value)
        return Tolerance(float(value), float(value))


@dataclass(frozen=True)
class Difference:
    """The first way two runs differ, in words, with where it happened."""

    output: str | None
    index: tuple[int, ...] | None
    message: str


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


def _is_float(dtype: np.dtype) -> bool:
    # ml_dtypes' bfloat16 and fp8 types have kind "V"
    return dtype.kind not in "iubO"


def _show(x: np.generic | np.ndarray) -> str:
    arr = np.asarray(x)
    if _is_float(arr.dtype) and arr.dtype.itemsize in (1, 2, 4, 8):
        bits = int(_bits(arr.reshape(1))[0])
        return f"{float(arr.astype(np.float64))!r} (0x{bits:0{2 * arr.dtype.itemsize}x})"
    return repr(arr.item())


def equal_mask(before: np.ndarray, after: np.ndarray, tolerance: Tolerance | None) -> np.ndarray:
    """Elementwise "the same": identical bits, or both NaN (whatever the payload), or
    within `tolerance` for floats."""
    if not _is_float(before.dtype):
        return before == after
    b64, a64 = before.astype(np.float64), after.astype(np.float64)
    same = (_bits(before) == _bits(after)) | (np.isnan(b64) & np.isnan(a64))
    if tolerance is not None:
        finite = np.isfinite(b64) & np.isfinite(a64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(a64 - b64) <= tolerance.atol + tolerance.rtol * np.abs(b64)
        same |= finite & close
    return same


def compare_outputs(
    before: Outputs, after: Outputs, tolerance: Tolerance | None = None
) -> Difference | None:
    """The first difference between two runs' outputs (by name), or None."""
    if set(before) != set(after):
        return Difference(
            None,
            None,
            f"outputs changed from {sorted(before)} to {sorted(after)}",
        )
    for name in sorted(before):
        b, a = np.asarray(before[name]), np.asarray(after[name])
        if b.dtype != a.dtype or b.shape != a.shape:
            return Difference(
                name,
                None,
                f"output {name!r} changed from {b.dtype}{list(b.shape)} to {a.dtype}{list(a.shape)}",
            )
        same = equal_mask(b, a, tolerance)
        if not np.all(same):
            bad = np.argwhere(~same)
            idx = tuple(int(i) for i in bad[0])
            how = "bit for bit" if tolerance is None else f"within {tolerance}"
            return Difference(
                name,
                idx,
                f"output {name!r} differs at index {list(idx)}: before {_show(b[idx])}, "
                f"after {_show(a[idx])}; {len(bad)} of {b.size} elements differ ({how})",
            )
    return None


# --------------------------------------------------------------------------- running


def run_kernel(module: ModuleOp, kernel: str, inputs: Inputs) -> dict[str, np.ndarray]:
    """Run `kernel` of `module` on the numpy back end: the arrays of the arguments it
    writes, by name (the back end never modifies `inputs`)."""
    from tileir.backends.numpy import run

    return {k: np.asarray(v) for k, v in run(module, inputs, kernel).items()}


@dataclass(frozen=True)
class InputSet:
    """One set of inputs of one kernel, and how to make it again."""

    kernel: str
    arrays: Inputs
    seed: int | None
    """The `random_inputs` seed, or None when the caller gave the arrays."""

    def describe(self) -> str:
        if self.seed is None:
            return f"inputs of @{self.kernel} given by the caller"
        return f"tileir.testing.random_inputs(module, {self.kernel!r}, seed={self.seed})"


def make_input_sets(
    module: ModuleOp,
    inputs: Inputs | Sequence[Inputs] | None = None,
    *,
    kernel: str | None = None,
    n_inputs: int = 3,
    seed: int = 0,
) -> list[InputSet]:
    """The input sets a check runs on: the caller's arrays for `kernel` (or the only
    kernel), else `n_inputs` random sets per kernel from seeds `seed, seed+1, ...`."""
    names = kernel_names(module)
    if inputs is not None:
        if kernel is None:
            if len(names) != 1:
                raise ValueError(f"inputs given for a module of {len(names)} kernels; name one")
            kernel = names[0]
        many = [inputs] if isinstance(inputs, Mapping) else list(inputs)
        return [InputSet(kernel, dict(x), None) for x in many]
    chosen = [kernel] if kernel is not None else names
    return [
        InputSet(k, random_inputs(module, k, seed + j), seed + j)
        for k in chosen
        for j in range(n_inputs)
    ]


# --------------------------------------------------------------------------- passes


def resolve_passes(pass_or_pipeline: ModulePass | Sequence[ModulePass] | str) -> list[ModulePass]:
    """A pass, a list of passes, or a pipeline string (`"cse,loop-unroll{factors=4,2}"`)."""
    if isinstance(pass_or_pipeline, ModulePass):
        return [pass_or_pipeline]
    if isinstance(pass_or_pipeline, str):
        return parse_pipeline(pass_or_pipeline)
    return list(pass_or_pipeline)


def pass_spec(p: ModulePass) -> str:
    return str(p.pipeline_pass_spec())


def check_round_trip(module: ModuleOp, where: str = "") -> None:
    """Custom and generic text both parse back to the same module."""
    text = print_module(module)
    suffix = f" {where}" if where else ""
    for generic in (False, True):
        form = "generic" if generic else "custom"
        printed = print_module(module, generic=generic) if generic else text
        try:
            again = print_module(parse_module(printed, f"<{form} form{suffix}>"))
        except TileirError as e:
            raise RoundTripFailure(
                f"the {form} form{suffix} does not parse back: {e}", printed
            ) from e
        if again != text:
            a, b = text.splitlines(), again.splitlines()
            line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            got = b[line] if line < len(b) else "<end>"
            want = a[line] if line < len(a) else "<end>"
            raise RoundTripFailure(
                f"the {form} form{suffix} does not round-trip: line {line + 1} reads "
                f"{got!r} after print -> parse, {want!r} before",
                text,
            )


@dataclass
class SemanticsGuard:
    """Checks one pass at a time against the module as it was before that pass.

    `tileir-opt --verify-semantics` calls `before(module)` before the first pass and
    `after(pass, module)` after each one; `check_pass` does the same. Outputs of the
    last good module are kept, so each pass costs one run per input set.
    """

    n_inputs: int = 3
    seed: int = 0
    tolerance: Tolerance | None = None
    inputs: Inputs | Sequence[Inputs] | None = None
    kernel: str | None = None
    round_trip: bool = True
    verify: bool = True
    on_unrunnable: Callable[[str], None] | None = None
    """Called with a message when a kernel fails before any pass; it is then skipped.
    When None, `UnrunnableProgram` is raised instead."""
    _text: str = ""
    _sets: list[InputSet] = field(default_factory=list)
    _outputs: list[dict[str, np.ndarray] | None] = field(default_factory=list)

    def before(self, module: ModuleOp) -> None:
        self._text = print_module(module)
        self._sets = make_input_sets(
            module, self.inputs, kernel=self.kernel, n_inputs=self.n_inputs, seed=self.seed
        )
        self._outputs = []
        skipped: set[str] = set()
        for s in self._sets:
            if s.kernel in skipped:
                self._outputs.append(None)
                continue
            try:
                self._outputs.append(run_kernel(module, s.kernel, s.arrays))
            except Exception as e:
                message = (
                    f"cannot check @{s.kernel}: the numpy back end fails on it before any "
                    f"pass ({s.describe()}): {e}"
                )
                if self.on_unrunnable is None:
                    raise UnrunnableProgram(message) from e
                self.on_unrunnable(message)
                skipped.add(s.kernel)
                self._outputs.append(None)

    def reproducer(self, p: ModulePass, s: InputSet | None) -> str:
        header = [
            f"// tileir-opt reproducer: pass '{pass_spec(p)}' changed this module's meaning.",
            f"// Run: tileir-opt THIS_FILE -p '{pass_spec(p)}' --verify-semantics={self.n_inputs}",
        ]
        if s is not None:
            header.append(f"// Inputs: {s.describe()}")
        return "\n".join(header) + "\n" + self._text

    def after(self, p: ModulePass, module: ModuleOp) -> None:
        name = pass_spec(p)
        if self.verify:
            try:
                verify_located(module, f"after pass '{name}'")
            except TileirError as e:
                raise VerificationFailure(str(e), self.reproducer(p, None)) from e
        if self.round_trip:
            try:
                check_round_trip(module, f"after pass '{name}'")
            except RoundTripFailure as e:
                raise RoundTripFailure(e.summary, self.reproducer(p, None)) from e
        after_names = set(kernel_names(module))
        new_outputs: list[dict[str, np.ndarray] | None] = []
        for s, before in zip(self._sets, self._outputs):
            if before is None:
                new_outputs.append(None)
                continue
            where = f"pass '{name}' changed the meaning of @{s.kernel} ({s.describe()})"
            if s.kernel not in after_names:
                raise SemanticsMismatch(
                    f"{where}: the kernel is gone",
                    self.reproducer(p, s),
                    pass_name=name,
                    kernel=s.kernel,
                )
            try:
                after = run_kernel(module, s.kernel, s.arrays)
            except Exception as e:
                raise SemanticsMismatch(
                    f"{where}: the numpy back end fails after the pass but not before: "
                    f"{type(e).__name__}: {e}",
                    self.reproducer(p, s),
                    pass_name=name,
                    kernel=s.kernel,
                ) from e
            diff = compare_outputs(before, after, self.tolerance)
            if diff is not None:
                raise SemanticsMismatch(
                    f"{where}: {diff.message}",
                    self.reproducer(p, s),
                    pass_name=name,
                    kernel=s.kernel,
                    output=diff.output,
                    index=diff.index,
                )
            new_outputs.append(after)
        self._outputs = new_outputs
        self._text = print_module(module)


def check_pass(
    pass_or_pipeline: ModulePass | Sequence[ModulePass] | str,
    module: ModuleOp,
    *,
    inputs: Inputs | Sequence[Inputs] | None = None,
    kernel: str | None = None,
    n_inputs: int = 3,
    seed: int = 0,
    tolerance: Tolerance | float | tuple[float, float] | None = None,
    round_trip: bool = True,
    ctx: Context | None = None,
) -> ModuleOp:
    """Apply a pass (or each pass of a pipeline) to a clone of `module` and check that
    every pass keeps it verifying, round-tripping and meaning the same.

    Inputs are the caller's arrays (for `kernel`, or the module's only kernel), or else
    `n_inputs` random sets per kernel from `random_inputs(module, kernel, seed + j)`.
    Outputs must match bit for bit unless a `tolerance` (a `Tolerance`, a float used as
    both rtol and atol, or an `(rtol, atol)` pair) is given.

    Returns the transformed clone; raises `SemanticsMismatch`, `VerificationFailure` or
    `RoundTripFailure` (all `CheckFailure`s) naming the pass, or `UnrunnableProgram`
    when the module fails on the back end before any pass.

    ```python
    from tileir.testing import check_pass
    out = check_pass("cse,canonicalize", module, n_inputs=2)
    ```
    """
    passes = resolve_passes(pass_or_pipeline)
    work = module.clone()
    guard = SemanticsGuard(
        n_inputs=n_inputs,
        seed=seed,
        tolerance=Tolerance.of(tolerance),
        inputs=inputs,
        kernel=kernel,
        round_trip=round_trip,
    )
    guard.before(work)
    context = ctx or make_context()
    for p in passes:
        p.apply(context, work)
        guard.after(p, work)
    return work
