"""Result shapes of PyPTO ops, computed from operand shapes before an op is built.

The frontend must give every op its result type, and a shape error must name the
user's call (`pypto.add` at line 12) rather than surface later as a verifier message.
These rules are the PyPTO semantics of each call; the dialect's verifiers check the
same rules on the built IR, so the two are kept side by side and reuse the dialect's
helpers (`broadcast_shapes`, `ReduceOp.reduced_shape`) where one exists.

Shapes are tuples of ints, with `DYNAMIC_INDEX` for a `?` dim::

    >>> matmul((2, 16, 32), (64, 32), a_trans=False, b_trans=True)
    (2, 16, 64)
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX

from tileir.dialect.pto import GathermaskOp, ReduceOp, broadcast_shapes

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """An op's operands do not fit together; the message says how."""


def _fmt(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def norm_dim(dim: int, rank: int, what: str = "dim") -> int:
    if not -rank <= dim < rank:
        raise ShapeError(f"{what} {dim} is out of range for a rank-{rank} tensor")
    return dim % rank


def broadcast(*shapes: Sequence[int]) -> Shape:
    """numpy broadcasting of all operand shapes (scalars are `()`)."""
    out: tuple[int, ...] | None = ()
    for s in shapes:
        assert out is not None
        out = broadcast_shapes(out, s)
        if out is None:
            raise ShapeError("cannot broadcast shapes " + " and ".join(_fmt(x) for x in shapes))
    assert out is not None
    return out


def reduce(shape: Sequence[int], dim: int, keepdim: bool) -> Shape:
    norm_dim(dim, len(shape))
    return tuple(ReduceOp.reduced_shape(shape, dim, keepdim)) or (1,)


def matmul(a: Sequence[int], b: Sequence[int], *, a_trans: bool, b_trans: bool) -> Shape:
    if len(a) not in (2, 3) or len(b) not in (2, 3):
        raise ShapeError(f"matmul operands must be 2-D or 3-D, got {_fmt(a)} and {_fmt(b)}")
    m, ka = (a[-1], a[-2]) if a_trans else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if b_trans else (b[-2], b[-1])
    if ka != kb and DYNAMIC_INDEX not in (ka, kb):
        raise ShapeError(
            f"matmul contraction dims differ: {_fmt(a)}{' (a_trans)' if a_trans else ''} gives "
            f"K={ka}, {_fmt(b)}{' (b_trans)' if b_trans else ''} gives K={kb}"
        )
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise ShapeError(f"matmul batch dims of {_fmt(a)} and {_fmt(b)} do not broadcast")
    return (*batch, m, n)


def concat(shapes: Sequence[Sequence[int]], dim: int) -> Shape:
    if not shapes:
        raise ShapeError("concat needs at least one tensor")
    rank = len(shapes[0])
    d = norm_dim(dim, rank)
    total = 0
    for s in shapes:
        if len(s) != rank or any(
            a != b and DYNAMIC_INDEX not in (a, b)
            for k, (a, b) in enumerate(zip(s, shapes[0]))
            if k != d
        ):
            raise ShapeError(
                f"concat shapes {', '.join(_fmt(x) for x in shapes)} differ outside dim {dim}"
            )
        total = DYNAMIC_INDEX if DYNAMIC_INDEX in (total, s[d]) else total + s[d]
    out = list(shapes[0])
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


def expand(shape: Sequence[int], target: Sequence[int]) -> Shape:
    if len(shape) != len(target) or any(
        a != 1 and a != b and DYNAMIC_INDEX not in (a, b) for a, b in zip(shape, target)
    ):
        raise ShapeError(
            f"expand_clone cannot expand {_fmt(shape)} to {_fmt(target)}: only size-1 dims "
            "grow and the rank must stay"
        )
    return tuple(target)


def reshape(shape: Sequence[int], target: Sequence[int]) -> Shape:
    if DYNAMIC_INDEX not in shape and DYNAMIC_INDEX not in target:
        na = nb = 1
        for s in shape:
            na *= s
        for s in target:
            nb *= s
        if na != nb:
            raise ShapeError(
                f"reshape from {_fmt(shape)} ({na} elements) to {_fmt(target)} ({nb} elements)"
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
            f"gather index {_fmt(index)} must have the rank of the input {_fmt(shape)} and be "
            f"no larger outside dim {dim}"
        )
    return tuple(index)


def index_select(shape: Sequence[int], index: Sequence[int], dim: int) -> Shape:
    """The 1-D index replaces dim `dim` (`index_select(w[V, H], 0, ids[T])` is [T, H])."""
    d = norm_dim(dim, len(shape))
    if len(index) != 1:
        raise ShapeError(f"index_select index must be 1-D, got {_fmt(index)}")
    return (*shape[:d], *index, *shape[d + 1 :])


def gathermask(shape: Sequence[int], mode: int) -> Shape:
    if mode not in range(1, 8):
        raise ShapeError(f"gathermask pattern_mode {mode} is not in 1..7")
    step = GathermaskOp.stride(mode)
    last = shape[-1]
    if last != DYNAMIC_INDEX and last % step:
        raise ShapeError(f"gathermask last dim {last} is not a multiple of {step} (mode {mode})")
    return (*shape[:-1], last // step if last != DYNAMIC_INDEX else DYNAMIC_INDEX)


def topk(shape: Sequence[int], k: int, dim: int) -> Shape:
    d = norm_dim(dim, len(shape))
    if k <= 0 or (shape[d] != DYNAMIC_INDEX and k > shape[d]):
        raise ShapeError(f"topk k={k} must be in 1..{shape[d]} (the size of dim {dim})")
    out = list(shape)
    out[d] = k
    return tuple(out)
