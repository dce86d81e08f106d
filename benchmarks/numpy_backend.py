"""The numpy back end against the same computation written by hand in numpy.

    python benchmarks/numpy_backend.py [--repeat N] [--clock cpu|wall] [--only NAME]
                                       [--small] [--check]

Four workloads, each a `pto` kernel (the IR below, written the way the seed kernels
are: a loop over row tiles with a tail-capable `valid` shape) and a hand-written numpy
function that computes the same values. The hand-written versions use the numeric
conventions of `tileir.backends.numpy.semantics` where they differ from plain numpy
(transcendentals, reductions and matmul accumulate in float64 and round once to
float32), so that both sides do the same arithmetic and the ratio measures what the
back end adds: interpretation, copies of tiles, valid-shape bookkeeping and the exact
cast routines. `--check` also runs every loop iteration by iteration and asserts the
same bits, and compares with the hand-written result.

The hand-written RMSNorm->MatMul multiplies all rows at once, while the kernel's loop
multiplies `tm` rows per iteration, and BLAS packs the weight matrix again for each of
those matmuls (measured alone: 4 x 128 rows cost ~18 % more than 512 rows at once). A
second row, "by hand, tiled as the kernel", times the same hand-written code on the
kernel's tiles, which separates the back end's cost from the tiling's.

Times are CPU times of the process (`time.process_time`: user + system, all threads)
unless `--clock wall`: on a loaded machine the wall time of a run measures the other
processes as much as this one. The two sides run interleaved, `--repeat` times each
(the plan is compiled once, outside the timing); the table gives the best and the
median time of each side, `ratio` divides the best times, `median` the medians.
BLAS runs on one thread on both sides (unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS
say otherwise): on a shared machine a multi-threaded BLAS makes small matmuls vary by
100x run to run, and CPU time would count its spinning threads.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from tileir.backends.numpy import compile_kernel  # noqa: E402
from tileir.ir import parse_module  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F64 = np.float32, np.float64


@dataclass
class Workload:
    name: str
    ir: str
    inputs: dict[str, np.ndarray]
    by_hand: Callable[..., dict[str, np.ndarray]]
    atol: float = 0.0
    tiled: Callable[..., dict[str, np.ndarray]] | None = None
    """By hand too, but tiled as the kernel is (where `by_hand` is not): the row that
    separates the back end's cost from the cost of the kernel's own tiling."""


# --------------------------------------------------------------------------- RoPE


def rope(s: int = 4096, n: int = 32, d: int = 128, t: int = 8) -> Workload:
    """RoPE, rotate-half form, bf16 in / out, fp32 math, `t` rows per iteration."""
    h = d // 2
    loops = -(-s // t)
    x_t = f"memref<{s}x{n}x{d}xbf16>"
    cs_t = f"memref<{s}x{d}xbf16>"
    ir = f"""
