"""PyPTO library functions that are compositions of other PyPTO functions.

PyPTO writes some of its API in Python on top of its own ops (`pypto.rms_norm` is a cast,
a sum, a square root and a division); tileir reads a call of one by inlining the
composition below, written against the `pypto` API as a kernel is, so each piece becomes
the op its binding reads and nothing here has semantics of its own. The names are bound
to the stand-in `pypto` when inlined (this module does not import it)."""

from __future__ import annotations

from typing import Any

pypto: Any = None
"""Bound to the stand-in `pypto` by the translator when a composite is inlined."""


def rms_norm(input: Any, gamma: Any = None, epsilon: float = 1e-6) -> Any:
    """`pypto.rms_norm(input, gamma=None, epsilon=1e-6)`: `x / sqrt(mean(x**2) + eps)`
    over the last dim, in FP32, times `gamma` (shape `[C]`) when given, in `input`'s
    dtype."""
    # The order of PyPTO 0.2.0's own definition (pypto/operator.py), so that the bits
    # agree: each square is scaled by 1/C before the sum; `x * ones / y` there is `x / y`.
    wide = input.dtype != pypto.DT_FP32
    x = pypto.cast(input, pypto.DT_FP32) if wide else input
    mean_square = pypto.sum(x * x * (1.0 / x.shape[-1]), -1, keepdim=True)
    y = x / pypto.sqrt(mean_square + epsilon)
    if gamma is not None:
        g = pypto.reshape(gamma, [1] * (len(x.shape) - 1) + [gamma.shape[0]])
        y = y * (pypto.cast(g, pypto.DT_FP32) if g.dtype != pypto.DT_FP32 else g)
    return pypto.cast(y, input.dtype) if wide else y


def softmax(input: Any, dim: int) -> Any:
    """`pypto.softmax(input, dim)`: `exp(x - max) / sum(exp(x - max))` along `dim`, in
    FP32, in `input`'s dtype (PyPTO 0.2.0's definition in pypto/operator.py, in its
    order; its cast of an FP32 input to FP32 is no op)."""
    wide = input.dtype != pypto.DT_FP32
    x = pypto.cast(input, pypto.DT_FP32) if wide else input
    rowmax = pypto.amax(x, dim, True)
    exp_res = pypto.exp(pypto.sub(x, rowmax))
    output = pypto.div(exp_res, pypto.sum(exp_res, dim, True))
    return pypto.cast(output, input.dtype) if wide else output


def clip(input: Any, min: Any = None, max: Any = None) -> Any:
    """`pypto.clip(input, min=None, max=None)`: `minimum(maximum(x, min), max)`, PyPTO's
    definition (hicann/pypto docs/zh/api/operation/pypto-clip.md: `Y = MIN(MAX(X, min),
    max)`, so `max` wins where `min > max`, and a NaN bound gives NaN); a bound left out
    is +-INF, that is no comparison; both left out give `input` itself."""
    out = input
    if min is not None:
        out = pypto.maximum(out, min)
    if max is not None:
        out = pypto.minimum(out, max)
    return out


def axpy_(y: Any, x: Any, alpha: Any = 1.0) -> Any:
    """`pypto.axpy_(y, x, alpha=1.0)` / `y.axpy_(x, alpha=...)`: `y = alpha * x + y`
    (hicann/pypto docs/zh/api/operation/pypto-axpy_.md; not in PyPTO 0.2.0). `x`
    broadcasts to `y`, `y` does not; dtypes FP32, FP16, BF16 alike, or an FP16 `x` into an
    FP32 `y`; BF16 computes in FP32. The update in place is the frontend's (the result
    rebinds `y`); here it is the value: `alpha * x` rounded, then the sum rounded, as the
    two PyPTO ops it is written as (with `alpha` 1 the product is exact, so one rounding)."""
    same = x.dtype == y.dtype and y.dtype in (pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16)
    assert same or (y.dtype == pypto.DT_FP32 and x.dtype == pypto.DT_FP16), (
        f"pypto.axpy_ takes y and x both DT_FP32, DT_FP16 or DT_BF16, or an FP32 y and an "
        f"FP16 x; got y {y.dtype.name} and x {x.dtype.name}"
    )
    assert len(x.shape) == len(y.shape), (
        f"pypto.axpy_ needs y and x of one rank, got {len(y.shape)} and {len(x.shape)}"
    )
    wide = y.dtype == pypto.DT_BF16
    acc = pypto.cast(y, pypto.DT_FP32) if wide else y
    term = pypto.cast(x, pypto.DT_FP32) if x.dtype != acc.dtype else x
    if alpha != 1:
        term = pypto.mul(term, alpha)
    out = pypto.add(acc, term)
    return pypto.cast(out, y.dtype) if wide else out


