"""Result-shape rules of the PyPTO ops, the one place they are written.

Two callers need the same rules at different times: the frontend gives every op its
result type before building it (and must blame the user's call, `pypto.add` at line
12), and each op's verifier checks a built op's result type (and must name the op).
Both call these pure functions and wrap `ShapeError` in their own located error, so a
rule changed here changes for both.

Shapes are tuples of ints with `DYNAMIC_INDEX` for a `?` dim; a `?` matches any size.
Messages name the problem, not the op (the caller puts the op in front)::

    >>> matmul((2, 16, 32), (1, 64, 32), a_trans=False, b_trans=True)
    (2, 16, 64)

A few rules are about element types rather than shapes (which `out_dtype` a matmul
may have); they live here too, keyed by the short names of `tileir.dialect.dtypes`, so
that the numpy back end reads the same table instead of keeping its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tileir.dialect.gathermask import GATHERMASK_MODES, GATHERMASK_PATTERNS  # noqa: F401

Shape = tuple[int, ...]

DYNAMIC_INDEX = -(2**63)
"""xDSL's `builtin.DYNAMIC_INDEX` (a `?` dim), spelled here so that the numpy semantics,
which read these rules, import no xDSL (a test checks that the two agree)."""


class ShapeError(ValueError):
    """An op's operands (or its attributes) do not fit together; the message says how."""


def fmt(shape: Sequence[int]) -> str:
    """`[8, ?]`: a shape as the error messages print it."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def dims_compatible(a: int, b: int) -> bool:
    """Equal sizes, or one of them is `?`."""
    return a == b or a == DYNAMIC_INDEX or b == DYNAMIC_INDEX


def shapes_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    """Same rank and every dim pair compatible."""
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b))


def element_count(shape: Sequence[int]) -> int | None:
    """The number of elements, or None when a dim is `?`."""
    n = 1
    for s in shape:
        if s == DYNAMIC_INDEX:
            return None
        n *= s
    return n


def norm_dim(dim: int, rank: int, what: str = "dim") -> int:
    """`dim` as an index in 0..rank-1 (Python-style negative dims allowed)."""
    if not -rank <= dim < rank:
        raise ShapeError(
            f"{what} {dim} is out of range for a rank-{rank} operand "
            f"(expected {-rank} <= {what} < {rank})"
        )
    return dim % rank


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> Shape | None:
    """Right-aligned numpy broadcasting of two shapes; None if they do not broadcast."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[int] = []
    for x, y in zip(pa, pb):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif dims_compatible(x, y):
            out.append(x if x != DYNAMIC_INDEX else y)
        else:
            return None
    return tuple(out)


def broadcast(*shapes: Sequence[int]) -> Shape:
    """numpy broadcasting of all operand shapes (a scalar operand is `()`)."""
    out: Shape | None = ()
    for s in shapes:
        assert out is not None
        out = broadcast_shapes(out, s)
        if out is None:
            raise ShapeError("cannot broadcast shapes " + " and ".join(fmt(x) for x in shapes))
    assert out is not None
    return out


def reduced_shape(shape: Sequence[int], dim: int, keepdim: bool) -> list[int]:
    """`shape` with dim `dim` set to 1 (keepdim) or dropped; may be empty (no check)."""
    d = dim % len(shape)
    out = list(shape)
    if keepdim:
        out[d] = 1
    else:
        del out[d]
    return out


def reduce(shape: Sequence[int], dim: int, keepdim: bool) -> Shape:
    """`pypto.sum / amax / amin`: a full reduction of a 1-D tile is `[1]`, not a scalar."""
    norm_dim(dim, len(shape))
    return tuple(reduced_shape(shape, dim, keepdim)) or (1,)


def matmul(a: Sequence[int], b: Sequence[int], *, a_trans: bool, b_trans: bool) -> Shape:
    """2-D or batched 3-D / 4-D, both operands of the same rank (PyPTO's rule); batch
    dims broadcast (1 against n)."""
    if len(a) not in (2, 3, 4) or len(b) not in (2, 3, 4):
        raise ShapeError(f"operands must be 2-D, 3-D or 4-D, got {fmt(a)} and {fmt(b)}")
    if len(a) != len(b):
        raise ShapeError(f"operands must have the same rank, got {fmt(a)} and {fmt(b)}")
    m, ka = (a[-1], a[-2]) if a_trans else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if b_trans else (b[-2], b[-1])
    if not dims_compatible(ka, kb):
        raise ShapeError(
            f"contraction dims differ: a {fmt(a)}{' (a_trans)' if a_trans else ''} "
            f"gives K={ka}, b {fmt(b)}{' (b_trans)' if b_trans else ''} gives K={kb}"
        )
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise ShapeError(f"batch dims {fmt(a[:-2])} and {fmt(b[:-2])} do not broadcast")
    return (*batch, m, n)


