"""A kernel's parameters specialised to one call, as PyPTO's JIT specialises them.

A tensor parameter's annotation says which dims come from where:

| annotation dim | without the call | with an example argument |
| --- | --- | --- |
| `64` | 64 | 64 (the call must agree) |
| `pypto.frontend.dynamic("S")` | `?`, named `S` | `?`, named `S` |
| `pypto.DYNAMIC` | `?`, named `<param>_<dim>` | `?`, bound at run time |
| `pypto.STATIC` | `?`, named `<param>_<dim>`, until Python needs its value | the call's size |
| `...` (last), `[]`, `pypto.tensor()` | an error naming the parameter | the call's sizes |

An annotation of `pypto.DYNAMIC` / `pypto.STATIC` marks (and ints) takes a call of a
higher rank, as PyPTO's JIT does (it checks only that the call has at least the
annotation's rank): the extra trailing dims are the call's sizes.

A missing dtype comes from the call (FP32 without one). Scalar (and any other non-tensor)
parameters are constants of the specialisation: the call's value, else the default, else
an error where the kernel uses the value, naming the parameter.

Example arguments are numpy arrays, torch tensors, or `ArgShape`s; on the command line
`--arg x=13x64xbf16` (an `ArgShape`), `--arg eps=1e-5` (a Python literal) and
`--input x=FILE.npy` (the array's shape and dtype).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

from frontends.pypto.values import Dynamic, PyptoRef, TensorSpec
from tileir.diagnostics import TileirError
from tileir.dialect import dtypes

__all__ = [
    "ArgShape",
    "TensorParam",
    "example_of",
    "parse_arg",
    "parse_cli_args",
    "tensor_param",
]

STATIC = PyptoRef(("STATIC",))
DYNAMIC = PyptoRef(("DYNAMIC",))


@dataclass(frozen=True)
class ArgShape:
    """An example tensor argument given by shape and element type only."""

    shape: tuple[int, ...]
    dtype: dtypes.ElementType

    def __str__(self) -> str:
        return "x".join([*map(str, self.shape), self.dtype.short])


_TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "f16",
    "half": "f16",
    "float32": "f32",
    "float": "f32",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "bool": "i1",
    "float8_e4m3fn": "f8E4M3FN",
    "float8_e5m2": "f8E5M2",
    "float8_e8m0fnu": "f8E8M0FNU",
}


def example_of(value: Any) -> ArgShape | None:
    """The shape and element type of an example tensor argument, None for anything else
    (a scalar or a config object). torch is recognised without being imported."""
    if isinstance(value, ArgShape):
        return value
    if isinstance(value, np.ndarray):
        et = dtypes.BY_NUMPY.get(value.dtype)
        if et is None:
            raise TileirError(f"error: numpy dtype {value.dtype} has no tileir element type")
        return ArgShape(tuple(int(s) for s in value.shape), et)
    if type(value).__module__.startswith("torch") and hasattr(value, "shape"):
        name = str(getattr(value, "dtype", "")).removeprefix("torch.")
        short = _TORCH_DTYPES.get(name)
        if short is None:
            raise TileirError(f"error: torch dtype {name} has no tileir element type")
        return ArgShape(tuple(int(s) for s in value.shape), dtypes.BY_SHORT[short])
    return None


def parse_arg(text: str) -> Any:
    """`13x64xbf16` -> an `ArgShape`; anything else a Python literal (`1e-5`, `[32, 16]`,
    `True`); a bare word stays a string."""
    parts = text.split("x")
    if len(parts) >= 2 and parts[-1] in dtypes.BY_SHORT:
        if all(p.isdigit() and int(p) > 0 for p in parts[:-1]):
            return ArgShape(tuple(int(p) for p in parts[:-1]), dtypes.BY_SHORT[parts[-1]])
    if text in dtypes.BY_SHORT:
        return ArgShape((), dtypes.BY_SHORT[text])
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_cli_args(args: Sequence[str], inputs: Sequence[str] = ()) -> dict[str, Any]:
    """`--arg NAME=VALUE` and `--input NAME=FILE.npy` (shape and dtype of the array) as
    the example arguments of a call, by parameter name."""
    out: dict[str, Any] = {}
    for flag, specs in (("--arg", args), ("--input", inputs)):
        for spec in specs:
            name, sep, value = spec.partition("=")
            if not sep or not name.isidentifier() or not value:
                want = "NAME=FILE.npy" if flag == "--input" else "NAME=VALUE"
                raise TileirError(f"error: {flag} {spec!r}: expected {want}")
            if name in out:
                raise TileirError(f"error: {flag} {name!r}: the parameter is given twice")
            out[name] = _npy_shape(Path(value), flag) if flag == "--input" else parse_arg(value)
    return out


def _npy_shape(path: Path, flag: str) -> ArgShape:
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise TileirError(f"error: {flag} {path}: cannot read it as .npy: {e}") from None
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:
        return ArgShape(tuple(array.shape), dtypes.BY_SHORT["bf16"])  # bf16 saved raw
    shape = example_of(np.empty((0,), array.dtype))
    assert shape is not None
    return ArgShape(tuple(int(s) for s in array.shape), shape.dtype)


@dataclass
class TensorParam:
    """A tensor parameter of one specialisation."""

    type: MemRefType
    dynamic_names: list[str]
    written: list[str] | None
    """The annotation's dims as the user wrote them, for `-t pypto` (None when they are
    all ints and `pypto.frontend.dynamic` names, which the IR already says)."""
    call_dims: list[int]
    """The dims that are `?` only because the call's shape was not given (STATIC)."""