pto.kernel @rope(%x: {x_t}, %cos: {cs_t}, %sin: {cs_t}, %out: {x_t}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ct = arith.constant {t} : index
  %cs = arith.constant {s} : index
  %cl = arith.constant {loops} : index
  pto.loop %i = %c0 to %cl step %c1 name "LOOP_BS_ROPE" idx_name "bs_idx" unroll [8, 4, 2, 1] {{
    %row = arith.muli %i, %ct : index
    %left = arith.subi %cs, %row : index
    %cur = arith.minsi %left, %ct : index
    pto.set_vec_tile_shapes [{t}, {d}]
    %c = pto.view %cos[%row, 0] valid [%cur, {d}] : {cs_t} -> tensor<{t}x{d}xbf16>
    %cf = pto.cast %c : tensor<{t}x{d}xbf16> -> tensor<{t}x{d}xf32>
    %cb = pto.reshape %cf valid [%cur, 1, {d}] : tensor<{t}x{d}xf32> -> tensor<{t}x1x{d}xf32>
    %sn = pto.view %sin[%row, 0] valid [%cur, {d}] : {cs_t} -> tensor<{t}x{d}xbf16>
    %sf = pto.cast %sn : tensor<{t}x{d}xbf16> -> tensor<{t}x{d}xf32>
    %sb = pto.reshape %sf valid [%cur, 1, {d}] : tensor<{t}x{d}xf32> -> tensor<{t}x1x{d}xf32>
    pto.set_vec_tile_shapes [{t}, {n}, {d}]
    %xt = pto.view %x[%row, 0, 0] valid [%cur, {n}, {d}] : {x_t} -> tensor<{t}x{n}x{d}xbf16>
    %xf = pto.cast %xt : tensor<{t}x{n}x{d}xbf16> -> tensor<{t}x{n}x{d}xf32>
    %x1 = pto.view %xf[0, 0, 0] valid [%cur, {n}, {h}] : tensor<{t}x{n}x{d}xf32> -> tensor<{t}x{n}x{h}xf32>
    %x2 = pto.view %xf[0, 0, {h}] valid [%cur, {n}, {h}] : tensor<{t}x{n}x{d}xf32> -> tensor<{t}x{n}x{h}xf32>
    %nx2 = pto.neg %x2 : tensor<{t}x{n}x{h}xf32>
    %rot = pto.concat dim -1, %nx2, %x1 : tensor<{t}x{n}x{h}xf32>, tensor<{t}x{n}x{h}xf32> -> tensor<{t}x{n}x{d}xf32>
    %a = pto.mul %xf, %cb : tensor<{t}x{n}x{d}xf32>, tensor<{t}x1x{d}xf32> -> tensor<{t}x{n}x{d}xf32>
    %b = pto.mul %rot, %sb : tensor<{t}x{n}x{d}xf32>, tensor<{t}x1x{d}xf32> -> tensor<{t}x{n}x{d}xf32>
    %y = pto.add %a, %b : tensor<{t}x{n}x{d}xf32>, tensor<{t}x{n}x{d}xf32> -> tensor<{t}x{n}x{d}xf32>
    %o = pto.cast %y mode rint : tensor<{t}x{n}x{d}xf32> -> tensor<{t}x{n}x{d}xbf16>
    pto.assemble %o into %out[%row, 0, 0] : tensor<{t}x{n}x{d}xbf16>, {x_t}
  }}
}}
"""
    rng = np.random.default_rng(0)
    angles = rng.uniform(-3, 3, (s, h))
    inputs = {
        "x": rng.standard_normal((s, n, d)).astype(F32).astype(BF16),
        "cos": np.cos(np.concatenate([angles, angles], -1)).astype(F32).astype(BF16),
        "sin": np.sin(np.concatenate([angles, angles], -1)).astype(F32).astype(BF16),
    }

    def by_hand(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> dict[str, np.ndarray]:
        xf = x.astype(F32)
        rot = np.concatenate([-xf[..., h:], xf[..., :h]], axis=-1)
        y = xf * cos.astype(F32)[:, None, :] + rot * sin.astype(F32)[:, None, :]
        return {"out": y.astype(BF16)}

    return Workload(f"RoPE S={s} N={n} D={d} bf16", ir, inputs, by_hand)


# --------------------------------------------------------------------------- GELU


def gelu(rows: int = 4096, hidden: int = 4096, t: int = 16) -> Workload:
    """GELU, tanh form, bf16 in / out, fp32 math, `t` rows per iteration."""
    loops = -(-rows // t)
    m_t = f"memref<{rows}x{hidden}xbf16>"
    f = f"tensor<{t}x{hidden}xf32>"
    ir = f"""