def atomic_add(src: Any, offsets: Any, dst: Any) -> None:
    """`pypto.atomic_add(src, offsets, dst)`: `dst[offsets : offsets + src.shape] += src`
    (hicann/pypto docs/zh/api/operation/pypto-atomic_add.md; not in PyPTO 0.2.0): the
    window of `dst` read, `src` added in `dst`'s dtype, the sum written back. Where several
    cores add to one window PyPTO leaves their order open; tileir adds in program order,
    one of the orders PyPTO allows."""
    assert len(offsets) == len(src.shape) == len(dst.shape), (
        f"pypto.atomic_add needs one offset per dim of src and dst, got {len(offsets)} "
        f"offsets, src rank {len(src.shape)} and dst rank {len(dst.shape)}"
    )
    assert src.dtype == dst.dtype, (
        f"pypto.atomic_add adds a {src.dtype.name} src into a {dst.dtype.name} dst; cast first"
    )
    window = pypto.view(dst, list(src.shape), list(offsets))
    pypto.assemble(pypto.add(window, src), list(offsets), dst)


def online_softmax(scores: Any, scale: float) -> Any:
    """`pypto.experimental.online_softmax(scores, scale)` (newer PyPTO, Ascend 950 only;
    not in 0.2.0), the docs' definition: `x = scores * scale`, per column (dim 0) its max
    and the sum of `exp(x - max)`; returns `(exp(x - max)` in BF16, the max, the sum)`,
    all FP32 but the first, the statistics `[1, q_len]`."""
    assert scores.dtype == pypto.DT_FP32 and len(scores.shape) == 2, (
        "pypto.experimental.online_softmax takes a 2-D DT_FP32 scores tensor"
    )
    x = pypto.mul(scores, scale)
    column_max = pypto.amax(x, 0, True)
    e = pypto.exp(pypto.sub(x, column_max))
    column_sum = pypto.sum(e, 0, True)
    return pypto.cast(e, pypto.DT_BF16), column_max, column_sum


def online_softmax_update(
    previous_max: Any,
    previous_sum: Any,
    previous_output: Any,
    current_max: Any,
    current_sum: Any,
    current_output: Any,
) -> Any:
    """`pypto.experimental.online_softmax_update(...)` (newer PyPTO, Ascend 950 only; not
    in 0.2.0): the online-softmax merge of two blocks' states, the docs' formula:
    `m = max(m1, m2)`, `s = s1 * exp(m1 - m) + s2 * exp(m2 - m)`, `o = o1 * exp(m1 - m) +
    o2 * exp(m2 - m)` (columns of `o` scaled by their factor); returns `(m, s, o)`."""
    assert len(previous_output.shape) == len(current_output.shape) == 2, (
        "pypto.experimental.online_softmax_update needs 2-D previous_output and current_output"
    )
    m = pypto.maximum(previous_max, current_max)
    a = pypto.exp(pypto.sub(previous_max, m))
    b = pypto.exp(pypto.sub(current_max, m))
    s = pypto.add(pypto.mul(previous_sum, a), pypto.mul(current_sum, b))
    o = pypto.add(pypto.mul(previous_output, a), pypto.mul(current_output, b))
    return m, s, o


def transposed_batchmatmul(tensor_a: Any, tensor_b: Any, out_dtype: Any) -> Any:
    """`pypto.experimental.transposed_batchmatmul(a, b, out_dtype)`: `a` (M, B, K) turned to
    (B, M, K), a batched matmul with `b` (B, K, N), the (B, M, N) result turned back to
    (M, B, N) (hicann/pypto docs/zh/api/operation/pypto-experimental-transposed_batchmatmul.md:
    those three steps; FP16 / BF16 in and out)."""
    assert len(tensor_a.shape) == 3 and len(tensor_b.shape) == 3, (
        "pypto.experimental.transposed_batchmatmul takes a (M, B, K) and b (B, K, N)"
    )
    a = pypto.transpose(tensor_a, 0, 1)
    return pypto.transpose(pypto.matmul(a, tensor_b, out_dtype), 0, 1)


