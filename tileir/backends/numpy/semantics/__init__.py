"""The numpy semantics of every PyPTO op that tileir models: the spec of the numpy back end.

Each function here is pure (arrays in, new arrays out; only `write_window` writes, and
only into the array it is given), has no xDSL imports, and is tested alone against
independent references. The interpreter calls them through one thin shim per op, so a
question about what an op *means* is answered here and nowhere else.

Element types are numpy / `ml_dtypes` dtypes: `bfloat16`, `float16`, `float32`,
`float8_e4m3fn`, `float8_e5m2`, `int8`/`int16`/`int32`/`int64` (unsigned too) and
`bool`. `float8_e8m0fnu` is only the MX scale `scaled_mm` reads and `quant_mx` makes
(PyPTO's `cast` does not list e8m0); PyPTO's hif8 / fp4 kinds are not supported
(`ml_dtypes` has no hif8).

Numeric conventions, chosen once for every op (the reasons are in the functions):

- Low-precision floats (bf16, f16, fp8) are computed in float32 and rounded once to their
  own type (round to nearest even), the way PyPTO kernels widen bf16 to FP32 for math.
  For `+ - * /` and `sqrt` this equals a correctly rounded operation in the low-precision
  type, because float32 has at least 2p+2 significand bits for p = 8 (bf16) and p = 11
  (f16).
- The float32 result of a transcendental op is the float64 value rounded to float32, so it
  does not depend on which SIMD kernel numpy picks for float32 `exp`/`log` on a given CPU.
- Reductions and matmul model an FP32 accumulator as an ideal one: sum in float64, round
  once to float32. That is deterministic and independent of summation order; a float32
  loop in some particular order (as hardware runs) may differ in the last bits.
- Integer arithmetic wraps (two's complement), as the hardware does.
- Tensor-scalar ops convert the scalar to the tensor's dtype first, as PyPTO does
  (`pypto_impl.Element(input.dtype, other)` in its Python wrappers).

The functions live by family (`cast`, `elementwise`, `reduce`, `matmul`, `layout`,
`indexing`, `scatter`, `windows`, with `common` / `scalars` the shared pieces); this
package exports them all under one name, `semantics.<op>`.

Errors a program can make (shapes that do not broadcast, an index out of range, a window
outside its tensor) raise `SemanticsError` with the op name and the offending values.
"""

from __future__ import annotations

from tileir.backends.numpy.semantics.cast import (
    cast,
    resolve_cast_mode,
    round_integral,
    round_to_dtype,
)
from tileir.backends.numpy.semantics.common import (
    BF16,
    CAST_MODES,
    F8E4M3,
    F8E5M2,
    F32,
    F64,
    ArrayFn,
    Operand,
    Scalar,
    SemanticsError,
    broadcast_shape,
)
from tileir.backends.numpy.semantics.elementwise import (
    FLOAT64_FORMULAS,
    abs,
    add,
    clone,
    div,
    eq,
    erf,
    exp,
    full,
    ge,
    gt,
    le,
    log,
    logical_not,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    round,
    rsqrt,
    sigmoid,
    silu,
    sqrt,
    sub,
    tanh,
    where,
)
from tileir.backends.numpy.semantics.indexing import gather, gathermask, index_select, topk
from tileir.backends.numpy.semantics.layout import (
    arange,
    concat,
    deinterleave,
    expand_clone,
    fillpad,
    reshape,
    reshape_memory,
    transpose,
    unsqueeze,
    view_type,
    view_type_valid,
)
from tileir.backends.numpy.semantics.matmul import (
    fixpipe_scale,
    matmul,
    mx_scales,
    quant_mx,
    scaled_mm,
    to_tf32,
)
from tileir.backends.numpy.semantics.reduce import FLOAT64_REDUCTIONS, amax, amin, sum
from tileir.backends.numpy.semantics.scatter import index_add, index_put, scatter, scatter_update
from tileir.backends.numpy.semantics.windows import (
    get_tensor_data,
    read_window,
    view_valid_shape,
    write_window,
)

__all__ = [
    "abs",
    "add",
    "amax",
    "amin",
    "arange",
    "ArrayFn",
    "BF16",
    "broadcast_shape",
    "cast",
    "CAST_MODES",
    "clone",
    "concat",
    "deinterleave",
    "div",
    "eq",
    "erf",
    "exp",
    "expand_clone",
    "F32",
    "F64",
    "F8E4M3",
    "F8E5M2",
    "fillpad",
    "fixpipe_scale",
    "FLOAT64_FORMULAS",
    "FLOAT64_REDUCTIONS",
    "full",
    "gather",
    "gathermask",
    "ge",
    "get_tensor_data",
    "gt",
    "index_add",
    "index_put",
    "index_select",
    "le",
    "log",
    "logical_not",
    "lt",
    "matmul",
    "maximum",
    "minimum",
    "mul",
    "mx_scales",
    "ne",
    "neg",
    "Operand",
    "pow",
    "quant_mx",
    "read_window",
    "reciprocal",
    "relu",
    "reshape",
    "reshape_memory",
    "resolve_cast_mode",
    "round",
    "round_integral",
    "round_to_dtype",
    "rsqrt",
    "Scalar",
    "scaled_mm",
    "scatter",
    "scatter_update",
    "SemanticsError",
    "sigmoid",
    "silu",
    "sqrt",
    "sub",
    "sum",
    "tanh",
    "to_tf32",
    "topk",
    "transpose",
    "unsqueeze",
    "view_type",
    "view_type_valid",
    "view_valid_shape",
    "where",
    "write_window",
]
