"""`tileir-opt`: xDSL's opt driver with the `pto` dialect, tileir's passes, targets and
the PyPTO frontend (the driver is `tileir.tools.opt_driver.TileirOptMain`).

Every failure is a located diagnostic on stderr and exit code 1, never a traceback;
Ctrl-C, SIGTERM and SIGHUP end it with 128 + the signal number and leave no partial
`-o` file. The driver (xDSL, numpy) is imported inside `main`, so that an interrupt
during start-up is handled too."""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tileir.tools.opt_driver import TileirOptMain

__all__ = ["TileirOptMain", "main"]


def main(args: Sequence[str] | None = None) -> int:
    """Run the driver; any failure becomes a located diagnostic on stderr, exit 1."""
    try:
        from tileir.diagnostics import format_exception
        from tileir.tools.outputs import exit_on_signals, pause_for_test, plain_warnings

        exit_on_signals()
        plain_warnings()
        pause_for_test("startup")
        from tileir.tools.opt_driver import TileirOptMain

        TileirOptMain(args).run()
    except SystemExit:
        raise
    except KeyboardInterrupt as e:  # also SIGTERM / SIGHUP (`Terminated`)
        return 128 + getattr(e, "signum", signal.SIGINT)
    except BrokenPipeError:  # stdout's reader went away
        from tileir.tools.outputs import reader_gone

        return reader_gone()
    except Exception as e:  # the driver must never show a traceback
        print(format_exception(e), file=sys.stderr)
        return 1
    return 0


def __getattr__(name: str) -> Any:
    if name == "TileirOptMain":
        from tileir.tools import opt_driver

        return opt_driver.TileirOptMain
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
