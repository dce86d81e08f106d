"""Hypothesis strategies for random, well-typed, verifying `pto` programs.

A pass that "preserves semantics" has to be checked on programs nobody wrote by hand;
these strategies write them. Every module they produce verifies, runs on the numpy back
end, and stays small (a few ops on tiles of at most a few hundred elements), so that
hundreds of them run in seconds. Sizes and op counts are drawn first and shrink toward
small values, so a failing program shrinks to a short one.

```python
from hypothesis import given
from tileir.testing import check_pass, modules

@given(modules())
def test_my_pass(module):
    check_pass(MyPass(), module)
```

What the programs contain (each kernel is one of these *templates*, chosen at random):

- `block`: straight-line code on whole tensors: elementwise chains (tile-tile with
  broadcasting, tile-scalar with the scalar on either side, pow), compare + where,
  reductions (any dim, keepdim or not), casts with random rounding modes and
  saturation, reshape / transpose / concat / unsqueeze / expand_clone, full, matmul,
  gathermask, topk, index_select / gather (indices from a topk, so always in range),
  spills through a workspace (write then read back; a workspace's first dim is
  sometimes a `?` with its size an index operand), static tail views (`valid`).
- `rows`: a `pto.loop` over row tiles of a tensor whose row count is static or a `?`
  dim (`memref.dim`), with a `valid` tail when the tile size does not divide it, a
  random normalised `unroll` list, and either a tile-index or a row-offset loop index;
  sometimes nested in a loop over blocks of rows (each block with its own tail).
- `accumulate`: a loop-carried read-modify-write of a workspace (`pto.tensor`),
  initialised under `scf.if pto.is_loop_begin` or before the loop, and written out
  under `scf.if pto.is_loop_end` or after the loop.
- `softmax`: the online-softmax recurrence (running max and rescaled running sum in
  two workspaces), two outputs.
- `cube`: a matmul (a_trans / b_trans / out dtype at random) followed by vector ops,
  straight-line or over row tiles.

`set_semantic_label`, `set_vec_tile_shapes` and `set_cube_tile_shapes` appear before
some ops. Use `features(module)` to see what a module contains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType, i1
from xdsl.ir import Operation, SSAValue

from tileir.dialect import pto
from tileir.testing.inputs import FILLS, dynamic_symbols, find_kernel, random_inputs
from tileir.testing.strategies.core import DTYPES, STEP_KINDS, TEMPLATE_WEIGHTS, TEMPLATES
from tileir.testing.strategies.templates import _Templates


class _KernelGen(_Templates):
    """Builds one kernel with xDSL's `Builder`, drawing every choice from hypothesis."""


def _template(g: _KernelGen, kind: str) -> None:
    if kind == "block":
        g.template_block()
    elif kind == "rows":
        g.template_rows()
    elif kind == "accumulate":
        g.template_accumulate()
    elif kind == "softmax":
        g.template_softmax()
    else:
        g.template_cube()


def kernels(
    *,
    name: str = "k",
    templates: Sequence[str] = TEMPLATES,
    dtypes: Sequence[str] = DTYPES,
    steps: Sequence[str] = STEP_KINDS,
    max_ops: int = 6,
    int_arith: bool = True,
) -> st.SearchStrategy[pto.KernelOp]:
    """One random `pto.kernel` (see the module docstring for what it may contain).

    `templates`, `dtypes` and `steps` restrict the choices; `max_ops` bounds the length
    of each op chain (the programs also hold the index math, views and assembles);
    `int_arith=False` keeps scalar operands constant (no `tileir.testing.scalars`
    arithmetic, which PyPTO's index-only scalars cannot spell).
    """
    for what, given, known in (
        ("templates", templates, TEMPLATES),
        ("dtypes", dtypes, DTYPES),
        ("steps", steps, STEP_KINDS),
    ):
        unknown = sorted(set(given) - set(known))
        if unknown or not given:
            raise ValueError(f"unknown {what} {unknown} (choose from {list(known)})")
    if max_ops < 1:
        raise ValueError(f"max_ops must be at least 1, got {max_ops}")
    return _kernels(name, tuple(templates), tuple(dtypes), tuple(steps), max_ops, int_arith)


