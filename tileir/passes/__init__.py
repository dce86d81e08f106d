"""tileir's passes. Each is a `ModulePass` registered here by its kebab-case name."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory, imported lazily so that `--help` stays fast."""
    return {}
