"""The `pto` dialect and its tables.

`PTO` is imported on first use: the table modules (`gathermask`) are read by the numpy
semantics, which a cached plan runs without importing the dialect."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tileir.dialect.pto import PTO

__all__ = ["PTO"]


def __getattr__(name: str) -> Any:
    if name == "PTO":
        from tileir.dialect.pto import PTO

        return PTO
    raise AttributeError(f"module 'tileir.dialect' has no attribute {name!r}")
