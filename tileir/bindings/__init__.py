"""One binding per PyPTO function: its name and signature, its `pto` op, how a call is
read into IR, how the op is written back as PyPTO and its numpy rule (`Binding`).

The entries are grouped by family, one small module each, so that the shared reader /
writer of a family (unary, binary, reduce ...) sits next to its members:

| module        | PyPTO functions                                                  |
|---------------|------------------------------------------------------------------|
| `elementwise` | neg exp log sqrt rsqrt tanh erf sigmoid abs reciprocal relu round, add sub mul div maximum minimum pow, eq ne lt le gt ge, where cast full, clone silu logical_not |
| `reduce`      | sum amax amin                                                    |
| `memory`      | tensor view assemble Tensor.__getitem__ (`x[i, j]`) reshape transpose concat unsqueeze expand_clone |
| `matmul`      | matmul scaled_mm (and `CUBE_OPS`, the one place that says they are Cube work), quant_mx (their MX operands; Vector work) |
| `gather`      | gathermask gather index_select topk deinterleave                 |
| `scatter`     | scatter_update scatter scatter_ index_put_ index_add index_add_  |
| `creation`    | arange fillpad zeros ones (op classes in `dialect/ops/elementwise.py`), `Element` (a value, no op: `VALUES`) |
| `control`     | is_loop_begin is_loop_end set_vec_tile_shapes set_cube_tile_shapes set_semantic_label; get_vec_tile_shapes get_cube_tile_shapes (values, no op: `QUERIES`) |
| `index`       | index arithmetic (`arith` on loop indices) <-> Python operators  |

Adding an op is its class in the family module of `tileir/dialect/ops/` (listed in the
`Dialect` in `tileir/dialect/pto.py`), one binding in the family module here, its numpy
rule in `tileir/backends/numpy/rules/` (the same family) and its function in
`tileir/backends/numpy/semantics/`.
"""

from __future__ import annotations

from xdsl.ir import Operation

from tileir.bindings import (
    control,
    creation,
    elementwise,
    gather,
    matmul,
    memory,
    reduce,
    scatter,
)
from tileir.bindings.binding import (
    BY_OP,
    BY_OPERATOR,
    BY_PYPTO,
    HELPER_OPS,
    HELPERS,
    QUERIES,
    VALUES,
    Binding,
    Helper,
    Query,
)
from tileir.dialect import pto

__all__ = [
    "BY_OP",
    "BY_OPERATOR",
    "BY_PYPTO",
    "HELPERS",
    "HELPER_OPS",
    "INTERNAL",
    "QUERIES",
    "VALUES",
    "Binding",
    "Helper",
    "Query",
    "control",
    "creation",
    "elementwise",
    "gather",
    "matmul",
    "memory",
    "reduce",
    "scatter",
]

INTERNAL: dict[type[Operation], str] = {
    pto.KernelOp: "the `@pypto.frontend.jit` function itself (frontend: kernel building)",
    pto.LoopOp: "`for i in pypto.loop(...)`: a region, built by the frontend's loop reader",
    pto.LoopUnrollOp: "`for i, n in pypto.loop_unroll(...)`: a region, as `pto.loop`",
    pto.YieldOp: "region terminator",
    pto.StageOp: "tileir's own structure (vc-split); pypto-legalize inlines it",
    pto.StitchOp: "tileir's own structure (stitch); pypto-legalize inlines it",
    pto.TransferOp: "tileir's own structure (vc-split); pypto-legalize removes it",
}
"""`pto` ops that are not a PyPTO function call, and why."""
