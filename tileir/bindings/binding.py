"""`Binding`: everything tileir knows about one PyPTO function, in one entry.

A binding is what a JAX primitive is to its rules: the PyPTO name and signature, the
`pto` op class, how a call is read into IR (`read`), how the op is written back as
PyPTO source (`write`, with the 0.2.0 work-around helper where one is needed) and its
numpy rule (`numpy`). The frontend, the PyPTO writer and the numpy interpreter all
dispatch through `BY_PYPTO` / `BY_OP`, so one search for an op's name finds its whole
story in one family module (`elementwise`, `reduce`, `memory`, `matmul`, `gather`,
`control`).

The three callables get the part that drives them:

- ``read(fe, args, node)``: `fe` is the frontend's `Translator` (its reading kit:
  `fe.tile`, `fe.const_int`, `fe.mixed`, `fe.dtype`, `fe.emit`, `fe.fail` ...), `args`
  the call's arguments bound to `signature` by name, `node` the call's AST node (for
  locations). It builds the op, with its result type from the op's shape rule in
  `tileir.dialect.shapes`, and returns the call's Python value.
- ``write(w, op)``: `w` is the PyPTO writer of one kernel (`w.use(value)`,
  `w.mixed(list)`, `w.shape_of(type, sizes)`, `w.helper(name)`); returns the Python
  expression (or statement) for `op`.
- ``numpy(c, op)``: the numpy interpreter's rule (in `tileir.backends.numpy.rules`, by
  family), a thin shim over the pure function in
  `tileir.backends.numpy.semantics` (see the interpreter's docstring for what a rule
  adds: valid shapes, memory, batching).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

Reader = Callable[[Any, dict[str, Any], ast.AST], Any]
Writer = Callable[[Any, Any], str]
NumpyRule = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Helper:
    """A module-level Python function the writer emits where PyPTO 0.2.0 lacks an op or
    gets it wrong; PyPTO's frontend inlines plain functions, and tileir's frontend reads a
    call of it back as the op."""

    name: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Binding:
    pypto: str
    """The function's name in the `pypto` module (`pypto.<pypto>(...)`), dotted for one in
    a submodule (`experimental.set_operation_options`)."""
    op: type[Operation]
    signature: Callable[..., None]
    """A stub with PyPTO's parameter list: a call binds against it, so a wrong call gets
    Python's own message ("missing a required argument")."""
    read: Reader
    write: Writer
    numpy: NumpyRule
    semantics: str | None = None
    """The pure function in `tileir.backends.numpy.semantics` the numpy rule calls, by
    name (the fast paths in `fastpaths` are keyed by the same name)."""
    python_operator: str | None = None
    """The Python operator that means the same on PyPTO tensors (`+` for add)."""
    helper: Helper | None = None
    more_ops: tuple[type[Operation], ...] = ()
    """Further ops a call of the function reads into, which `write` and `numpy` take as
    well (`pypto.reshape` of a tensor in memory is `pto.reshape_mem`)."""


BY_PYPTO: dict[str, Binding] = {}
BY_OP: dict[type[Operation], Binding] = {}
BY_OPERATOR: dict[str, Binding] = {}
HELPERS: dict[str, Helper] = {}
HELPER_OPS: dict[str, str] = {}
"""Helper function name -> the PyPTO function it stands for (`tileir_tanh` -> `tanh`)."""


def register(*bindings: Binding) -> None:
    for b in bindings:
        ops = (b.op, *b.more_ops)
        if b.pypto in BY_PYPTO or any(op in BY_OP for op in ops):
            raise ValueError(f"two bindings for pypto.{b.pypto} / {b.op.name}")
        BY_PYPTO[b.pypto] = b
        BY_OP.update(dict.fromkeys(ops, b))
        if b.python_operator is not None:
            BY_OPERATOR[b.python_operator] = b
        if b.helper is not None:
            HELPERS[b.helper.name] = b.helper
            HELPER_OPS[b.helper.name] = b.pypto


def alias(binding: Binding) -> None:
    """A second PyPTO function for an op that already has a binding (the op's `BY_OP`
    binding writes both, by the op's own properties): `pto.set_options` is
    `set_pass_options` and `experimental.set_operation_options`."""
    if binding.pypto in BY_PYPTO or binding.op not in BY_OP:
        raise ValueError(f"alias pypto.{binding.pypto}: name taken or {binding.op.name} unbound")
    BY_PYPTO[binding.pypto] = binding


@dataclass(frozen=True)
class Query:
    """A PyPTO function that reads a setting of the kernel being traced and returns it as a
    plain Python value, no op (`get_vec_tile_shapes`): PyPTO answers it at trace time."""

    pypto: str
    signature: Callable[..., None]
    read: Reader
    """``read(fe, args, node)``: the Python value, from the translator's state."""


QUERIES: dict[str, Query] = {}


VALUES: dict[str, Callable[..., Any]] = {}
"""PyPTO functions that make a plain Python value of the kernel, no op (`Element`): the
frontend calls them at translation time, inside a kernel and in module-level code."""