pto.kernel @gelu(%x: {m_t}, %out: {m_t}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ct = arith.constant {t} : index
  %cr = arith.constant {rows} : index
  %cl = arith.constant {loops} : index
  %k0 = arith.constant 0.044715 : f32
  %k1 = arith.constant 0.7978845608028654 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  pto.loop %i = %c0 to %cl step %c1 name "LOOP_ROWS" idx_name "r" {{
    %row = arith.muli %i, %ct : index
    %left = arith.subi %cr, %row : index
    %cur = arith.minsi %left, %ct : index
    %xt = pto.view %x[%row, 0] valid [%cur, {hidden}] : {m_t} -> tensor<{t}x{hidden}xbf16>
    %xf = pto.cast %xt : tensor<{t}x{hidden}xbf16> -> {f}
    %x2 = pto.mul %xf, %xf : {f}, {f} -> {f}
    %x3 = pto.mul %x2, %xf : {f}, {f} -> {f}
    %a = pto.mul %x3, %k0 : {f}, f32 -> {f}
    %b = pto.add %xf, %a : {f}, {f} -> {f}
    %u = pto.mul %b, %k1 : {f}, f32 -> {f}
    %th = pto.tanh %u : {f}
    %p = pto.add %th, %one : {f}, f32 -> {f}
    %hx = pto.mul %xf, %half : {f}, f32 -> {f}
    %y = pto.mul %hx, %p : {f}, {f} -> {f}
    %o = pto.cast %y mode rint : {f} -> tensor<{t}x{hidden}xbf16>
    pto.assemble %o into %out[%row, 0] : tensor<{t}x{hidden}xbf16>, {m_t}
  }}
}}
"""
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((rows, hidden)).astype(F32).astype(BF16)}

    def by_hand(x: np.ndarray) -> dict[str, np.ndarray]:
        xf = x.astype(F32)
        u = (xf + (xf * xf * xf) * F32(0.044715)) * F32(0.7978845608028654)
        th = np.tanh(u.astype(F64)).astype(F32)  # semantics: tanh in float64, rounded once
        y = (xf * F32(0.5)) * (th + F32(1.0))
        return {"out": y.astype(BF16)}

    return Workload(f"GELU {rows}x{hidden} bf16", ir, inputs, by_hand)


# --------------------------------------------------------------------------- RMSNorm -> MatMul


def linear(tokens: int = 512, k: int = 7168, n: int = 1536, tm: int = 128) -> Workload:
    """RMSNorm over K then `x @ w.T` (b_trans), bf16 inputs, fp32 result, `tm` rows per
    iteration."""
    loops = -(-tokens // tm)
    xf = f"tensor<{tm}x{k}xf32>"
    ir = f"""