@st.composite
def _kernels(
    draw: st.DrawFn,
    name: str,
    templates: tuple[str, ...],
    dtypes: tuple[str, ...],
    steps: tuple[str, ...],
    max_ops: int,
    int_arith: bool,
) -> pto.KernelOp:
    g = _KernelGen(draw, max_ops, steps, dtypes, int_arith)
    weighted = [t for t in templates for _ in range(TEMPLATE_WEIGHTS.get(t, 1))]
    _template(g, draw(st.sampled_from(weighted)))
    return g.finish(name)


def modules(
    *,
    templates: Sequence[str] = TEMPLATES,
    dtypes: Sequence[str] = DTYPES,
    steps: Sequence[str] = STEP_KINDS,
    max_ops: int = 6,
    max_kernels: int = 1,
    int_arith: bool = True,
) -> st.SearchStrategy[ModuleOp]:
    """A `builtin.module` of one (up to `max_kernels`) random kernels `@k0`, `@k1`, ...
    that verifies. Keyword arguments as for `kernels`."""
    parts = [
        kernels(
            name=f"k{i}",
            templates=templates,
            dtypes=dtypes,
            steps=steps,
            max_ops=max_ops,
            int_arith=int_arith,
        )
        for i in range(max_kernels)
    ]
    return st.integers(1, max_kernels).flatmap(lambda n: st.tuples(*parts[:n]).map(_module))


def _module(ks: Sequence[pto.KernelOp]) -> ModuleOp:
    module = ModuleOp(list(ks))
    module.verify()
    return module


@st.composite
def inputs_for(
    draw: st.DrawFn,
    module: ModuleOp,
    kernel: str | None = None,
    *,
    max_dynamic_size: int = 24,
) -> dict[str, np.ndarray]:
    """Arrays for every argument of a kernel of `module` (by argument name).

    Draws the `?` sizes (shrinking toward 1), how values are filled (small integers
    first: they are exact in every dtype, so a shrunk failure reads easily) and a seed;
    the arrays come from `random_inputs`, so a failure is reproduced by its seed.
    """
    k = find_kernel(module, kernel)
    sizes = {s: draw(st.integers(1, max_dynamic_size)) for s in dynamic_symbols(k)}
    fill_kind = draw(st.sampled_from(FILLS))
    seed = draw(st.integers(0, 2**32 - 1))
    return random_inputs(module, k.sym_name.data, seed, sizes=sizes, fill_kind=fill_kind)


def _pretty_ir(obj: Operation, p: Any, cycle: bool) -> None:
    from tileir.ir import print_module

    text = print_module(obj) if isinstance(obj, ModuleOp) else str(obj)
    p.text(f"<IR\n{text.rstrip()}\n>")


def _register_pretty_printers() -> None:
    """Show generated modules as MLIR text in hypothesis' reports. Its default, the
    dataclass fields of xDSL ops with their parent links, is unreadable and can take
    minutes to build for one falsifying example."""
    try:
        from hypothesis.vendor.pretty import for_type_by_name
    except ImportError:  # pragma: no cover - a hypothesis without the vendored printer
        return
    for module, name in (
        ("xdsl.dialects.builtin", "ModuleOp"),
        (pto.KernelOp.__module__, "KernelOp"),
    ):
        for_type_by_name(module, name, _pretty_ir)


_register_pretty_printers()


