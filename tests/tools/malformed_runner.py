"""Run a batch of corpus cases through tileir-opt / tileir-run, each in its own process.

    python malformed_runner.py CASES.json  ->  one JSON result per line on stdout

The runner imports tileir once, then forks a child per case (cheap: the imports are
shared), which sets its bounds with `resource.setrlimit` (CPU seconds and address
space), sends stdout and stderr to files and calls the tool's `main`, as the console
script does. The result is the child's exit status (or the signal that ended it: a bound
it hit) and its stderr. A child that neither ends nor uses CPU is killed after a wall
clock guard; none of these bounds is a speed assertion, they only make a runaway case
fail instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

CPU_SECONDS = 60
MEMORY_BYTES = 3 << 30  # on top of what the runner itself maps
WALL_GUARD_SECONDS = 300


def command(tool: str, path: str, out_dir: str) -> tuple[str, list[str]]:
    if tool == "run":
        return "run", [path, "--random-inputs", "--output-dir", out_dir]
    extra = {"opt": [], "default": ["-p", "default"], "emit": ["-p", "default", "-t", "pypto"]}
    return "opt", [path, *extra[tool]]


def vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def run_case(tool: str, path: str, work: Path) -> dict[str, object]:
    which, args = command(tool, path, str(work / "out"))
    err_file = work / "stderr"
    pid = os.fork()
    if pid == 0:  # the child: bounds, redirections, the tool
        try:
            limit = vm_size() + MEMORY_BYTES
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 5))
            err = os.open(err_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            out = os.open(work / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            os.dup2(out, 1)
            if which == "run":
                from tileir.tools.run import main
            else:
                from tileir.tools.opt import main
            sys.argv = [f"tileir-{which}", *args]
            try:
                code = main(args)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # the runner's own failure: report it like a traceback
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            code = 99
        os._exit(code)
    deadline = time.monotonic() + WALL_GUARD_SECONDS
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    return {
        "path": path,
        "exit": os.waitstatus_to_exitcode(status),
        "stderr": err_file.read_text(errors="replace"),
    }


def main() -> None:
    # Import what the tools use once, before forking.
    import frontends.pypto  # noqa: F401
    import tileir.backends.numpy  # noqa: F401
    import tileir.backends.pypto.emitter  # noqa: F401
    import tileir.passes  # noqa: F401
    import tileir.tools.opt_driver  # noqa: F401
    import tileir.tools.run  # noqa: F401

    batch = json.loads(Path(sys.argv[1]).read_text())
    for i, (tool, path) in enumerate(batch):
        work = Path(sys.argv[1]).parent / f"work-{i}"
        work.mkdir()
        print(json.dumps(run_case(tool, path, work)), flush=True)


if __name__ == "__main__":
    main()
