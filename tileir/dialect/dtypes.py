"""Element types: one row per type, shared by the dialect, the frontend, the emitter
and the numpy back end.

PyPTO names its element types `pypto.DT_*`; MLIR spells them as builtin types; numpy
needs `ml_dtypes` for bf16 and the fp8 kinds. Keeping the three spellings in one table
means a new type is one row, and no part of tileir can disagree with another on what
`DT_BF16` is.

The MLIR spelling is made on first use (`ElementType.mlir`, `BY_MLIR`): the numpy
semantics read the table, and a cached plan runs them without importing xDSL
(`tileir.backends.numpy.plan_cache`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    from xdsl.ir import Attribute


@dataclass(frozen=True)
class ElementType:
    """One element type in its three spellings, plus the short name used by tools."""

    short: str
    pypto: str
    make_mlir: Callable[[ModuleType], Attribute] = field(compare=False, repr=False)
    """The MLIR type, from xDSL's `builtin` module."""
    numpy: np.dtype

    @cached_property
    def mlir(self) -> Attribute:
        from xdsl.dialects import builtin

        return self.make_mlir(builtin)

    @property
    def is_int(self) -> bool:
        """Integers and i1; numpy's kinds for them (ml_dtypes floats are kind `V`)."""
        return self.numpy.kind in "iub"

    @property
    def is_float(self) -> bool:
        return not self.is_int

    @property
    def kind(self) -> str:
        """`float`, `int` or `bool` (i1): the classes the ops' element-type rules name."""
        return "bool" if self.numpy.kind == "b" else "int" if self.is_int else "float"


ELEMENT_TYPES: tuple[ElementType, ...] = (
    ElementType("bf16", "DT_BF16", lambda b: b.BFloat16Type(), np.dtype(ml_dtypes.bfloat16)),
    ElementType("f16", "DT_FP16", lambda b: b.Float16Type(), np.dtype(np.float16)),
    ElementType("f32", "DT_FP32", lambda b: b.Float32Type(), np.dtype(np.float32)),
    ElementType("i8", "DT_INT8", lambda b: b.IntegerType(8), np.dtype(np.int8)),
    ElementType("i16", "DT_INT16", lambda b: b.IntegerType(16), np.dtype(np.int16)),
    ElementType("i32", "DT_INT32", lambda b: b.IntegerType(32), np.dtype(np.int32)),
    ElementType("i64", "DT_INT64", lambda b: b.IntegerType(64), np.dtype(np.int64)),
    ElementType("i1", "DT_BOOL", lambda b: b.IntegerType(1), np.dtype(np.bool_)),
    ElementType(
        "f8E4M3FN",
        "DT_FP8E4M3",
        lambda b: b.Float8E4M3FNType(),
        np.dtype(ml_dtypes.float8_e4m3fn),
    ),
    ElementType(
        "f8E5M2", "DT_FP8E5M2", lambda b: b.Float8E5M2Type(), np.dtype(ml_dtypes.float8_e5m2)
    ),
    ElementType(
        "f8E8M0FNU",
        "DT_FP8E8M0",
        lambda b: b.Float8E8M0FNUType(),
        np.dtype(ml_dtypes.float8_e8m0fnu),
    ),
)

BY_SHORT: dict[str, ElementType] = {t.short: t for t in ELEMENT_TYPES}
BY_PYPTO: dict[str, ElementType] = {t.pypto: t for t in ELEMENT_TYPES}
BY_NUMPY: dict[np.dtype, ElementType] = {t.numpy: t for t in ELEMENT_TYPES}
BY_MLIR: dict[Attribute, ElementType]
"""By MLIR type; made on first use (it needs xDSL)."""


def __getattr__(name: str) -> Any:
    if name == "BY_MLIR":
        table = {t.mlir: t for t in ELEMENT_TYPES}
        globals()["BY_MLIR"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _by_mlir() -> dict[Attribute, ElementType]:
    table = globals().get("BY_MLIR")
    return table if table is not None else __getattr__("BY_MLIR")


def element_type(attr: Attribute) -> ElementType:
    """The table row of an MLIR element type; KeyError names the unsupported type."""
    try:
        return _by_mlir()[attr]
    except KeyError:
        raise KeyError(
            f"element type {attr} is not a PyPTO type "
            f"(supported: {', '.join(t.short for t in ELEMENT_TYPES)})"
        ) from None


def is_element_type(attr: Attribute) -> bool:
    return attr in _by_mlir()
