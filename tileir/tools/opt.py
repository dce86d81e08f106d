"""`tileir-opt`: xDSL's opt driver with the `pto` dialect, tileir's passes, targets and
the PyPTO frontend (all found through the `xdsl.universe` entry point), plus located
diagnostics and IR verification after every pass."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.xdsl_opt_main import xDSLOptMain

from tileir.diagnostics import format_exception, parse_located, verify_located


class TileirOptMain(xDSLOptMain):
    version_format = "tileir-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="tileir modular optimizer driver (xDSL opt)", args=args)

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        frontend = self.args.frontend or file_extension
        if frontend != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = chunk.read().decode("utf-8")
        # Keep line numbers of later `// -----` chunks true to the file.
        return parse_located(self.ctx, "\n" * start_offset + text, self.get_input_name())

    def setup_pipeline(self) -> None:
        def check(previous: ModulePass | None, module: ModuleOp, _next: ModulePass | None):
            if not self.args.disable_verify:
                context = f"after pass '{previous.name}'" if previous is not None else ""
                verify_located(module, context)

        self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, check)


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
