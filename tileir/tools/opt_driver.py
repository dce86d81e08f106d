"""The driver of `tileir-opt` (see `tileir.tools.opt`): xDSL's opt driver with the `pto` dialect, tileir's passes, targets and
the PyPTO frontend (all found through the `xdsl.universe` entry point), plus located
diagnostics and IR verification after every pass.

`--verify-semantics[=N]` adds translation validation: after each pass, the module before
and after it run on N random inputs on the numpy back end (see `tileir.testing`), and
the pipeline stops with a diagnostic naming the pass if their outputs differ.

`-o FILE` is written all or nothing: to a temporary file that replaces FILE only when
the whole run succeeded, so a failure leaves an existing FILE as it was."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import IO, TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from tileir.diagnostics import TileirError, decode_source, parse_located, verify_located
from tileir.passes import parse_pipeline
from tileir.timing import Timings, clock, step_labels, timed
from tileir.tools.outputs import pause_for_test, staged_outputs

if TYPE_CHECKING:
    from tileir.testing.check import SemanticsGuard

VERIFY_SEMANTICS_INPUTS = 3
"""Random input sets per pass for a bare `--verify-semantics`."""


def _expand_bare_verify_semantics(args: Sequence[str]) -> list[str]:
    # A bare `--verify-semantics` followed by the input file would make argparse read
    # the file name as N; spelling the default out keeps `[=N]` optional.
    flag = "--verify-semantics"
    return [f"{flag}={VERIFY_SEMANTICS_INPUTS}" if a == flag else a for a in args]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of inputs, got {text!r}")
    return value


def add_kernel_call_arguments(arg_parser: argparse.ArgumentParser) -> None:
    """`--arg` / `--input`: the example call a `.py` kernel is specialised to."""
    arg_parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a kernel parameter of the call the .py kernel is built for: a tensor shape "
        "(13x64xbf16) or a scalar (1e-5, [32, 16]); repeatable",
    )
    if not any("--input" in a.option_strings for a in arg_parser._actions):
        arg_parser.add_argument(
            "--input",
            action="append",
            default=[],
            metavar="NAME=FILE.npy",
            help="a tensor parameter of that call, with the array's shape and dtype",
        )


def _load_kernel_call(
    chunk: IO[bytes], name: str, kernel: str | None, args: list[str], inputs: list[str]
) -> ModuleOp:
    from frontends.pypto import load_source
    from frontends.pypto.specialise import parse_cli_args

    text = decode_source(chunk.read(), name)
    return load_source(text, name, kernel, args=parse_cli_args(args, inputs))


class TileirOptMain(xDSLOptMain):
    version_format = "tileir-opt (xdsl {xdsl_version})"
    _timings: Timings | None = None
    """The --time-passes report's rows (None without the flag)."""

    def __init__(self, args: Sequence[str] | None = None):
        argv = _expand_bare_verify_semantics(sys.argv[1:] if args is None else args)
        super().__init__(description="tileir modular optimizer driver (xDSL opt)", args=argv)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--verify-each",
            action="store_true",
            help="verify the IR after every pass (default: once, after the last pass), "
            "naming the pass after which it broke",
        )
        arg_parser.add_argument(
            "--verify-semantics",
            type=_positive_int,
            default=None,
            metavar="N",
            help="after each pass, run the module before and after it on N random inputs "
            f"(default {VERIFY_SEMANTICS_INPUTS}) with the numpy back end and stop if an "
            "output differs, writing a reproducer file",
        )
        arg_parser.add_argument(
            "--cost",
            action="store_true",
            help="instead of the IR, print each kernel's time in the real pypto 0.2.0's "
            "SIM cost model (after the passes; see tileir.tuning.cost_lines)",
        )
        add_kernel_call_arguments(arg_parser)
        arg_parser.add_argument(
            "--kernel",
            metavar="NAME",
            help="for a .py file: read only this kernel (its function name or the "
            "module-level name it is bound to), so that --arg applies to it alone",
        )

    def output_resulting_program(self, prog: ModuleOp) -> str:
        with self._span("[output]"):
            if not self.args.cost:
                return super().output_resulting_program(prog)
            from tileir.tuning import cost_lines

            return cost_lines(prog)

    def _span(self, label: str) -> AbstractContextManager[None]:
        """A row of the --time-passes report (nothing without the flag)."""
        return timed(self._timings, label)

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        with self._span("[parse]"):
            return self._parse_chunk(chunk, file_extension, start_offset)

    def _parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int
    ) -> ModuleOp | None:
        frontend = self.args.frontend or file_extension
        if frontend == "py" and (self.args.arg or self.args.input or self.args.kernel):
            return _load_kernel_call(
                chunk, self.get_input_name(), self.args.kernel, self.args.arg, self.args.input
            )
        if self.args.kernel is not None:
            raise TileirError("error: --kernel is for .py kernel files")
        if frontend != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = decode_source(chunk.read(), self.get_input_name())
        # Keep line numbers of later `// -----` chunks true to the file.
        try:
            return parse_located(self.ctx, "\n" * start_offset + text, self.get_input_name())
        except TileirError as e:
            if self.args.parsing_diagnostics and isinstance(e.__cause__, ParseError):
                print(e)  # xDSL's flag: a syntax error printed on stdout, no failure
                return None
            raise

    def run(self) -> None:
        self._timings = Timings() if self.args.time_passes else None
        if self.args.output_file is None:
            super().run()
        else:
            with staged_outputs() as stage:
                self._staged_output = stage.path_for(self.args.output_file)
                super().run()
                pause_for_test("write")
        if self._timings is not None:
            # (on stderr, as mlir-opt's -mlir-timing: the IR on stdout stays clean)
            sys.stderr.write(self._timings.report())

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        return open(self._staged_output, "w", encoding="utf-8")

    def setup_pipeline(self) -> None:
        from tileir.passes.contracts import check_establishes, check_requires, expand

        guard = self._semantics_guard()
        # --verify-semantics compares the module before and after each pass, which
        # needs valid IR after each pass.
        each = self.args.verify_each or guard is not None

        parsed = parse_pipeline(self.args.passes, self.available_passes)
        # Composite passes (`default`) run step by step, so that contracts, verification
        # and --verify-semantics apply to each step.
        steps = tuple(expand(parsed))
        labels = step_labels([p.name for p in steps])
        span = self._span
        # --time-passes: step `done` (of each chunk's run) ran from `started` until
        # the next call of `check`
        started, done = clock(), 0

        def check(previous: ModulePass | None, module: ModuleOp, next_: ModulePass | None):
            nonlocal started, done
            if previous is None:
                done = 0
            elif self._timings is not None:
                self._timings.add_since(labels[done], started)
                done += 1
            # Verified once at the end (and on input, by the parser), or after every
            # pass with --verify-each, as mlir-opt does.
            if not self.args.disable_verify and previous is not None and (each or next_ is None):
                if each:
                    context = f"after pass '{previous.name}'"
                else:
                    context = (
                        f"after the pipeline '{self.args.passes}'; --verify-each names the "
                        "pass that broke it"
                    )
                with span("[verify]"):
                    verify_located(module, context)
                if each:
                    with span("[contracts]"):
                        check_establishes(previous, module)
            if next_ is not None:
                with span("[contracts]"):
                    check_requires(next_, module)
            if guard is not None and (previous, next_) != (None, None):  # no passes, no check
                with span("[verify-semantics]"):
                    self._check_semantics(guard, previous, module)
            if previous is not None and next_ is not None and self.args.print_between_passes:
                # (xDSL's own flag and format: the IR after every pass but the last)
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            started = clock()

        self.pipeline = PassPipeline(steps, check)

    def _semantics_guard(self) -> SemanticsGuard | None:
        # tileir.testing is imported only when asked for, to keep start-up fast.
        if self.args.verify_semantics is None:
            return None
        from tileir.testing.check import SemanticsGuard

        def warn(message: str) -> None:
            print(f"warning: --verify-semantics: {message}; not checking it", file=sys.stderr)

        return SemanticsGuard(
            n_inputs=self.args.verify_semantics,
            round_trip=False,
            verify=False,  # `check` already verifies (unless --disable-verify)
            on_unrunnable=warn,
        )

    @staticmethod
    def _check_semantics(
        guard: SemanticsGuard, previous: ModulePass | None, module: ModuleOp
    ) -> None:
        from tileir.testing.check import CheckFailure

        if previous is None:
            guard.before(module)
            return
        try:
            guard.after(previous, module)
        except CheckFailure as e:
            fd, path = tempfile.mkstemp(prefix=f"tileir-repro-{previous.name}-", suffix=".mlir")
            with open(fd, "w") as f:
                f.write(e.reproducer)
            raise TileirError(
                f"error: --verify-semantics: {e.summary}\nnote: reproducer (the module "
                f"before the pass) written to {path}"
            ) from e
