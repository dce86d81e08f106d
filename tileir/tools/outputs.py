"""A tool's output files, all or nothing, and its exit on a signal.

A tool writes every output into a hidden temporary folder beside its target and moves
them into place only once all of them are written, with SIGINT / SIGTERM / SIGHUP
held back during the moves; on any failure or signal the temporary folder is removed
and no target is touched (an existing file keeps its contents). Files are created
with `open`, so they get the user's umask, not `mkstemp`'s 0600.

    with staged_outputs() as stage:
        np.save(stage.path_for(out / "y.npy"), y)
        ...                                 # everything in place when the block ends

The tools call `exit_on_signals()` first thing, so that SIGTERM / SIGHUP unwind the
stack like Ctrl-C does (cleaning up) and end the process with 128 + the signal number.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tileir.errors import TileirError

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM / SIGHUP: a `KeyboardInterrupt`, so that it
    unwinds like Ctrl-C (no `except Exception` swallows it) and a tool's
    `except KeyboardInterrupt` exits with 128 + `signum`."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def exit_on_signals() -> None:
    """Turn SIGTERM / SIGHUP into `Terminated` (SIGINT already raises
    `KeyboardInterrupt`)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_terminated)


def reader_gone() -> int:
    """The exit of `tileir-opt` when its stdout reader goes away (`... | head`): a
    `BrokenPipeError` ends it quietly with 128 + SIGPIPE, as a tool that SIGPIPE kills
    (Python ignores the signal and raises instead). Stdout is pointed at /dev/null, so
    that Python's flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 128 + signal.SIGPIPE


def _format_warning(message, category, filename, lineno, line=None):  # noqa: ANN001, ANN202
    from tileir.errors import TileirWarning

    if issubclass(category, TileirWarning):
        return f"{message}\n"
    return _PYTHON_FORMATWARNING(message, category, filename, lineno, line)


_PYTHON_FORMATWARNING = warnings.formatwarning


def plain_warnings() -> None:
    """Print tileir's located warnings as compilers do (the text alone, not Python's
    `file:line: Category:` frame); other warnings as Python does."""
    warnings.formatwarning = _format_warning


@contextmanager
def _signals_held() -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def pause_for_test(point: str) -> None:
    """A deterministic kill point for the tools' signal tests: when the environment
    variable TILEIR_TEST_PAUSE is `POINT:FILE`, create FILE and sleep (until a signal)."""
    spec = os.environ.get("TILEIR_TEST_PAUSE", "")
    name, sep, ready = spec.partition(":")
    if sep and name == point:
        Path(ready).touch()
        time.sleep(600)


class StagedOutputs:
    """Temporary paths for output files, moved onto their targets by `commit`."""

    def __init__(self) -> None:
        self._folders: dict[Path, Path] = {}
        self._files: list[tuple[Path, Path]] = []

    def path_for(self, target: str | os.PathLike[str]) -> Path:
        """Where to write `target` for now; checks up front that it can be replaced."""
        target = Path(target)
        if target.is_dir():
            raise TileirError(f"error: cannot write {target}: it is a directory")
        if any(t == target for _, t in self._files):
            raise TileirError(f"error: {target} would be written twice")
        parent = target.parent
        folder = self._folders.get(parent)
        if folder is None:
            try:
                folder = Path(tempfile.mkdtemp(prefix=".tileir-", dir=parent))
            except OSError as e:
                raise TileirError(
                    f"error: cannot write {target}: {e.strerror or e} (in {parent})"
                ) from None
            self._folders[parent] = folder
        tmp = folder / target.name
        self._files.append((tmp, target))
        return tmp

    def commit(self) -> None:
        """Move every written file onto its target (signals held back meanwhile)."""
        with _signals_held():
            for tmp, target in self._files:
                try:
                    os.replace(tmp, target)
                except OSError as e:
                    raise TileirError(f"error: cannot write {target}: {e.strerror or e}") from None

    def discard(self) -> None:
        with _signals_held():
            for folder in self._folders.values():
                shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def staged_outputs() -> Iterator[StagedOutputs]:
    """Stage output files; commit them if the block succeeds, else leave no trace.

    An `OSError` while writing is reported for the target, not the temporary file."""
    stage = StagedOutputs()
    try:
        try:
            yield stage
        except OSError as e:
            written = {tmp: target for tmp, target in stage._files}
            target = written.get(Path(e.filename)) if e.filename else None
            what = target or (stage._files[-1][1] if stage._files else "the output")
            raise TileirError(f"error: cannot write {what}: {e.strerror or e}") from None
        stage.commit()
    finally:
        stage.discard()


def write_text_output(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` to `path` all or nothing."""
    with staged_outputs() as stage:
        stage.path_for(path).write_text(text, encoding="utf-8")


__all__ = [
    "StagedOutputs",
    "Terminated",
    "exit_on_signals",
    "staged_outputs",
    "pause_for_test",
    "write_text_output",
]