pto.kernel @rmsnorm_linear(%x: memref<{tokens}x{k}xbf16>, %gamma: memref<1x{k}xbf16>,
                           %w: memref<{n}x{k}xbf16>, %out: memref<{tokens}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ctm = arith.constant {tm} : index
  %ct = arith.constant {tokens} : index
  %cl = arith.constant {loops} : index
  %inv_k = arith.constant {1.0 / k!r} : f32
  %eps = arith.constant 1.0e-06 : f32
  %g = pto.view %gamma[0, 0] : memref<1x{k}xbf16> -> tensor<1x{k}xbf16>
  %gf = pto.cast %g : tensor<1x{k}xbf16> -> tensor<1x{k}xf32>
  %wt = pto.view %w[0, 0] : memref<{n}x{k}xbf16> -> tensor<{n}x{k}xbf16>
  pto.loop %i = %c0 to %cl step %c1 name "LOOP_T" idx_name "t" {{
    %row = arith.muli %i, %ctm : index
    %left = arith.subi %ct, %row : index
    %cur = arith.minsi %left, %ctm : index
    pto.set_vec_tile_shapes [8, {k}]
    %xt = pto.view %x[%row, 0] valid [%cur, {k}] : memref<{tokens}x{k}xbf16> -> tensor<{tm}x{k}xbf16>
    %xv = pto.cast %xt : tensor<{tm}x{k}xbf16> -> {xf}
    %sq = pto.mul %xv, %xv : {xf}, {xf} -> {xf}
    %ss = pto.sum %sq, -1 keepdim : {xf} -> tensor<{tm}x1xf32>
    %ms = pto.mul %ss, %inv_k : tensor<{tm}x1xf32>, f32 -> tensor<{tm}x1xf32>
    %me = pto.add %ms, %eps : tensor<{tm}x1xf32>, f32 -> tensor<{tm}x1xf32>
    %rs = pto.rsqrt %me : tensor<{tm}x1xf32>
    %nx = pto.mul %xv, %rs : {xf}, tensor<{tm}x1xf32> -> {xf}
    %ng = pto.mul %nx, %gf : {xf}, tensor<1x{k}xf32> -> {xf}
    %nb = pto.cast %ng mode rint : {xf} -> tensor<{tm}x{k}xbf16>
    pto.set_cube_tile_shapes m [64, 128] k [256, 512] n [128, 256]
    %y = pto.matmul %nb, %wt b_trans : tensor<{tm}x{k}xbf16>, tensor<{n}x{k}xbf16> -> tensor<{tm}x{n}xf32>
    pto.assemble %y into %out[%row, 0] : tensor<{tm}x{n}xf32>, memref<{tokens}x{n}xf32>
  }}
}}
"""
    rng = np.random.default_rng(2)
    inputs = {
        "x": rng.standard_normal((tokens, k)).astype(F32).astype(BF16),
        "gamma": rng.uniform(0.5, 1.5, (1, k)).astype(F32).astype(BF16),
        "w": (rng.standard_normal((n, k)) / np.sqrt(k)).astype(F32).astype(BF16),
    }

    def by_hand(x: np.ndarray, gamma: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
        xv = x.astype(F32)
        ss = np.sum((xv * xv).astype(F64), axis=-1, keepdims=True).astype(F32)
        me = ss * F32(1.0 / k) + F32(1e-6)
        rs = (1.0 / np.sqrt(me.astype(F64))).astype(F32)
        nb = (xv * rs * gamma.astype(F32)).astype(BF16)
        y = np.matmul(nb.astype(F64), w.astype(F64).T).astype(F32)
        return {"out": y}

    def tiled(x: np.ndarray, gamma: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
        """`by_hand` on `tm` rows at a time, as the kernel's loop: BLAS packs `w` for
        each tile's matmul, which one matmul of all rows does once."""
        wt = w.astype(F64).T
        gf = gamma.astype(F32)
        out = np.empty((tokens, n), F32)
        for r in range(0, tokens, tm):
            xv = x[r : r + tm].astype(F32)
            ss = np.sum((xv * xv).astype(F64), axis=-1, keepdims=True).astype(F32)
            me = ss * F32(1.0 / k) + F32(1e-6)
            rs = (1.0 / np.sqrt(me.astype(F64))).astype(F32)
            nb = (xv * rs * gf).astype(BF16)
            out[r : r + tm] = np.matmul(nb.astype(F64), wt).astype(F32)
        return {"out": out}

    name = f"RMSNorm->MatMul T={tokens} K={k} N={n}"
    return Workload(name, ir, inputs, by_hand, tiled=tiled)


# --------------------------------------------------------------------------- decode attention


