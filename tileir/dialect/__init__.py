"""The `pto` dialect and its tables."""

from tileir.dialect.pto import PTO

__all__ = ["PTO"]
