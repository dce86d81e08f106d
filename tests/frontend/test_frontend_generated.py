"""Generated PyPTO kernel sources (random sizes, tiles, unroll lists, loop forms and
elementwise bodies) read by the frontend and run on the numpy back end equal the same
computation written in numpy: the tail and chunk index arithmetic is the part at risk."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from frontends.pypto import load_source
from tileir.backends.numpy import run

# body expression on the tile `t` -> the same in numpy on rows `a`
BODIES = {
    "t * 2.0": lambda a: a * 2.0,
    "1.0 - t": lambda a: 1.0 - a,
    "-t + t * t": lambda a: -a + a * a,
    "pypto.exp(t)": np.exp,
    "pypto.sqrt(pypto.abs(t))": lambda a: np.sqrt(np.abs(a)),
    "t - pypto.amax(t, -1, keepdim=True)": lambda a: a - a.max(-1, keepdims=True),
    "t / pypto.sum(pypto.exp(t), 1, keepdim=True)": lambda a: a / np.exp(a).sum(-1, keepdims=True),
}


def _source(rows: int, cols: int, tile: int, unroll: list[int], form: str, body: str) -> str:
    header = f"""\
import pypto

ROWS = {rows}
COLS = {cols}
TILE = {tile}


@pypto.frontend.jit
def k(x: pypto.Tensor([ROWS, COLS], pypto.DT_FP32), out: pypto.Tensor([ROWS, COLS], pypto.DT_FP32)):
"""
    if form == "loop":
        loop = f"""\
    for i in pypto.loop((ROWS + TILE - 1) // TILE, name="rows", unroll_list={unroll}):
        cur = pypto.min(ROWS - i * TILE, TILE)
        pypto.set_vec_tile_shapes(TILE, COLS)
        t = pypto.view(x, [TILE, COLS], [i * TILE, 0], valid_shape=[cur, COLS])
        pypto.assemble({body}, [i * TILE, 0], out)
"""
    elif form == "loop_unroll":
        loop = f"""\
    for i, n in pypto.loop_unroll(0, ROWS, 1, name="rows", unroll_list={unroll}):
        pypto.set_vec_tile_shapes(n, COLS)
        t = pypto.view(x, [n, COLS], [i, 0])
        out[i:, :] = {body}
"""
    else:  # a loop_unroll body that needs the chunk length as an int
        loop = f"""\
    for i, n in pypto.loop_unroll(0, ROWS, 1, name="rows", unroll_list={unroll}):
        t = x[i : i + n, :] if n > 0 else None
        pypto.assemble({body}, [i, 0], out)
"""
    return header + loop


@given(
    rows=st.integers(1, 40),
    cols=st.sampled_from([8, 16]),
    tile=st.integers(1, 8),
    unroll=st.lists(st.sampled_from([8, 4, 2, 3]), unique=True, max_size=3),
    form=st.sampled_from(["loop", "loop_unroll", "per_factor"]),
    body=st.sampled_from(sorted(BODIES)),
    seed=st.integers(0, 2**16),
)
def test_generated_kernels_match_numpy(
    rows: int, cols: int, tile: int, unroll: list[int], form: str, body: str, seed: int
) -> None:
    source = _source(rows, cols, tile, unroll, form, body)
    module = load_source(source, "generated.py")
    x = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    got = run(module, {"x": x})["out"]
    expected = BODIES[body](x.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=source)