def matmul_bias(bias: Sequence[int], result: Sequence[int]) -> None:
    """The bias is `[N]` or `[..., 1, N]` with N the result's last dim, and of no higher
    rank than the result."""
    n = result[-1]
    ok = (
        len(bias) <= len(result)
        and dims_compatible(bias[-1], n)
        and (len(bias) < 2 or dims_compatible(bias[-2], 1))
        and element_count(bias[:-1]) in (1, None)
    )
    if not ok:
        d = fmt([n])[1:-1]
        raise ShapeError(f"bias shape {fmt(bias)} should be [{d}] or [1, {d}]")


MATMUL_OUT_DTYPES: dict[str, tuple[str, ...]] = {
    "f16": ("f16", "f32"),
    "bf16": ("bf16", "f32"),
    "f32": ("f32",),
    "i8": ("i32",),
    "f8E4M3FN": ("f16", "bf16", "f32"),
    "f8E5M2": ("f16", "bf16", "f32"),
}
"""PyPTO's matmul docs, table of basic data types: input element type -> the allowed
`out_dtype`s (and bias element types)."""

MATMUL_020_EXTRA_OUT_DTYPES: dict[str, tuple[str, ...]] = {"f32": ("f16", "bf16")}
"""Out types the docs do not list but PyPTO 0.2.0 compiles and runs (measured: f32 @ f32
-> bf16 / f16 is the FP32 product rounded once; PyPTO-Gym's block_attn_res writes it).
Not bias types: an f32 matmul's bias stays f32."""


MATMUL_SCALED_OUT_DTYPES: dict[str, tuple[str, ...]] = {
    "i8": ("f16", "i8"),
    "f16": ("i8",),
    "bf16": ("i8",),
    "f32": ("i8",),
    "f8E4M3FN": ("i8",),
    "f8E5M2": ("i8",),
}
"""PyPTO's matmul docs, tables of the dequantising and quantising matmul (`extend_params=
{"scale": s}`): input element type -> the allowed `out_dtype`s."""


def matmul_out_dtypes(inputs: str, *, scaled: bool = False) -> tuple[str, ...]:
    """The `out_dtype`s a matmul of `inputs` (a short name) may produce: with a `scale` by
    `MATMUL_SCALED_OUT_DTYPES`, else `MATMUL_OUT_DTYPES` plus what 0.2.0 also runs."""
    if scaled:
        return MATMUL_SCALED_OUT_DTYPES.get(inputs, ())
    return MATMUL_OUT_DTYPES.get(inputs, ()) + MATMUL_020_EXTRA_OUT_DTYPES.get(inputs, ())


def matmul_dtypes(inputs: str, out: str, bias: str | None = None, *, scaled: bool = False) -> None:
    """Element types of a matmul (short names): `out` must be allowed for `inputs` by
    `MATMUL_OUT_DTYPES`, or with a `scale` by `MATMUL_SCALED_OUT_DTYPES`; `bias` by
    `MATMUL_OUT_DTYPES`."""
    base = MATMUL_OUT_DTYPES.get(inputs)
    if base is None:
        raise ShapeError(
            f"has {inputs} inputs; PyPTO's matmul takes {', '.join(MATMUL_OUT_DTYPES)}"
        )
    allowed = matmul_out_dtypes(inputs, scaled=scaled)
    if out not in allowed:
        with_scale = " with a scale" if scaled else ""
        hint = (
            ""
            if scaled or out not in MATMUL_SCALED_OUT_DTYPES.get(inputs, ())
            else (' (a quantising matmul: give extend_params={"scale": s})')
        )
        raise ShapeError(
            f"{inputs} inputs cannot produce {out}{with_scale} (allowed: "
            f"{', '.join(allowed) or 'none'}){hint}"
        )
    if bias is not None and bias not in base:
        raise ShapeError(
            f"bias element type {bias} is not allowed with {inputs} inputs "
            f"(allowed: {', '.join(base)})"
        )


