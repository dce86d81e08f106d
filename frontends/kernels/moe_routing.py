"""MoE routing: sigmoid gating and softmax gating (seed 001, MoE Routing schemes A and B).

``logits: [TOKENS, EXPERTS]`` router scores.  Each kernel writes, per token, the ``TOP_K``
selected experts (``indices``, descending score order) and their normalised gate weights
(``weights``).

- ``moe_routing_sigmoid_kernel`` (scheme A, GLM / DeepSeek-V3 style): ``s = sigmoid(x)`` expanded
  as ``1 / (1 + exp(-x))`` (exp -> add -> div); experts are chosen by ``topk(s + bias)`` with a
  per-expert selection bias, the weights are ``gather(s, idx)`` of the unbiased scores,
  normalised by their ``sum`` (div).
- ``moe_routing_softmax_kernel`` (scheme B): ``p = softmax(x)`` as amax -> sub -> exp -> sum ->
  div, ``topk(p)``, ``gather``, renormalised over the selected experts.

``TOKENS`` rows are processed ``TOKEN_TILE`` at a time with a tail tile.
"""

import pypto

TOKENS = 10
EXPERTS = 32
TOP_K = 8
TOKEN_TILE = 4
TOKEN_LOOP = (TOKENS + TOKEN_TILE - 1) // TOKEN_TILE


def _normalise(w, cur):
    """``w / sum(w, -1)`` on a ``[TOKEN_TILE, TOP_K]`` tile."""
    pypto.set_vec_tile_shapes(TOKEN_TILE, TOP_K)
    w = pypto.view(w, [TOKEN_TILE, TOP_K], [0, 0], valid_shape=[cur, TOP_K])
    return pypto.div(w, pypto.sum(w, -1, keepdim=True))


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def moe_routing_sigmoid_kernel(
    logits: pypto.Tensor([TOKENS, EXPERTS], pypto.DT_BF16),
    bias: pypto.Tensor([EXPERTS], pypto.DT_FP32),
    weights: pypto.Tensor([TOKENS, TOP_K], pypto.DT_FP32),
    indices: pypto.Tensor([TOKENS, TOP_K], pypto.DT_INT32),
):
    pypto.set_vec_tile_shapes(1, EXPERTS)
    bias_2d = pypto.reshape(bias, [1, EXPERTS], inplace=True)

    for t_idx in pypto.loop(TOKEN_LOOP, name="LOOP_TOKEN", idx_name="t_idx", unroll_list=[1]):
        cur = pypto.min(TOKENS - t_idx * TOKEN_TILE, TOKEN_TILE)
        pypto.set_vec_tile_shapes(TOKEN_TILE, EXPERTS)
        x_tile = pypto.view(
            logits, [TOKEN_TILE, EXPERTS], [t_idx * TOKEN_TILE, 0], valid_shape=[cur, EXPERTS]
        )
        x = pypto.cast(x_tile, pypto.DT_FP32)
        e = pypto.add(pypto.exp(pypto.mul(x, -1.0)), 1.0)
        ones = pypto.full([TOKEN_TILE, EXPERTS], 1.0, pypto.DT_FP32, valid_shape=[cur, EXPERTS])
        scores = pypto.div(ones, e)
        biased = pypto.add(scores, bias_2d)
        _, idx = pypto.topk(biased, TOP_K, -1, True)
        w = pypto.gather(scores, 1, idx)
        pypto.assemble(_normalise(w, cur), [t_idx * TOKEN_TILE, 0], weights)
        pypto.assemble(idx, [t_idx * TOKEN_TILE, 0], indices)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def moe_routing_softmax_kernel(
    logits: pypto.Tensor([TOKENS, EXPERTS], pypto.DT_BF16),
    weights: pypto.Tensor([TOKENS, TOP_K], pypto.DT_FP32),
    indices: pypto.Tensor([TOKENS, TOP_K], pypto.DT_INT32),
):
    for t_idx in pypto.loop(TOKEN_LOOP, name="LOOP_TOKEN", idx_name="t_idx", unroll_list=[1]):
        cur = pypto.min(TOKENS - t_idx * TOKEN_TILE, TOKEN_TILE)
        pypto.set_vec_tile_shapes(TOKEN_TILE, EXPERTS)
        x_tile = pypto.view(
            logits, [TOKEN_TILE, EXPERTS], [t_idx * TOKEN_TILE, 0], valid_shape=[cur, EXPERTS]
        )
        x = pypto.cast(x_tile, pypto.DT_FP32)
        m = pypto.amax(x, -1, keepdim=True)
        ex = pypto.exp(pypto.sub(x, m))
        probs = pypto.div(ex, pypto.sum(ex, -1, keepdim=True))
        _, idx = pypto.topk(probs, TOP_K, -1, True)
        w = pypto.gather(probs, 1, idx)
        pypto.assemble(_normalise(w, cur), [t_idx * TOKEN_TILE, 0], weights)
        pypto.assemble(idx, [t_idx * TOKEN_TILE, 0], indices)
