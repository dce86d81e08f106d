"""The `pto` dialect: PyPTO's tile operations as MLIR operations.

Names, operands and attributes follow the PyPTO Python API (`pypto.view`,
`pypto.assemble`, `pypto.matmul(..., b_trans=True)` ...), so that a reader who knows
PyPTO reads the IR. Tiles are immutable SSA values of builtin `tensor<...>` type; kernel
arguments and workspace buffers (`pypto.tensor(...)`) are mutable `memref<...>`s.
Only the ops that touch memory (`view` of a memref, `assemble`, `tensor`) have side
effects, so xDSL's CSE / DCE / canonicalize apply to everything else.

```mlir
pto.kernel @scale(%x: memref<13x64xf32>, %out: memref<13x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  pto.loop %i = %c0 to %c13 step %c1 name "rows" unroll [4, 1] {
    %t = pto.view %x[%i, 0] : memref<13x64xf32> -> tensor<1x64xf32>
    %h = arith.constant 5.000000e-01 : f32
    %r = pto.mul %t, %h : tensor<1x64xf32>, f32 -> tensor<1x64xf32>
    pto.assemble %r into %out[%i, 0] : tensor<1x64xf32>, memref<13x64xf32>
  }
}
```

Offsets, shapes and valid shapes are mixed static / dynamic index lists, as in MLIR's
`tensor.extract_slice`: `[0, %i]`.

The ops live in family modules under `tileir/dialect/ops/` (`base`: the shared bases
and verifier helpers; `structure`, `memory`, `elementwise`, `reduce`, `matmul`, `gather`,
`control`); this module assembles the `Dialect` and re-exports every op and helper, so
`from tileir.dialect import pto; pto.AddOp` is the one spelling the rest of tileir uses.
"""

from __future__ import annotations

# Re-exported: passes and tests use these through `pto`.
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, StringAttr, i64
from xdsl.ir import Dialect

from tileir.diagnostics import MAX_NESTING
from tileir.dialect.ops.base import (
    ANY_KIND,
    FLOAT,
    MAX_DIM,
    MAX_TILE_RANK,
    NUMERIC,
    OneTileOp,
    ScalarType,
    TileOp,
    TileOrScalar,
    TileResults,
    TileToTileOp,
    _i64_array,
    constant_index,
    mixed_values,
    normalize_unroll_list,
    verify_dims,
    verify_tile_shape,
)
from tileir.dialect.ops.control import (
    OPTION_FUNCTIONS,
    IsLoopBeginOp,
    IsLoopEndOp,
    SetCubeTileShapesOp,
    SetOptionsOp,
    SetSemanticLabelOp,
    SetVecTileShapesOp,
)
from tileir.dialect.ops.elementwise import (
    CAST_MODES,
    PRECISION_TYPES,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    CompareOp,
    DivOp,
    EqOp,
    ErfOp,
    ExpOp,
    FullOp,
    GeOp,
    GtOp,
    LeOp,
    LogOp,
    LtOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    NeOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
    WhereOp,
)
from tileir.dialect.ops.gather import GathermaskOp, GatherOp, IndexSelectOp, TopkOp
from tileir.dialect.ops.matmul import MatmulOp
from tileir.dialect.ops.memory import (
    AssembleOp,
    ConcatOp,
    ExpandCloneOp,
    ReshapeOp,
    TensorOp,
    TransposeOp,
    UnsqueezeOp,
    ViewOp,
)
from tileir.dialect.ops.reduce import AmaxOp, AminOp, ReduceOp, SumOp
from tileir.dialect.ops.structure import (
    MAX_STITCH_FUNCTIONS,
    UNITS,
    KernelOp,
    LoopOp,
    LoopUnrollOp,
    StageOp,
    StitchOp,
    TransferOp,
    YieldOp,
    _LoopBase,
    is_kernel_argument,
    nesting_error,
    producing_unit,
    producing_units,
)
from tileir.dialect.shapes import GATHERMASK_MODES, broadcast_shapes

__all__ = [
    "ANY_KIND",
    "AbsOp",
    "AddOp",
    "AmaxOp",
    "AminOp",
    "AssembleOp",
    "BinaryOp",
    "CAST_MODES",
    "CastOp",
    "CompareOp",
    "ConcatOp",
    "DYNAMIC_INDEX",
    "DenseArrayBase",
    "DivOp",
    "EqOp",
    "ErfOp",
    "ExpOp",
    "ExpandCloneOp",
    "FLOAT",
    "FullOp",
    "GATHERMASK_MODES",
    "GatherOp",
    "GathermaskOp",
    "GeOp",
    "GtOp",
    "IndexSelectOp",
    "IsLoopBeginOp",
    "IsLoopEndOp",
    "KernelOp",
    "LeOp",
    "LogOp",
    "LoopOp",
    "LoopUnrollOp",
    "LtOp",
    "MAX_DIM",
    "MAX_NESTING",
    "MAX_STITCH_FUNCTIONS",
    "MAX_TILE_RANK",
    "MatmulOp",
    "MaximumOp",
    "MinimumOp",
    "MulOp",
    "NUMERIC",
    "NeOp",
    "NegOp",
    "OPTION_FUNCTIONS",
    "OneTileOp",
    "PRECISION_TYPES",
    "PTO",
    "PowOp",
    "ReciprocalOp",
    "ReduceOp",
    "ReluOp",
    "ReshapeOp",
    "RsqrtOp",
    "ScalarType",
    "SetCubeTileShapesOp",
    "SetOptionsOp",
    "SetSemanticLabelOp",
    "SetVecTileShapesOp",
    "SigmoidOp",
    "SqrtOp",
    "StageOp",
    "StitchOp",
    "StringAttr",
    "SubOp",
    "SumOp",
    "TanhOp",
    "TensorOp",
    "TileOp",
    "TileOrScalar",
    "TileResults",
    "TileToTileOp",
    "TopkOp",
    "TransferOp",
    "TransposeOp",
    "UNITS",
    "UnaryOp",
    "UnsqueezeOp",
    "ViewOp",
    "WhereOp",
    "YieldOp",
    "_LoopBase",
    "_i64_array",
    "broadcast_shapes",
    "constant_index",
    "i64",
    "is_kernel_argument",
    "mixed_values",
    "nesting_error",
    "normalize_unroll_list",
    "producing_unit",
    "producing_units",
    "verify_dims",
    "verify_tile_shape",
]

PTO = Dialect(
    "pto",
    [
        KernelOp,
        YieldOp,
        TensorOp,
        ViewOp,
        AssembleOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        UnsqueezeOp,
        ExpandCloneOp,
        CastOp,
        NegOp,
        ExpOp,
        LogOp,
        SqrtOp,
        RsqrtOp,
        TanhOp,
        ErfOp,
        SigmoidOp,
        AbsOp,
        ReciprocalOp,
        ReluOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaximumOp,
        MinimumOp,
        PowOp,
        EqOp,
        NeOp,
        LtOp,
        LeOp,
        GtOp,
        GeOp,
        FullOp,
        WhereOp,
        SumOp,
        AmaxOp,
        AminOp,
        MatmulOp,
        GathermaskOp,
        GatherOp,
        IndexSelectOp,
        TopkOp,
        LoopOp,
        LoopUnrollOp,
        IsLoopBeginOp,
        IsLoopEndOp,
        SetVecTileShapesOp,
        SetCubeTileShapesOp,
        SetSemanticLabelOp,
        SetOptionsOp,
        StageOp,
        TransferOp,
        StitchOp,
    ],
)