MX_BLOCK = 32
"""Elements of K that share one scale in `pypto.scaled_mm` (the MX block): a scale tensor's
last two dims `[K / 64, 2]` are K / 32 blocks, block `j` covering `K[32 j, 32 j + 32)`."""

SCALED_MM_IN_DTYPES = ("f8E4M3FN", "f8E5M2")
"""`pypto.scaled_mm` operand types (PyPTO's docs: fp8 e4m3 / e5m2, either with either;
DT_FP4_E2M1 is not a tileir type)."""

SCALED_MM_SCALE_DTYPE = "f8E8M0FNU"
"""The scale type of `pypto.scaled_mm`: DT_FP8E8M0, a power of two 2^(bits - 127)."""

SCALED_MM_OUT_DTYPES = ("f16", "bf16", "f32")
"""`pypto.scaled_mm` out types without the fixpipe (PyPTO's docs, table 3), also the bias
types; the quantising DT_INT8 out of table 4 needs a fixpipe scale tileir does not read."""


def scaled_mm(
    a: Sequence[int],
    b: Sequence[int],
    scale_a: Sequence[int],
    scale_b: Sequence[int],
    *,
    a_trans: bool,
    b_trans: bool,
    scale_a_trans: bool,
    scale_b_trans: bool,
) -> Shape:
    """`pypto.scaled_mm`'s shapes, PyPTO 0.2.0's checks: `a` [M, K] and `b` [K, N] are
    2-D (after `a_trans` / `b_trans`); `scale_a` is [M, K / 64, 2] (`scale_a_trans`:
    [K / 64, M, 2]), `scale_b` [K / 64, N, 2] (`scale_b_trans`: [N, K / 64, 2]); K is a
    multiple of 64. Returns [M, N]."""
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"operands must be 2-D, got {fmt(a)} and {fmt(b)}")
    if len(scale_a) != 3 or len(scale_b) != 3:
        raise ShapeError(f"scales must be 3-D, got {fmt(scale_a)} and {fmt(scale_b)}")
    out = matmul(a, b, a_trans=a_trans, b_trans=b_trans)
    m, n = out
    k = a[0] if a_trans else a[1]
    if k != DYNAMIC_INDEX and k % 64:
        raise ShapeError(f"K={k} must be a multiple of 64 (two MX blocks of {MX_BLOCK})")
    k0 = DYNAMIC_INDEX if k == DYNAMIC_INDEX else k // 64
    want_a = (k0, m, 2) if scale_a_trans else (m, k0, 2)
    want_b = (n, k0, 2) if scale_b_trans else (k0, n, 2)
    for what, got, want, flag in (
        ("scale_a", scale_a, want_a, scale_a_trans),
        ("scale_b", scale_b, want_b, scale_b_trans),
    ):
        if not shapes_compatible(got, want):
            raise ShapeError(
                f"{what} shape {fmt(got)} should be {fmt(want)}"
                f"{f' ({what}_trans)' if flag else ''} for M={fmt([m])[1:-1]}, "
                f"K={fmt([k])[1:-1]}, N={fmt([n])[1:-1]}"
            )
    return out


def scaled_mm_dtypes(
    a: str, b: str, scale_a: str, scale_b: str, out: str, bias: str | None = None
) -> None:
    """Element types of `pypto.scaled_mm` (short names): fp8 operands, e8m0 scales,
    `SCALED_MM_OUT_DTYPES` out and bias."""
    for what, t in (("mat_a", a), ("mat_b", b)):
        if t not in SCALED_MM_IN_DTYPES:
            raise ShapeError(
                f"{what} has {t} elements; scaled_mm takes {', '.join(SCALED_MM_IN_DTYPES)}"
            )
    for what, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        if t != SCALED_MM_SCALE_DTYPE:
            raise ShapeError(f"{what} has {t} elements; scales are {SCALED_MM_SCALE_DTYPE}")
    for what, t in (("out", out), ("bias", bias)):
        if t is not None and t not in SCALED_MM_OUT_DTYPES:
            raise ShapeError(
                f"{what} element type {t} is not one of {', '.join(SCALED_MM_OUT_DTYPES)}"
            )


QUANT_MX_IN_DTYPES = {"f16": 2, "bf16": 2, "f32": 4}
"""`pypto.quant_mx` input types, with their bytes per element (the docs: DT_FP16,
DT_BF16, DT_FP32)."""