def tensor_param(name: str, spec: TensorSpec, example: ArgShape | None) -> TensorParam:
    """The memref of tensor parameter `name`; a `TileirError` message (no location) when
    the annotation and the call disagree or the call is needed."""
    give = f"give its shape with --arg {name}=AxBx<dtype> (or an example array)"
    if isinstance(spec.dtype, PyptoRef):
        raise TileirError(f"{spec.dtype.dotted} has no tileir element type")
    elem = spec.dtype
    if example is not None and elem is not None and example.dtype != elem:
        raise TileirError(
            f"`{name}` is annotated pypto.{elem.pypto} but the call gives "
            f"pypto.{example.dtype.pypto}"
        )
    elem = elem or (example.dtype if example is not None else dtypes.BY_PYPTO["DT_FP32"])
    written = spec.shape
    dims: list[Any]
    if written is None or written == ():
        if example is None:
            what = "pypto.tensor()" if written is None else "pypto.Tensor([])"
            raise TileirError(
                f"`{name}` is annotated {what}: its shape comes from the call; {give}"
            )
        dims = [STATIC] * len(example.shape)
    elif written[-1] is Ellipsis:
        if example is None:
            raise TileirError(
                f"`{name}`'s shape ends in `...`: its rank comes from the call; {give}"
            )
        if len(example.shape) < len(written) - 1:
            raise TileirError(
                f"`{name}` has at least {len(written) - 1} dims but the call gives "
                f"{ArgShape(example.shape, elem)}"
            )
        dims = [*written[:-1], *[STATIC] * (len(example.shape) - len(written) + 1)]
    else:
        dims = list(written)
        # PyPTO's JIT checks a call against an annotation of pypto.DYNAMIC / STATIC marks
        # (its `status_shape`) for at least the annotation's rank only; the extra trailing
        # dims are the call's (static), as `pypto.from_torch` makes the tensor
        marks = all(isinstance(x, int | PyptoRef) for x in dims) and not all(
            isinstance(x, int) for x in dims
        )
        extra = len(example.shape) - len(dims) if example is not None else 0
        if extra > 0 and marks:
            dims += [STATIC] * extra
        elif extra:
            at_least = "at least " if marks else ""
            raise TileirError(
                f"`{name}` has {at_least}{len(dims)} dims but the call gives "
                f"{ArgShape(example.shape, elem)}"
            )
    shape: list[int] = []
    names: list[str] = []
    call_dims: list[int] = []
    for d, dim in enumerate(dims):
        given = example.shape[d] if example is not None else None
        if isinstance(dim, int):
            if given is not None and given != dim:
                raise TileirError(
                    f"`{name}` dim {d} is {dim} in the annotation but {given} in the call"
                )
            shape.append(dim)
        elif dim == STATIC and given is not None:
            shape.append(given)
        else:
            shape.append(DYNAMIC_INDEX)
            names.append(dim.name if isinstance(dim, Dynamic) else f"{name}_{d}")
            if dim == STATIC:
                call_dims.append(d)
    marked = not written or any(not isinstance(x, int | Dynamic) for x in written)
    tokens = [_token(x) for x in written or ()] if marked else None
    return TensorParam(MemRefType(elem.mlir, shape), names, tokens, call_dims)


def _token(dim: Any) -> str:
    if isinstance(dim, int):
        return str(dim)
    if isinstance(dim, Dynamic):
        return ""  # the IR's own dynamic name
    if dim is Ellipsis:
        return "..."
    return dim.dotted


def call_values(params: Sequence[str], call: Mapping[str, Any]) -> dict[str, Any]:
    """The call's values by parameter; an error for a name that is no parameter."""
    unknown = sorted(set(call) - set(params))
    if unknown:
        raise TileirError(
            f"the kernel has no parameter `{unknown[0]}` (its parameters: {', '.join(params)})"
        )
    return dict(call)
