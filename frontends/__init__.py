"""Readers that build `pto` IR from other inputs: PyPTO kernel source files."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.frontend import Frontend


def get_all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    """Frontend name (`-f NAME`, or the input file's extension) -> factory."""

    def pypto() -> type[Frontend]:
        from frontends.pypto import PyptoFrontend

        return PyptoFrontend

    return {"py": pypto}
