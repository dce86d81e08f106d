"""Seed 001: the Embedding (gather) skeleton (PyPTO-Gym examples/embedding.md), verbatim.

Placeholders: table ``wl = [V, H]``, ids ``il = [B, S]``, ``batch, idx_inner = B, [S]``.
``pypto.gather`` has ``torch.gather`` semantics (its output has the index's shape: here
``[1, S]``, ``r[0][j] = weight[idx[0][j]][j]``), so with the skeleton as written the output is
``ol = [B, S]`` (and ``S <= H``), not the ``[B, S, H]`` of an embedding; see
``frontends/kernels/embedding.py`` for the lookup written with ``gather``.  The skeleton sets no
vector tile shape, so PyPTO 0.2.0 rejects it (``F21004 ... tile shape not set``).
"""

import pypto

V, H = 64, 32
B, S = 4, 8
wl, il, ol = [V, H], [B, S], [B, S]
batch, idx_inner = B, [S]


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def embedding_kernel(weight: pypto.Tensor(wl, pypto.DT_FP32), indices: pypto.Tensor(il, pypto.DT_INT32), out: pypto.Tensor(ol, pypto.DT_FP32)):
    for i in pypto.loop(batch, name="row", unroll_list=[1]):
        idx_s = pypto.view(indices, [1] + idx_inner, [i] + [0] * len(idx_inner))
        r = pypto.gather(weight, 0, idx_s)
        pypto.assemble(r, [i] + [0] * (len(ol) - 1), out)