def gather_in_ub(param: Any, indices: Any, block_table: Any, block_size: int, axis: int) -> Any:
    """`pypto.experimental.gather_in_ub(param, indices, block_table, block_size, -2)`: the
    rows of a paged KV cache that token ids select (hicann/pypto
    docs/zh/api/operation/pypto-experimental-gather_in_ub.md): token t is row
    `block_table[0, t // block_size] * block_size + t % block_size` of `param`
    ([tokens, hidden]); `indices` is [1, k], the result [k, hidden]."""
    assert axis == -2, f"pypto.experimental.gather_in_ub supports only axis=-2, got {axis}"
    assert len(indices.shape) == 2 and len(param.shape) == 2, (
        "pypto.experimental.gather_in_ub takes a 2-D param and [1, k] indices"
    )
    # The index arithmetic in FP32 (exact below 2**24 tokens: floor of the correctly
    # rounded quotient is the integer quotient there), as PyPTO 0.2.0 divides float tiles
    # only (its DIVS on INT32 is DIVSOpError, measured).
    token = pypto.cast(indices, pypto.DT_FP32)
    block_f = pypto.cast(
        pypto.cast(pypto.div(token, float(block_size)), pypto.DT_INT32, pypto.CastMode.CAST_FLOOR),
        pypto.DT_FP32,
    )
    tail = pypto.sub(token, pypto.mul(block_f, float(block_size)))
    physical = pypto.gather(block_table, 1, pypto.cast(block_f, pypto.DT_INT32))
    rows = pypto.add(pypto.mul(pypto.cast(physical, pypto.DT_FP32), float(block_size)), tail)
    rows = pypto.cast(rows, pypto.DT_INT32, pypto.CastMode.CAST_RINT)
    return pypto.index_select(param, 0, pypto.reshape(rows, [indices.shape[1]]))


def gather_in_l1(
    src: Any,
    indices: Any,
    block_table: Any,
    block_size: int,
    size: int,
    is_b_matrix: bool,
    is_trans: bool,
) -> Any:
    """`pypto.experimental.gather_in_l1(src, indices, block_table, block_size, size,
    is_b_matrix, is_trans)`: the first `size` columns of the paged rows `gather_in_ub`
    reads (hicann/pypto docs/zh/api/operation/pypto-experimental-gather_in_l1.md: rows of
    `src` picked through the page table, the first `size` elements of each, into L1).
    The result is [k, size] whatever the flags: `is_b_matrix` / `is_trans` only say how
    the tile is laid out in L1 for the matmul that takes it as its B matrix (PyPTO 0.2.0
    returns the same [k, size] rows for both flag pairs, measured); L1 versus UB is
    placement, which tileir leaves to PyPTO."""
    assert isinstance(is_b_matrix, bool) and isinstance(is_trans, bool), (
        "pypto.experimental.gather_in_l1 takes bools for is_b_matrix and is_trans"
    )
    assert len(src.shape) == 2, "pypto.experimental.gather_in_l1 takes a 2-D src"
    assert isinstance(size, int) and 0 < size <= src.shape[1], (
        f"pypto.experimental.gather_in_l1 size must be an int in 1..{src.shape[1]} (the "
        f"columns of src), got {size}"
    )
    if size != src.shape[1]:
        src = pypto.view(src, [src.shape[0], size], [0, 0])
    return pypto.experimental.gather_in_ub(src, indices, block_table, block_size, -2)


COMPOSITES = {
    "experimental.gather_in_l1": gather_in_l1,
    "experimental.gather_in_ub": gather_in_ub,
    "experimental.transposed_batchmatmul": transposed_batchmatmul,
    "experimental.online_softmax": online_softmax,
    "experimental.online_softmax_update": online_softmax_update,
    "rms_norm": rms_norm,
    "softmax": softmax,
    "clip": clip,
    "axpy_": axpy_,
    "atomic_add": atomic_add,
}
"""`pypto.<name>` -> its composition."""