def features(module: ModuleOp) -> set[str]:
    """What a module contains, read from its IR (not from the generator's choices):
    `op:<name>` for every op, and `loop`, `loop:unroll`, `loop:dynamic`, `loop:step`,
    `loop:nested`, `tail`, `tail:dynamic`, `dynamic-dims`, `workspace`,
    `workspace:sized` (a `?` dim with `sizes`), `workspace:rmw`, `if:begin`, `if:end`,
    `outputs:2+`, `broadcast`, `scalar-operand`, `scalar-lhs`, `reduce:keepdim`,
    `reduce:dropdim`, `reduce:dim0`,
    `reduce:negative-dim`, `cast:<mode>`, `cast:sat`, `dtype:<type>`, `matmul+vector`,
    `matmul:a_trans`, `matmul:b_trans`, `reshape:inplace`, `arith:<result type>` (scalar
    arithmetic by width).

    The coverage test asserts that a fixed number of draws reaches every one.
    """
    out: set[str] = set()
    vector = cube = False
    for op in module.walk():
        out.add(f"op:{op.name}")
        if op.name.startswith("arith.") and not isinstance(op, arith.ConstantOp):
            out.update(f"arith:{r.type}" for r in op.results)
        if isinstance(op, pto.KernelOp):
            written = {
                a.dst
                for a in op.walk()
                if isinstance(a, pto.AssembleOp) and a.dst in op.body.block.args
            }
            if len(written) >= 2:
                out.add("outputs:2+")
            if op.dynamic_dims is not None:
                out.add("dynamic-dims")
            for arg in op.body.block.args:
                assert isinstance(arg.type, MemRefType)
                out.add(f"dtype:{arg.type.get_element_type()}")
        elif isinstance(op, pto.LoopOp):
            out.add("loop")
            if op.unroll_list is not None:
                out.add("loop:unroll")
            if pto.constant_index(op.upper_bound) is None:
                out.add("loop:dynamic")
            if pto.constant_index(op.step) not in (None, 1):
                out.add("loop:step")
            parent = op.parent_op()
            while parent is not None and not isinstance(parent, pto.LoopOp):
                parent = parent.parent_op()
            if parent is not None:
                out.add("loop:nested")
        elif isinstance(op, pto.ViewOp):
            valid = op.mixed_valid_shape
            if valid is not None:
                out.add("tail")
                if any(isinstance(v, SSAValue) for v in valid):
                    out.add("tail:dynamic")
            if isinstance(op.source.owner, pto.TensorOp):
                out.add("workspace")
                if op.source.owner.sizes:
                    out.add("workspace:sized")
                loop = op.parent_op()
                while loop is not None and not isinstance(loop, pto.LoopOp):
                    loop = loop.parent_op()
                if loop is not None and any(
                    isinstance(w, pto.AssembleOp) and w.dst == op.source for w in loop.walk()
                ):
                    out.add("workspace:rmw")
        elif isinstance(op, pto.IsLoopBeginOp):
            out.add("if:begin")
        elif isinstance(op, pto.IsLoopEndOp):
            out.add("if:end")
        elif isinstance(op, pto.BinaryOp):
            vector = True
            types = [v.type for v in (op.lhs, op.rhs)]
            if not all(isinstance(t, TensorType) for t in types):
                out.add("scalar-operand")
                if not isinstance(types[0], TensorType):
                    out.add("scalar-lhs")
            elif types[0] != types[1] and op.result.type.get_element_type() != i1:
                out.add("broadcast")
        elif isinstance(op, pto.ReduceOp):
            out.add("reduce:keepdim" if op.keepdim is not None else "reduce:dropdim")
            if op.dim.value.data % len(op.input.type.get_shape()) == 0:
                out.add("reduce:dim0")
            if op.dim.value.data < 0:
                out.add("reduce:negative-dim")
        elif isinstance(op, pto.CastOp):
            out.add(f"cast:{op.mode.data}")
            if op.satmode is not None:
                out.add("cast:sat")
        elif isinstance(op, pto.MatmulOp):
            cube = True
            if op.a_trans is not None:
                out.add("matmul:a_trans")
            if op.b_trans is not None:
                out.add("matmul:b_trans")
        elif isinstance(op, pto.ReshapeOp) and op.inplace is not None:
            out.add("reshape:inplace")
        elif isinstance(op, pto.UnaryOp | pto.WhereOp):
            vector = True
    if vector and cube:
        out.add("matmul+vector")
    return out


def _has_coarsenable_loop(module: ModuleOp) -> bool:
    from tileir.passes.coarsen import coarsen_report

    return None in coarsen_report(module).values()


def row_loop_modules(
    *, dtypes: Sequence[str] = DTYPES, steps: Sequence[str] = STEP_KINDS, max_ops: int = 6
) -> st.SearchStrategy[ModuleOp]:
    """Modules of one `rows` or `cube` kernel with at least one loop that `coarsen`
    accepts (row blocks, row-independent ops): the programs the pass rewrites, which
    `modules()` makes only now and then."""
    return modules(templates=("rows", "cube"), dtypes=dtypes, steps=steps, max_ops=max_ops).filter(
        _has_coarsenable_loop
    )
