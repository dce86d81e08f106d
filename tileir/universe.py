"""tileir's plug-ins for xDSL: the `pto` dialect, the passes, the targets and the
PyPTO frontend, found by plain `xdsl-opt` through the `xdsl.universe` entry point."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.frontend import Frontend
from xdsl.utils.target import Target


def _pto() -> Dialect:
    from tileir.dialect.pto import PTO

    return PTO


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from tileir.passes import get_all_passes

    return get_all_passes()


def all_targets() -> dict[str, Callable[[], type[Target]]]:
    from tileir.backends import get_all_targets

    return get_all_targets()


def all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    from frontends import get_all_frontends

    return get_all_frontends()


TILEIR_UNIVERSE = Universe(
    all_dialects={"pto": _pto},
    all_passes=all_passes(),
    all_targets=all_targets(),
    all_frontends=all_frontends(),
)
