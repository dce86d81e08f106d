"""A disk cache of lowered numpy plans: running a `.mlir` kernel again skips the IR.

Most of a `tileir-run` of a `.mlir` file is start-up, and most of that is importing xDSL
(`benchmarks/startup.py`). A lowered plan no longer needs the IR (`runtime`), so
`tileir-run` keeps it, pickled with cloudpickle, under a key of everything it was
lowered from: the file's bytes and the path as given (locations in errors name it), the
kernel asked for, and the versions of Python, numpy, ml_dtypes, cloudpickle, xDSL and
tileir's own modules (path, size and mtime of each). A run that finds its key loads the
plan and imports neither xDSL's IR nor tileir's compiler, as Triton, JAX and numba
keep compiled kernels.

- Where: `$TILEIR_CACHE_DIR`, else `$XDG_CACHE_HOME/tileir/plans`, else
  `~/.cache/tileir/plans`. `TILEIR_NO_CACHE=1` (or `tileir-run --no-cache`) turns it off.
- Loading a pickle runs code, so the cache is read only from a directory that the user
  owns and nobody else may write (it is created 0700); any other directory is ignored.
- Only plans are stored, never errors: a file that does not parse or verify goes
  through the compiler on every run. A stored file that does not load (truncated, from
  another version) is a miss and is replaced. Files are written to a temporary name and
  renamed, so that concurrent runs never read half a plan.
- At most `MAX_ENTRIES` plans are kept: the ones used least recently go first (and a
  temporary file a killed run left is removed after an hour).

The compiler's modules are pickled by value (their closures and helpers travel in the
file), the run-time modules (`runtime`, `semantics`, `fastpaths`, `arith_semantics`) by
reference. A plan that would carry an xDSL object is not stored.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from tileir.backends.numpy.runtime import Plan

MAX_ENTRIES = 256
FORMAT = b"tileir-plan 1\n"
"""The first line of every stored file; raise it when what a file holds changes."""

_PACKAGE = Path(__file__).resolve().parents[2]  # tileir/
_BY_VALUE = (
    "tileir.backends.numpy.compiler",
    "tileir.backends.numpy.interpreter",
    "tileir.backends.numpy.loops",
    "tileir.backends.numpy.scalar_rules",
    "tileir.backends.numpy.rules",
)
"""The lowering's modules: they import xDSL, so what a plan uses of them is stored in it."""


def cache_dir() -> Path | None:
    """The cache's directory, or None when the cache is off."""
    if os.environ.get("TILEIR_NO_CACHE", "") not in ("", "0"):
        return None
    if given := os.environ.get("TILEIR_CACHE_DIR"):
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tileir" / "plans"


def _private(folder: Path) -> bool:
    """Whether `folder` exists, belongs to this user and only they may write it."""
    try:
        st = folder.stat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return mine and not st.st_mode & 0o022


def _sources_fingerprint(h: Any) -> None:
    """Path, size and mtime of every module of tileir, and of xDSL's package: a changed
    module (an edit, a reinstall) gives new keys."""
    stack = [str(_PACKAGE)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in sorted(entries, key=lambda e: e.name):
                if e.is_dir() and e.name != "__pycache__":
                    stack.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    xdsl = find_spec("xdsl")
    for folder in xdsl.submodule_search_locations or () if xdsl else ():
        for name in ("__init__.py", "_version.py"):
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())


def plan_key(data: bytes, path: str, kernel: str | None) -> str:
    """The cache key of the plan that `path` (holding `data`) lowers to for `kernel`."""
    import cloudpickle
    import ml_dtypes
    import numpy as np

    h = hashlib.sha256(FORMAT)
    versions = (sys.version, np.__version__, ml_dtypes.__version__, cloudpickle.__version__)
    h.update(repr((versions, path, kernel)).encode())
    _sources_fingerprint(h)
    h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def load(key: str) -> Plan | None:
    """The stored plan of `key`, or None (no cache, not stored, or not loadable)."""
    folder = cache_dir()
    if folder is None or not _private(folder):
        return None
    file = folder / f"{key}.plan"
    try:
        with open(file, "rb") as f:
            if f.readline() != FORMAT:
                raise ValueError("not a plan of this format")
            plan = pickle.load(f)
        if not isinstance(plan, Plan):
            raise TypeError(f"not a plan: {type(plan).__name__}")
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or foreign file is a miss; the next store replaces it
        return None
    try:
        os.utime(file)  # the least recently used go first
    except OSError:
        pass
    return plan


def store(key: str, plan: Plan) -> bool:
    """Keep `plan` under `key`; False when it was not stored (no cache, a directory
    others may write, a plan that cannot be pickled without the IR, a full disk)."""
    folder = cache_dir()
    if folder is None:
        return False
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return False
    if not _private(folder):
        return False
    try:
        data = _pickle(plan)
    except Exception:
        return False
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(FORMAT)
            f.write(data)
        os.replace(tmp, folder / f"{key}.plan")
    except BaseException as e:  # a full disk, or Ctrl-C while writing: no file left
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            return False
        raise
    _prune(folder)
    return True


class _NoIRError(pickle.PicklingError):
    pass


def _pickle(plan: Plan) -> bytes:
    import cloudpickle

    class NoIRPickler(cloudpickle.Pickler):
        """Refuses xDSL objects: a plan holding one would import xDSL when loaded."""

        def reducer_override(self, obj: Any) -> Any:
            module = getattr(type(obj), "__module__", None) or ""
            if module.startswith("xdsl"):
                raise _NoIRError(f"the plan holds a {type(obj).__name__}")
            return super().reducer_override(obj)

    modules = [
        m for name, m in list(sys.modules.items()) if m is not None and name.startswith(_BY_VALUE)
    ]
    for m in modules:
        cloudpickle.register_pickle_by_value(m)
    try:
        buffer = io.BytesIO()
        NoIRPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(plan)
        return buffer.getvalue()
    finally:
        for m in modules:
            cloudpickle.unregister_pickle_by_value(m)


STALE_SECONDS = 3600
"""A temporary file older than this is what a killed run left behind."""


def _prune(folder: Path) -> None:
    """Keep the `MAX_ENTRIES` most recently used plans; drop stale temporary files."""
    try:
        entries = [(e.stat().st_mtime_ns, e.name, e.path) for e in os.scandir(folder)]
    except OSError:
        return
    plans = sorted((t, path) for t, name, path in entries if name.endswith(".plan"))
    old = time.time_ns() - STALE_SECONDS * 10**9
    doomed = [path for t, name, path in entries if name.endswith(".tmp") and t < old]
    doomed += [path for _, path in plans[: max(0, len(plans) - MAX_ENTRIES)]]
    for path in doomed:
        try:
            os.unlink(path)
        except OSError:
            pass
