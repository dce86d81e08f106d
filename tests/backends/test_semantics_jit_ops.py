"""The semantics of the JIT ops (scatter_update, scatter, index_put, fillpad, arange,
logical_not, silu, clone) against independent references: torch's functions of the same
meaning, the examples printed in the PyPTO docs, and Python loops."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tileir.backends.numpy import semantics as S
from tileir.backends.numpy.semantics import SemanticsError

BF16 = np.dtype(ml_dtypes.bfloat16)


def test_scatter_update_2d_doc_example() -> None:
    x = np.zeros((8, 3), np.int32)
    index = np.array([[1, 2], [4, 5]])
    src = np.arange(1, 13, dtype=np.int32).reshape(4, 3)
    out = S.scatter_update(x, index, src)
    expected = [
        [0, 0, 0],
        [1, 2, 3],
        [4, 5, 6],
        [0, 0, 0],
        [7, 8, 9],
        [10, 11, 12],
        [0, 0, 0],
        [0, 0, 0],
    ]
    assert out.tolist() == expected


def test_scatter_update_4d_doc_example_keeps_other_rows() -> None:
    x = np.full((2, 6, 1, 3), 7, np.int32)
    index = np.array([[1, 8], [4, 10]])
    src = np.arange(1, 13, dtype=np.int32).reshape(2, 2, 1, 3)
    out = S.scatter_update(x, index, src)
    # the docs' formula: input[index // BS][index % BS][0] = src[i][j][0]
    expected = np.full((2, 6, 1, 3), 7, np.int32)
    for i in range(2):
        for j in range(2):
            expected[index[i, j] // 6, index[i, j] % 6, 0] = src[i, j, 0]
    assert np.array_equal(out, expected)
    assert np.array_equal(x, np.full((2, 6, 1, 3), 7, np.int32)), "the input is not changed"


def test_scatter_update_valid_index_region_and_range() -> None:
    x = np.zeros((4, 2), np.float32)
    index = np.array([[3, 0], [1, 2]])
    src = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = S.scatter_update(x, index, src, index_valid=(1, 2))
    assert out.tolist() == [[2, 3], [0, 0], [0, 0], [0, 1]]
    with pytest.raises(SemanticsError, match="outside"):
        S.scatter_update(x, np.array([[4]]), src[:1])


@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 5),
    dim=st.integers(-2, 1),
    reduce=st.sampled_from(["none", "add", "multiply"]),
    scalar=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_scatter_matches_torch(
    rows: int, cols: int, dim: int, reduce: str, scalar: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    ishape = (rng.integers(1, rows + 1), rng.integers(1, cols + 1))
    d = dim % 2
    size = (rows, cols)[d]
    if reduce == "none":
        # distinct targets per line, so torch's unspecified order does not matter
        lines = [rng.permutation(size)[: ishape[d]] for _ in range(ishape[1 - d])]
        index = np.stack(lines) if d == 1 else np.stack(lines).T
    else:
        index = rng.integers(0, size, ishape)
    src = 2.5 if scalar else rng.standard_normal(index.shape).astype(np.float32)
    out = S.scatter(x, dim, index, src, reduce)
    t = torch.from_numpy(x.copy())
    ti = torch.from_numpy(index.astype(np.int64))
    ts = torch.full(ti.shape, 2.5) if scalar else torch.from_numpy(src)
    if reduce == "none":
        ref = t.scatter(dim, ti, ts)
    else:
        ref = t.scatter_reduce(dim, ti, ts, "sum" if reduce == "add" else "prod")
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-6)


def test_scatter_doc_example_and_bf16_add_rounds_each_update() -> None:
    out = S.scatter(np.zeros((3, 5), np.float32), 0, np.array([[1, 2], [0, 1]]), 2.0)
    assert out.tolist() == [[2, 0, 0, 0, 0], [2, 2, 0, 0, 0], [0, 2, 0, 0, 0]]
    x = np.array([[256.0]], BF16)
    # two +1 updates of bf16 256: each sum rounds back to 256 (spacing 2 there)
    out = S.scatter(x, 1, np.array([[0, 0]]), np.array([[1.0, 1.0]], BF16), "add")
    assert float(out[0, 0]) == 256.0


def test_index_put_matches_torch() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    rows, cols = np.array([5, 0, 5]), np.array([1, 3, 1])
    vals = rng.standard_normal(3).astype(np.float32)
    for acc in (False, True):
        out = (
            S.index_put(x, [rows, cols], vals, acc)
            if acc
            else S.index_put(x, [rows[:2], cols[:2]], vals[:2])
        )
        t = torch.from_numpy(x.copy())
        idx = (
            (torch.from_numpy(rows), torch.from_numpy(cols))
            if acc
            else (torch.from_numpy(rows[:2]), torch.from_numpy(cols[:2]))
        )
        ref = t.index_put_(idx, torch.from_numpy(vals if acc else vals[:2]), accumulate=acc)
        np.testing.assert_allclose(out, ref.numpy(), rtol=1e-6)
    # the docs' example: rows [0 1 3] of [4, 2] get 1, 2, 3
    doc = S.index_put(
        np.zeros((4, 2), np.float32),
        [np.array([0, 1, 3])],
        np.array([[1, 1], [2, 2], [3, 3]], np.float32),
    )
    assert doc.tolist() == [[1, 1], [2, 2], [0, 0], [3, 3]]
    assert S.index_put(x, [rows], np.ones((3, 4), np.float32), count=1)[5].tolist() == [1, 1, 1, 1]


def test_fillpad_doc_example() -> None:
    a = np.array([[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], np.float32)
    out = S.fillpad(a, (2, 2), -math.inf)
    inf = -math.inf
    assert out.tolist() == [[1, 2, inf, inf], [3, 4, inf, inf], [inf] * 4, [inf] * 4]
    assert np.array_equal(S.fillpad(a, None, math.inf), a)
    assert S.fillpad(np.ones((2, 3), np.int32), (1, 3), 0.0).tolist() == [[1, 1, 1], [0, 0, 0]]


@pytest.mark.parametrize(
    ("args", "dtype"),
    [
        ((0, 4, 1), np.int32),
        ((1.0, 4.0, 0.5), np.float32),
        ((2, 7.0, 1), np.float32),
        ((10, 0, -3), np.int32),
    ],
)
def test_arange_matches_torch(args: tuple, dtype: type) -> None:
    out = S.arange(*args, np.dtype(dtype))
    ref = torch.arange(*args, dtype=torch.int32 if dtype is np.int32 else torch.float32)
    assert out.dtype == dtype and out.tolist() == ref.tolist()


def test_arange_float_values_round_once() -> None:
    # 0.1 * i in float64 rounded once, not float32 0.1 accumulated
    out = S.arange(0.0, 1.0, 0.1, np.dtype(np.float32))
    assert out.tolist() == [
        float(np.float32(i / 10)) if i % 5 else float(np.float32(0.1 * i)) for i in range(10)
    ]


def test_logical_not_doc_example_and_nan() -> None:
    assert S.logical_not(np.arange(5, dtype=np.int32)).tolist() == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert S.logical_not(np.array([np.nan, -0.0, 1.0], np.float32)).tolist() == [False, True, False]


def test_silu_matches_torch_and_clone_copies() -> None:
    x = np.linspace(-30, 30, 301, dtype=np.float32)
    ref = torch.nn.functional.silu(torch.from_numpy(x).double()).float().numpy()
    np.testing.assert_array_equal(S.silu(x), ref)
    c = S.clone(x)
    assert c is not x and np.array_equal(c, x)


def test_deinterleave_doc_examples() -> None:
    x = np.array([[0, 10, 1, 11, 2, 12, 3, 13], [4, 14, 5, 15, 6, 16, 7, 17]], np.float32)
    even, odd = S.deinterleave(x)
    assert even.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert odd.tolist() == [[10, 11, 12, 13], [14, 15, 16, 17]]
    even, odd = S.deinterleave(x[:, :4], x[:, 4:])
    assert even.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert odd.tolist() == [[10, 11, 12, 13], [14, 15, 16, 17]]
