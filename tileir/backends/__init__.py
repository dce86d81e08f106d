"""tileir's back ends: the numpy interpreter and the PyPTO emitter."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Target name (`-t NAME`) -> factory, imported lazily."""

    def pypto() -> type[Target]:
        from tileir.backends.pypto.emitter import PyptoTarget

        return PyptoTarget

    return {"pypto": pypto}
