"""Kernel arguments across the torch <-> numpy boundary, bit for bit.

A kernel's tensor arguments arrive as torch CPU tensors or numpy arrays; the numpy back
end takes numpy arrays (`ml_dtypes` for bf16 and the fp8 kinds). torch has no numpy
counterpart for bf16 or fp8, and converting values (`.float().numpy()`) would round, so
a tensor is *reinterpreted*: viewed as the integer type of its width (`.view(torch.int16)`),
handed to numpy (which shares the memory), and viewed back as the `ml_dtypes` type. No
element is converted, and the numpy array is the tensor's own memory, so writing an
output into it writes the caller's tensor in place, as PyPTO does on the device.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from tileir.dialect.dtypes import BY_NUMPY, ELEMENT_TYPES


@dataclass(frozen=True)
class _TorchDtype:
    """How one torch dtype reaches numpy: through a same-width integer view when numpy
    has no such type."""

    torch_name: str
    numpy: np.dtype
    via: str | None
    """The torch integer dtype to view through (`int16` for bf16), or None when torch's
    own `.numpy()` keeps the bits."""


def _torch_table() -> tuple[_TorchDtype, ...]:
    # torch spells the fp8 kinds as ml_dtypes does; bf16 is `bfloat16` in both. torch's
    # `.numpy()` knows only numpy's own types: the ml_dtypes ones go through an int view.
    rows = []
    for t in ELEMENT_TYPES:
        name = t.numpy.name if t.numpy.kind != "b" else "bool"
        native = t.is_int or t.numpy in (np.dtype(np.float16), np.dtype(np.float32))
        via = None if native else f"int{8 * t.numpy.itemsize}"
        rows.append(_TorchDtype(name, t.numpy, via))
    return tuple(rows)


TORCH_DTYPES: tuple[_TorchDtype, ...] = _torch_table()
_BY_TORCH_NAME = {row.torch_name: row for row in TORCH_DTYPES}


def is_torch_tensor(value: Any) -> bool:
    """Without importing torch: a script that never imports it pays nothing."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def is_tensor(value: Any) -> bool:
    return isinstance(value, np.ndarray) or is_torch_tensor(value)


def to_numpy(value: Any, what: str) -> np.ndarray:
    """The numpy array sharing `value`'s memory (a torch CPU tensor or a numpy array),
    with the element type tileir uses for it; a `TypeError` names what is wrong."""
    if isinstance(value, np.ndarray):
        if value.dtype not in BY_NUMPY:
            raise TypeError(f"{what}: numpy dtype {value.dtype} is not a PyPTO element type")
        return value
    import torch

    t: torch.Tensor = value.detach()
    if t.device.type != "cpu":
        raise TypeError(f"{what}: a tensor on {t.device}; interpret mode runs on CPU tensors")
    name = str(t.dtype).removeprefix("torch.")
    row = _BY_TORCH_NAME.get(name)
    if row is None:
        raise TypeError(f"{what}: torch dtype {t.dtype} is not a PyPTO element type")
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    if row.via is None:
        return t.numpy()
    return t.view(getattr(torch, row.via)).numpy().view(row.numpy)


def describe(value: Any) -> str:
    """`bf16[4, 64]` for a tensor argument, `repr` for anything else (errors, keys)."""
    if is_tensor(value):
        shape = list(value.shape)
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype}{shape}"
    return repr(value)
