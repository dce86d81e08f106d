"""`tileir-opt`: xDSL's opt driver with the `pto` dialect, tileir's passes, targets and
the PyPTO frontend (all found through the `xdsl.universe` entry point), plus located
diagnostics and IR verification after every pass.

`--verify-semantics[=N]` adds translation validation: after each pass, the module before
and after it run on N random inputs on the numpy back end (see `tileir.testing`), and
the pipeline stops with a diagnostic naming the pass if their outputs differ."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.xdsl_opt_main import xDSLOptMain

from tileir.diagnostics import TileirError, format_exception, parse_located, verify_located

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


def _load_kernel_call(chunk: IO[bytes], name: str, args: list[str], inputs: list[str]) -> ModuleOp:
    from frontends.pypto import load_source
    from frontends.pypto.specialise import parse_cli_args

    return load_source(chunk.read().decode("utf-8"), name, args=parse_cli_args(args, inputs))


class TileirOptMain(xDSLOptMain):
    version_format = "tileir-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        argv = _expand_bare_verify_semantics(sys.argv[1:] if args is None else args)
        super().__init__(description="tileir modular optimizer driver (xDSL opt)", args=argv)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--verify-semantics",
            type=_positive_int,
            default=None,
            metavar="N",
            help="after each pass, run the module before and after it on N random inputs "
            f"(default {VERIFY_SEMANTICS_INPUTS}) with the numpy back end and stop if an "
            "output differs, writing a reproducer file",
        )
        add_kernel_call_arguments(arg_parser)

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        frontend = self.args.frontend or file_extension
        if frontend == "py" and (self.args.arg or self.args.input):
            return _load_kernel_call(chunk, self.get_input_name(), self.args.arg, self.args.input)
        if frontend != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = chunk.read().decode("utf-8")
        # Keep line numbers of later `// -----` chunks true to the file.
        return parse_located(self.ctx, "\n" * start_offset + text, self.get_input_name())

    def setup_pipeline(self) -> None:
        guard = self._semantics_guard()

        def check(previous: ModulePass | None, module: ModuleOp, next_: ModulePass | None):
            if not self.args.disable_verify:
                context = f"after pass '{previous.name}'" if previous is not None else ""
                verify_located(module, context)
            if guard is not None and (previous, next_) != (None, None):  # no passes, no check
                self._check_semantics(guard, previous, module)

        self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, check)

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


def main(args: Sequence[str] | None = None) -> int:
    """Run the driver; any failure becomes a located diagnostic on stderr, exit 1."""
    try:
        TileirOptMain(args).run()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the driver must never show a traceback
        print(format_exception(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