def attention(s2: int = 8192, heads: int = 32, d: int = 128, blk: int = 512) -> Workload:
    """Online-softmax decode attention: one query row per head, K / V shared by the
    heads (MQA), `blk` keys per iteration, running max / sum / output in workspaces."""
    loops = s2 // blk
    sc = f"tensor<{heads}x{blk}xf32>"
    col = f"tensor<{heads}x1xf32>"
    acc = f"tensor<{heads}x{d}xf32>"
    body_first = f"""
      %sh = pto.sub %s, %mloc : {sc}, {col} -> {sc}
      %p = pto.exp %sh : {sc}
      %l = pto.sum %p, -1 keepdim : {sc} -> {col}
      %pb = pto.cast %p mode rint : {sc} -> tensor<{heads}x{blk}xbf16>
      %o = pto.matmul %pb, %vt : tensor<{heads}x{blk}xbf16>, tensor<{blk}x{d}xbf16> -> {acc}
      pto.assemble %mloc into %mi[0, 0] : {col}, memref<{heads}x1xf32>
      pto.assemble %l into %li[0, 0] : {col}, memref<{heads}x1xf32>
      pto.assemble %o into %oi[0, 0] : {acc}, memref<{heads}x{d}xf32>
"""
    body_next = f"""
      %mo = pto.view %mi[0, 0] : memref<{heads}x1xf32> -> {col}
      %lo = pto.view %li[0, 0] : memref<{heads}x1xf32> -> {col}
      %oo = pto.view %oi[0, 0] : memref<{heads}x{d}xf32> -> {acc}
      %mn = pto.maximum %mo, %mloc : {col}, {col} -> {col}
      %dm = pto.sub %mo, %mn : {col}, {col} -> {col}
      %al = pto.exp %dm : {col}
      %sh = pto.sub %s, %mn : {sc}, {col} -> {sc}
      %p = pto.exp %sh : {sc}
      %ps = pto.sum %p, -1 keepdim : {sc} -> {col}
      %la = pto.mul %lo, %al : {col}, {col} -> {col}
      %ln = pto.add %la, %ps : {col}, {col} -> {col}
      %pb = pto.cast %p mode rint : {sc} -> tensor<{heads}x{blk}xbf16>
      %pv = pto.matmul %pb, %vt : tensor<{heads}x{blk}xbf16>, tensor<{blk}x{d}xbf16> -> {acc}
      %oa = pto.mul %oo, %al : {acc}, {col} -> {acc}
      %on = pto.add %oa, %pv : {acc}, {acc} -> {acc}
      pto.assemble %mn into %mi[0, 0] : {col}, memref<{heads}x1xf32>
      pto.assemble %ln into %li[0, 0] : {col}, memref<{heads}x1xf32>
      pto.assemble %on into %oi[0, 0] : {acc}, memref<{heads}x{d}xf32>
"""
    body_last = f"""
      %lf = pto.view %li[0, 0] : memref<{heads}x1xf32> -> {col}
      %of = pto.view %oi[0, 0] : memref<{heads}x{d}xf32> -> {acc}
      %res = pto.div %of, %lf : {acc}, {col} -> {acc}
      pto.assemble %res into %out[0, 0] : {acc}, memref<{heads}x{d}xf32>
"""
    ir = f"""
pto.kernel @decode_attention(%q: memref<{heads}x{d}xbf16>, %k: memref<{s2}x{d}xbf16>,
                             %v: memref<{s2}x{d}xbf16>, %out: memref<{heads}x{d}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cb = arith.constant {blk} : index
  %cl = arith.constant {loops} : index
  %scale = arith.constant {float(1.0 / np.sqrt(d))!r} : f32
  %mi = pto.tensor "mi" : memref<{heads}x1xf32>
  %li = pto.tensor "li" : memref<{heads}x1xf32>
  %oi = pto.tensor "oi" : memref<{heads}x{d}xf32>
  %qt = pto.view %q[0, 0] : memref<{heads}x{d}xbf16> -> tensor<{heads}x{d}xbf16>
  pto.loop %i = %c0 to %cl step %c1 name "LOOP_S2" idx_name "s2_idx" {{
    %off = arith.muli %i, %cb : index
    %kt = pto.view %k[%off, 0] : memref<{s2}x{d}xbf16> -> tensor<{blk}x{d}xbf16>
    %vt = pto.view %v[%off, 0] : memref<{s2}x{d}xbf16> -> tensor<{blk}x{d}xbf16>
    %raw = pto.matmul %qt, %kt b_trans : tensor<{heads}x{d}xbf16>, tensor<{blk}x{d}xbf16> -> {sc}
    %s = pto.mul %raw, %scale : {sc}, f32 -> {sc}
    %mloc = pto.amax %s, -1 keepdim : {sc} -> {col}
    %first = pto.is_loop_begin %i
    scf.if %first {{{body_first}    }} else {{{body_next}    }}
    %last = pto.is_loop_end %i
    scf.if %last {{{body_last}    }}
  }}
}}
"""
    rng = np.random.default_rng(3)
    inputs = {
        "q": rng.standard_normal((heads, d)).astype(F32).astype(BF16),
        "k": rng.standard_normal((s2, d)).astype(F32).astype(BF16),
        "v": rng.standard_normal((s2, d)).astype(F32).astype(BF16),
    }
    scale = F32(1.0 / np.sqrt(d))

    def mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(a.astype(F64), b.astype(F64)).astype(F32)

    def exp(x: np.ndarray) -> np.ndarray:
        return np.exp(x.astype(F64)).astype(F32)

    def rowsum(x: np.ndarray) -> np.ndarray:
        return np.sum(x.astype(F64), axis=-1, keepdims=True).astype(F32)

    def by_hand(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
        m = lsum = o = None
        for j in range(0, s2, blk):
            s = mm(q, k[j : j + blk].T) * scale
            mloc = s.max(axis=-1, keepdims=True)
            if m is None:
                p = exp(s - mloc)
                m, lsum, o = mloc, rowsum(p), mm(p.astype(BF16), v[j : j + blk])
            else:
                mn = np.maximum(m, mloc)
                al = exp(m - mn)
                p = exp(s - mn)
                lsum = lsum * al + rowsum(p)
                o = o * al + mm(p.astype(BF16), v[j : j + blk])
                m = mn
        assert o is not None and lsum is not None
        return {"out": o / lsum}

    return Workload(f"decode attention S2={s2} H={heads} D={d}", ir, inputs, by_hand)


# --------------------------------------------------------------------------- driver


def _times(
    fns: list[Callable[[], object]], repeat: int, clock: Callable[[], float]
) -> list[list[float]]:
    """All run times of each function; the runs are interleaved, so that a busy machine
    slows both sides alike. Each side runs once before the timed runs (first-touch
    page faults, caches)."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = clock()
            fn()
            times[k].append(clock() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs of each side")
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="CPU time of the process (default) or wall time",
    )
    parser.add_argument("--only", default="", help="only the workloads whose name has this")
    parser.add_argument(
        "--check", action="store_true", help="check bits and the hand-written result"
    )
    parser.add_argument("--small", action="store_true", help="small shapes (a smoke test)")
    args = parser.parse_args()
    if args.small:
        workloads = [
            rope(s=20, n=2, d=64, t=8),
            gelu(rows=10, hidden=64, t=4),
            linear(tokens=20, k=64, n=32, tm=8),
            attention(s2=64, heads=4, d=32, blk=16),
        ]
    else:
        workloads = [rope(), gelu(), linear(), attention()]
    workloads = [w for w in workloads if args.only.lower() in w.name.lower()]
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(
        f"{args.clock} time, best / median of {args.repeat} runs, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    print(f"{'workload':<38} {'back end':>17} {'by hand':>17} {'ratio':>6} {'median':>7}  batched")
    for w in workloads:
        plan = compile_kernel(parse_module(w.ir, w.name))
        got = plan(w.inputs)
        batched = plan.batched_runs > 0
        if args.check:
            reference = compile_kernel(parse_module(w.ir, w.name), vectorize=False)(w.inputs)
            for name, arr in got.items():
                assert arr.tobytes() == reference[name].tobytes(), f"{w.name}: batched bits differ"
            expected = w.by_hand(**w.inputs)
            for name, arr in got.items():
                # Same arithmetic in the same order and dtypes: the same bits.
                assert arr.dtype == expected[name].dtype, f"{w.name}: {name} dtype differs"
                same = arr.tobytes() == expected[name].tobytes()
                print(f"  {w.name}: {name} bits equal to the hand-written result: {same}")
                assert same, f"{w.name}: {name} differs from the hand-written result"
        if args.check and w.tiled is not None:
            for name, arr in w.tiled(**w.inputs).items():
                same = arr.tobytes() == got[name].tobytes()
                print(f"  {w.name}: {name} bits equal to the tiled hand-written result: {same}")
        sides = [lambda: plan(w.inputs), lambda: w.by_hand(**w.inputs)]  # noqa: B023
        if w.tiled is not None:
            sides.append(lambda: w.tiled(**w.inputs))  # type: ignore[misc]  # noqa: B023
        t_backend, t_hand, *t_tiled = _times(sides, args.repeat, clock)

        def ms(t: list[float]) -> str:
            return f"{min(t) * 1e3:.1f} / {statistics.median(t) * 1e3:.1f}ms"

        for label, t_ref in (
            (w.name, t_hand),
            *(("  ... by hand, tiled as the kernel", t) for t in t_tiled),
        ):
            best = min(t_backend) / min(t_ref)
            median = statistics.median(t_backend) / statistics.median(t_ref)
            print(
                f"{label:<38} {ms(t_backend):>17} {ms(t_ref):>17} "
                f"{best:>6.2f} {median:>7.2f}  {'yes' if batched else 'no'}"
            )


if __name__ == "__main__":
    main()
