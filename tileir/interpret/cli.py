"""`tileir-interpret SCRIPT.py [ARGS]`: run a Python script with interpret mode on.

The script runs as `python SCRIPT.py ARGS` would run it (`__name__ == "__main__"`,
`sys.argv`, an absolute `__file__`, its folder first on `sys.path`), with `pypto`, `torch_npu` and the NPU
mapped to the CPU. Its exit status is the script's; an error tileir reports about a
kernel (`KernelError`, located in the kernel's file) is printed without a traceback,
exit status 1; other exceptions show their traceback, as Python would.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from tileir.diagnostics import TileirError

USAGE = "usage: tileir-interpret SCRIPT.py [ARGS ...]"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    script = Path(args[0])
    if not script.is_file():
        print(f"tileir-interpret: error: no such file: {script}", file=sys.stderr)
        return 2
    from tileir.interpret.mode import interpret_mode

    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args[1:]]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        with interpret_mode():
            # `__file__` absolute, as Python (3.9+) sets it for `python SCRIPT.py`:
            # scripts walk up from `os.path.dirname(__file__)` to find their repository
            runpy.run_path(str(script.resolve()), run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except TileirError as e:
        print(str(e), file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


if __name__ == "__main__":
    sys.exit(main())