QUANT_MX_OUT_DTYPE = "f8E4M3FN"
"""The only `quant_dtype` of `pypto.quant_mx` (the docs: DT_FP8E4M3 at present); its scale
is `SCALED_MM_SCALE_DTYPE`."""


def quant_mx(shape: Sequence[int], dtype: str) -> tuple[Shape, Shape]:
    """`pypto.quant_mx`'s shapes (hicann/pypto docs/zh/api/operation/pypto-quant_mx.md):
    a 1-D to 4-D `input` of `QUANT_MX_IN_DTYPES`, quantised along its last dim, whose
    length in bytes is a multiple of 256 (64 FP32 / 128 FP16 or BF16 elements). Returns
    (quantized: `input`'s shape, scale: `[*shape[:-1], n / 64, 2]`: the n / 32 blocks of
    `MX_BLOCK` elements of a row in pairs, as `scaled_mm` takes them)."""
    if not 1 <= len(shape) <= 4:
        raise ShapeError(f"input must be 1-D to 4-D, got {fmt(shape)}")
    if dtype not in QUANT_MX_IN_DTYPES:
        raise ShapeError(
            f"input has {dtype} elements; quant_mx takes {', '.join(QUANT_MX_IN_DTYPES)}"
        )
    n = shape[-1]
    per_256 = 256 // QUANT_MX_IN_DTYPES[dtype]
    if n == DYNAMIC_INDEX or n % per_256:
        raise ShapeError(
            f"the last dim of a {dtype} input must be a static multiple of {per_256} (256 "
            f"bytes), got {fmt(shape)}"
        )
    return tuple(shape), (*shape[:-1], n // (2 * MX_BLOCK), 2)


def concat(shapes: Sequence[Sequence[int]], dim: int) -> Shape:
    """Sizes add up along `dim`; every other dim must match."""
    if not shapes:
        raise ShapeError("needs at least one tensor")
    first = shapes[0]
    rank = len(first)
    d = norm_dim(dim, rank)
    total = 0
    for i, s in enumerate(shapes):
        if len(s) != rank or any(
            not dims_compatible(a, b) for k, (a, b) in enumerate(zip(s, first)) if k != d
        ):
            raise ShapeError(
                f"operand #{i} shape {fmt(s)} does not match {fmt(first)} outside dim {d}"
            )
        total = DYNAMIC_INDEX if DYNAMIC_INDEX in (total, s[d]) else total + s[d]
    out = list(first)
    out[d] = total
    return tuple(out)


def transpose(shape: Sequence[int], dim0: int, dim1: int) -> Shape:
    out = list(shape)
    d0, d1 = norm_dim(dim0, len(shape), "dim0"), norm_dim(dim1, len(shape), "dim1")
    out[d0], out[d1] = out[d1], out[d0]
    return tuple(out)


def unsqueeze(shape: Sequence[int], dim: int) -> Shape:
    out = list(shape)
    out.insert(norm_dim(dim, len(shape) + 1), 1)
    return tuple(out)


def view_type(shape: Sequence[int], size: int, new_size: int) -> Shape:
    """`pypto.view(x, dtype=...)`: elements of `size` bytes read as elements of
    `new_size` bytes, the last dim scaled by `size / new_size` (int8 [n, 32] -> fp32
    [n, 8]); its bytes must be a whole number of new elements."""
    if not shape or shape[-1] == DYNAMIC_INDEX:
        raise ShapeError(f"needs a static last dim to read as another dtype, got {fmt(shape)}")
    if shape[-1] * size % new_size:
        raise ShapeError(
            f"last dim of {fmt(shape)} holds {shape[-1] * size} bytes, not a whole number of "
            f"{new_size}-byte elements"
        )
    return (*shape[:-1], shape[-1] * size // new_size)


def expand(shape: Sequence[int], target: Sequence[int]) -> Shape:
    """`pypto.expand_clone`: only size-1 dims grow."""
    if len(shape) != len(target) or any(
        a != 1 and not dims_compatible(a, b) for a, b in zip(shape, target)
    ):
        raise ShapeError(
            f"cannot expand {fmt(shape)} to {fmt(target)}: only size-1 dims expand and the "
            "rank must match"
        )
    return tuple(target)


def reshape(shape: Sequence[int], target: Sequence[int]) -> Shape:
    """The element count stays (checked only when both shapes are static)."""
    na, nb = element_count(shape), element_count(target)
    if na is not None and nb is not None and na != nb:
        raise ShapeError(
            f"from {fmt(shape)} ({na} elements) to {fmt(target)} ({nb} elements) changes the "
            "element count"
        )
    return tuple(target)


def gather(shape: Sequence[int], index: Sequence[int], dim: int) -> Shape:
    """torch.gather, as PyPTO 0.2.0 has it: the result has the index's shape, and the
    index has the input's rank and is no larger outside `dim`."""
    d = norm_dim(dim, len(shape))
    if len(index) != len(shape) or any(
        i > s and DYNAMIC_INDEX not in (i, s)
        for k, (i, s) in enumerate(zip(index, shape))
        if k != d
    ):
        raise ShapeError(
            f"index {fmt(index)} must have the rank of the input {fmt(shape)} and be "
            f"no larger outside dim {dim}"
        )
    return tuple(index)


def index_select(shape: Sequence[int], index: Sequence[int], dim: int) -> Shape:
    """`np.take`, as PyPTO 0.2.0 traces it: the index's shape replaces dim `dim`
    (`[V, H]` by a `[1, S]` index at dim 0 is `[1, S, H]`, the Embedding lookup)."""
    d = norm_dim(dim, len(shape))
    return (*shape[:d], *index, *shape[d + 1 :])


def gathermask_stride(mode: int) -> int:
    """How many elements of the last dim one kept element stands for."""
    return GATHERMASK_PATTERNS[mode][1] if mode in GATHERMASK_PATTERNS else 1


def gathermask(shape: Sequence[int], mode: int) -> Shape:
    if mode not in GATHERMASK_MODES:
        raise ShapeError(f"pattern_mode {mode} is not in 1..7")
    step = gathermask_stride(mode)
    last = shape[-1]
    if last != DYNAMIC_INDEX and last % step:
        raise ShapeError(f"last dim {last} is not a multiple of {step} (pattern_mode {mode})")
    return (*shape[:-1], last // step if last != DYNAMIC_INDEX else DYNAMIC_INDEX)


def index_fits(size: int, width: int, what: str = "index") -> None:
    """Signed `width`-bit integers must hold every index 0..size-1 of a dim of `size`
    (a `?` size needs at least 32 bits), or results would wrap silently."""
    largest = 2 ** (width - 1) - 1
    if (size == DYNAMIC_INDEX and width < 32) or (size != DYNAMIC_INDEX and size - 1 > largest):
        of = "a dynamic dim" if size == DYNAMIC_INDEX else f"a dim of size {size}"
        raise ShapeError(
            f"{what} of type i{width} cannot hold every index of {of} (at most {largest}); use i32"
        )


def topk(shape: Sequence[int], k: int, dim: int) -> Shape:
    """Both results (values and indices) have this shape."""
    d = norm_dim(dim, len(shape))
    if k <= 0 or (shape[d] != DYNAMIC_INDEX and k > shape[d]):
        raise ShapeError(f"k={k} must be in 1..{shape[d]} (the size of dim {d})")
    out = list(shape)
    out[d] = k
    return tuple(out)


# --------------------------------------------------------------------------- scatter, arange, deinterleave


def _fixed(a: int, b: int) -> bool:
    """Two sizes that are both static and differ (a `?` fits anything)."""
    return a != b and DYNAMIC_INDEX not in (a, b)


def scatter_update(input: Sequence[int], index: Sequence[int], src: Sequence[int]) -> Shape:
    """`pypto.scatter_update(input, -2, index, src)` (the paged KV-cache write): a 2-D
    input `[T, d]` with src `[b*s, d]`, or a 4-D input `[NB, BS, 1, d]` with src
    `[b, s, 1, d]`; the index is `[b, s]`. The result has the input's shape."""
    if len(input) not in (2, 4) or len(src) != len(input):
        raise ShapeError(
            f"input {fmt(input)} and src {fmt(src)} must both be 2-D or both 4-D "
            "([T, d] / [NB, BS, 1, d])"
        )
    if len(index) != 2:
        raise ShapeError(f"index {fmt(index)} must be 2-D ([b, s])")
    if _fixed(input[-1], src[-1]):
        raise ShapeError(f"input {fmt(input)} and src {fmt(src)} differ in the last dim")
    if len(input) == 4:
        if _fixed(input[2], 1) or _fixed(src[2], 1):
            raise ShapeError(f"4-D input {fmt(input)} and src {fmt(src)} need dim 2 of size 1")
        if _fixed(src[0], index[0]) or _fixed(src[1], index[1]):
            raise ShapeError(f"src {fmt(src)} must be [b, s, 1, d] for index {fmt(index)}")
    else:
        rows = element_count(index)
        if rows is not None and _fixed(src[0], rows):
            raise ShapeError(f"src {fmt(src)} must have b*s = {rows} rows for index {fmt(index)}")
    return tuple(input)


def scatter(
    input: Sequence[int], index: Sequence[int], src: Sequence[int] | None, dim: int
) -> Shape:
    """`pypto.scatter(input, dim, index, src)` (torch.scatter): the index has the input's
    rank and is no larger than it outside `dim`, and no larger than a tensor src in any
    dim. The result has the input's shape."""
    d = norm_dim(dim, len(input))
    if len(index) != len(input):
        raise ShapeError(f"index {fmt(index)} must have the rank of the input {fmt(input)}")
    for k, (i, s) in enumerate(zip(index, input)):
        if k != d and i > s and DYNAMIC_INDEX not in (i, s):
            raise ShapeError(f"index {fmt(index)} is larger than the input {fmt(input)} in dim {k}")
    if src is not None:
        if len(src) != len(index) or any(
            i > s and DYNAMIC_INDEX not in (i, s) for i, s in zip(index, src)
        ):
            raise ShapeError(
                f"src {fmt(src)} must have the index's rank and be no smaller than {fmt(index)}"
            )
    return tuple(input)


def index_put(
    input: Sequence[int], indices: Sequence[Sequence[int]], values: Sequence[int]
) -> Shape:
    """`pypto.index_put_(input, (i0, ..., ik), values)`: k 1-D index tensors of one
    length n (k <= the input's rank), values `[n, *input[k:]]` (no broadcasting)."""
    if not indices or len(indices) > len(input):
        raise ShapeError(
            f"needs 1 to {len(input)} index tensors for input {fmt(input)}, got {len(indices)}"
        )
    if any(len(i) != 1 for i in indices):
        raise ShapeError(f"index tensors must be 1-D, got {', '.join(fmt(i) for i in indices)}")
    n = indices[0][0]
    if any(_fixed(i[0], n) for i in indices):
        raise ShapeError(f"index tensors differ in length: {', '.join(fmt(i) for i in indices)}")
    want = (n, *input[len(indices) :])
    if len(values) != len(want) or any(_fixed(a, b) for a, b in zip(values, want)):
        raise ShapeError(f"values {fmt(values)} must be {fmt(want)} (no broadcasting)")
    return tuple(input)


def index_add(input: Sequence[int], index: Sequence[int], source: Sequence[int], dim: int) -> Shape:
    """`pypto.index_add_(input, dim, index, source)`: a 1-D index of length n, source of
    the input's rank with n at `dim` and the input's sizes elsewhere. Returns the input's
    shape."""
    d = norm_dim(dim, len(input))
    if len(index) != 1:
        raise ShapeError(f"index must be 1-D, got {fmt(index)}")
    want = (*input[:d], index[0], *input[d + 1 :])
    if len(source) != len(want) or any(_fixed(a, b) for a, b in zip(source, want)):
        raise ShapeError(f"source {fmt(source)} must be {fmt(want)} (dim {d} indexed)")
    return tuple(input)


def arange_length(start: float, end: float, step: float) -> int:
    """The number of elements of `arange(start, end, step)`: ceil((end - start) / step),
    at least 1 (PyPTO refuses an empty or wrong-way range)."""
    if step == 0:
        raise ShapeError("step must not be zero")
    n = math.ceil((end - start) / step)
    if n <= 0:
        raise ShapeError(f"range [{start}, {end}) with step {step} is empty or runs the wrong way")
    return n


def deinterleave(shape: Sequence[int], two_inputs: bool) -> Shape:
    """Both results: the input's shape with two inputs, else the last dim halved (it
    must be even)."""
    last = shape[-1]
    if last != DYNAMIC_INDEX and last % 2:
        raise ShapeError(f"last dim of {fmt(shape)} must be even")
    if two_inputs:
        return tuple(shape)
    return (*shape[:-1], last // 2 if last != DYNAMIC_INDEX else DYNAMIC_INDEX)
