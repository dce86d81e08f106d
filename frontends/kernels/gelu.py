"""GELU, tanh approximation and erf form (seed 001, section GELU).

``gelu_tanh_kernel``: ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))``.
``gelu_erf_kernel``:  ``0.5 * x * (1 + erf(x / sqrt(2)))``.

PyPTO 0.2.0 has neither ``pypto.tanh`` nor ``pypto.erf``, so both are composed from ops it has:

- ``tanh(u) = 2 * sigmoid(2u) - 1`` with the sigmoid expanded as ``1 / (1 + exp(-2u))`` (the
  exp -> add -> div expansion the seed uses for MoE gating; ``pypto.sigmoid`` itself fails on
  tail tiles in 0.2.0);
- ``erf(a)`` for ``a >= 0`` by Abramowitz & Stegun 7.1.26, ``1 - poly(t) * exp(-a^2)`` with
  ``t = 1 / (1 + p a)``, absolute error below 1.5e-7; since ``x * erf(x / sqrt(2))`` is even,
  ``gelu(x) = 0.5 * (x + |x| * erf(|x| / sqrt(2)))`` needs erf only for non-negative arguments.

Rows are processed ``ROW_TILE`` at a time with a tail tile (``ROWS`` is not a multiple of
``ROW_TILE``).  FP32 math, BF16 exit cast with CAST_RINT.
"""

import pypto

ROWS = 10
HIDDEN = 64
ROW_TILE = 4
ROW_LOOP = (ROWS + ROW_TILE - 1) // ROW_TILE
UNROLL_LIST = [2, 1]

SQRT_2_OVER_PI = 0.7978845608028654
GELU_CUBIC = 0.044715
INV_SQRT2 = 0.7071067811865476
ERF_P = 0.3275911
ERF_A1 = 0.254829592
ERF_A2 = -0.284496736
ERF_A3 = 1.421413741
ERF_A4 = -1.453152027
ERF_A5 = 1.061405429


def _tanh(u, ones):
    """``tanh(u) = 2 * sigmoid(2u) - 1``; ``ones`` is a 1.0 tile of ``u``'s shape."""
    sig = pypto.div(ones, pypto.add(pypto.exp(pypto.mul(u, -2.0)), 1.0))
    return pypto.sub(pypto.mul(sig, 2.0), 1.0)


def _erf_nonneg(a, ones):
    """``erf(a)`` for ``a >= 0`` by Abramowitz & Stegun 7.1.26; ``ones``: a 1.0 tile of ``a``'s shape."""
    t = pypto.div(ones, pypto.add(pypto.mul(a, ERF_P), 1.0))
    poly = pypto.add(pypto.mul(t, ERF_A5), ERF_A4)
    poly = pypto.add(pypto.mul(poly, t), ERF_A3)
    poly = pypto.add(pypto.mul(poly, t), ERF_A2)
    poly = pypto.add(pypto.mul(poly, t), ERF_A1)
    poly = pypto.mul(poly, t)
    tail = pypto.mul(poly, pypto.exp(pypto.neg(pypto.mul(a, a))))
    return pypto.add(pypto.neg(tail), 1.0)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def gelu_tanh_kernel(
    x: pypto.Tensor([ROWS, HIDDEN], pypto.DT_BF16),
    out: pypto.Tensor([ROWS, HIDDEN], pypto.DT_BF16),
):
    for r_idx in pypto.loop(ROW_LOOP, name="LOOP_ROWS", idx_name="r_idx", unroll_list=UNROLL_LIST):
        cur_rows = pypto.min(ROWS - r_idx * ROW_TILE, ROW_TILE)
        pypto.set_vec_tile_shapes(ROW_TILE, HIDDEN)
        x_tile = pypto.view(
            x, [ROW_TILE, HIDDEN], [r_idx * ROW_TILE, 0], valid_shape=[cur_rows, HIDDEN]
        )
        xf = pypto.cast(x_tile, pypto.DT_FP32)
        ones = pypto.full([ROW_TILE, HIDDEN], 1.0, pypto.DT_FP32, valid_shape=[cur_rows, HIDDEN])
        inner = pypto.add(xf, pypto.mul(pypto.mul(xf, pypto.mul(xf, xf)), GELU_CUBIC))
        th = _tanh(pypto.mul(inner, SQRT_2_OVER_PI), ones)
        y = pypto.mul(pypto.mul(xf, 0.5), pypto.add(th, 1.0))
        pypto.assemble(
            pypto.cast(y, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [r_idx * ROW_TILE, 0], out
        )


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def gelu_erf_kernel(
    x: pypto.Tensor([ROWS, HIDDEN], pypto.DT_BF16),
    out: pypto.Tensor([ROWS, HIDDEN], pypto.DT_BF16),
):
    for r_idx in pypto.loop(ROW_LOOP, name="LOOP_ROWS", idx_name="r_idx", unroll_list=UNROLL_LIST):
        cur_rows = pypto.min(ROWS - r_idx * ROW_TILE, ROW_TILE)
        pypto.set_vec_tile_shapes(ROW_TILE, HIDDEN)
        x_tile = pypto.view(
            x, [ROW_TILE, HIDDEN], [r_idx * ROW_TILE, 0], valid_shape=[cur_rows, HIDDEN]
        )
        xf = pypto.cast(x_tile, pypto.DT_FP32)
        ones = pypto.full([ROW_TILE, HIDDEN], 1.0, pypto.DT_FP32, valid_shape=[cur_rows, HIDDEN])
        # x * erf(x / sqrt(2)) is even in x: gelu = 0.5 * (x + |x| * erf(|x| / sqrt(2))).
        ax = pypto.abs(xf)
        e = _erf_nonneg(pypto.mul(ax, INV_SQRT2), ones)
        y = pypto.mul(pypto.add(xf, pypto.mul(ax, e)), 0.5)
        pypto.assemble(
            pypto.cast(y, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [r_idx * ROW_TILE, 0], out
        )
