"""The seed kernel library: each seed workload written once against the real PyPTO API.

Every kernel file under this package is a plain PyPTO source file (``import pypto`` and
``@pypto.frontend.jit`` kernels) that compiles with ``pypto==0.2.0``.  This module reads
their module-level constants and kernel signatures by importing them the way the PyPTO
frontend does (``frontends.pypto.loader``, with tileir's stand-in ``pypto``, so the real one
is not needed), so the shapes live in one place, the top of each file, and the registry and
the frontend cannot read them differently.

``SEED_KERNELS`` lists one :class:`SeedKernel` per kernel, each with input generation and an
independent numpy golden (:mod:`frontends.kernels.goldens`)::

    rng = np.random.default_rng(0)
    for k in SEED_KERNELS:
        inputs = k.make_inputs(rng)
        expected = k.golden(inputs)  # {output name: array}
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from frontends.kernels import goldens as g
from frontends.pypto.loader import LOADING, LoadedFile, load_module
from frontends.pypto.values import TensorSpec
from tileir.diagnostics import TileirError
from tileir.dialect.dtypes import BY_SHORT, ElementType

__all__ = ["KERNEL_DIR", "SEED_KERNELS", "SeedKernel", "kernel_by_name", "module_constants"]

KERNEL_DIR = Path(__file__).resolve().parent

Arg = tuple[str, tuple[int, ...], str]
Arrays = dict[str, np.ndarray]

# Tolerances, (atol, rtol).
#: Seed 000 (AT-04, InterleaveRope acceptance): atol=1e-4, rtol=7.8125e-3 (2^-7), "bf16 precision".
TOL_BF16 = (1e-4, 2.0**-7)
#: FP32 results of FP32 math (MoE gate weights): the seed gives no tolerance.
TOL_FP32 = (1e-5, 1e-5)
#: Bit-exact: data movement (gather, index_select, expand_clone) or one rounding done the
#: same way on both sides (type_as).
TOL_EXACT = (0.0, 0.0)


@dataclass(frozen=True)
class SeedKernel:
    """One seed kernel: where its source is, its signature, inputs, golden and tolerance.

    ``args`` is the kernel's parameter list in order, ``(name, shape, dtype)`` with dtype one
    of ``bf16 f16 f32 i8 i32 i64 i1``, read from the file's ``pypto.Tensor`` annotations;
    ``outputs`` names the parameters the kernel writes.  ``make_inputs(rng)`` returns the other
    parameters as arrays of those dtypes (bf16 as ``ml_dtypes.bfloat16``), ``golden(inputs)``
    the expected outputs.  A result passes when ``|actual - golden| <= atol + rtol * |golden|``
    elementwise, ``(atol, rtol) = tolerance``; ``tolerance_source`` says where it comes from
    and ``seed`` which seed document and section the kernel implements.
    """

    name: str
    path: Path
    kernel: str
    args: list[Arg]
    outputs: list[str]
    make_inputs: Callable[[np.random.Generator], Arrays]
    golden: Callable[[Arrays], Arrays]
    tolerance: tuple[float, float]
    tolerance_source: str = ""
    seed: str = ""

    @property
    def inputs(self) -> list[str]:
        return [name for name, _, _ in self.args if name not in self.outputs]


# --------------------------------------------------------------------------------------------
# Reading constants and signatures from a kernel file (imported with the stand-in pypto)
# --------------------------------------------------------------------------------------------


@cache
def _module(path: Path) -> LoadedFile:
    """The kernel file, imported as the frontend imports it (kernels are found, not
    traced)."""
    with LOADING:
        return load_module(path.read_text(encoding="utf-8"), str(path))


_NOT_CONSTANT = object()


def _constant(value: Any) -> Any:
    """A module-level value as the registry reports it: numbers, strings, lists of them,
    and dtypes by their short name (``"bf16"``); `_NOT_CONSTANT` for anything else."""
    if isinstance(value, ElementType):
        return value.short
    if isinstance(value, int | float | str):
        return value
    if isinstance(value, list | tuple):
        items = [_constant(v) for v in value]
        return _NOT_CONSTANT if _NOT_CONSTANT in items else items
    return _NOT_CONSTANT


@cache
def module_constants(path: Path) -> Mapping[str, Any]:
    """The module-level constants of a kernel file (ints, floats, lists, dtype names).

    Anything else (modules, functions, kernels, ...) is skipped.
    """
    return {
        name: c
        for name, v in vars(_module(path).module).items()
        if not name.startswith("__") and (c := _constant(v)) is not _NOT_CONSTANT
    }


def _signature(path: Path, kernel: str) -> list[Arg]:
    """``[(name, shape, dtype)]`` from the ``pypto.Tensor(shape, dtype)`` annotations."""
    try:
        (entry,) = _module(path).select(kernel)
    except TileirError as e:
        raise ValueError(f"{path.name}: {e}") from None
    args = []
    for name, param in inspect.signature(entry.kernel.fn, eval_str=True).parameters.items():
        spec = param.annotation
        if not (
            isinstance(spec, TensorSpec)
            and spec.shape
            and all(isinstance(d, int) for d in spec.shape)
            and isinstance(spec.dtype, ElementType)
        ):
            raise ValueError(
                f"{path.name}:{kernel}: argument {name} is not annotated "
                "pypto.Tensor(shape, dtype) with a static shape"
            )
        args.append((name, tuple(int(d) for d in spec.shape), spec.dtype.short))
    return args


# --------------------------------------------------------------------------------------------
# Input generators
# --------------------------------------------------------------------------------------------


def _randn(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale: float = 1.0
) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(BY_SHORT[dtype].numpy)


def _entry(
    name: str,
    file: str,
    kernel: str,
    outputs: list[str],
    make_inputs: Callable[[np.random.Generator, Mapping[str, Any], dict[str, Arg]], Arrays],
    golden: Callable[[Arrays, Mapping[str, Any], dict[str, Arg]], Arrays],
    tolerance: tuple[float, float],
    tolerance_source: str,
    seed: str,
) -> SeedKernel:
    path = KERNEL_DIR / file
    c = module_constants(path)
    args = _signature(path, kernel)
    by_name = {a[0]: a for a in args}
    missing = [o for o in outputs if o not in by_name]
    if missing:
        raise ValueError(f"{name}: outputs {missing} are not parameters of {kernel}")
    return SeedKernel(
        name=name,
        path=path,
        kernel=kernel,
        args=args,
        outputs=outputs,
        make_inputs=lambda rng: make_inputs(rng, c, by_name),
        golden=lambda inputs: golden(inputs, c, by_name),
        tolerance=tolerance,
        tolerance_source=tolerance_source,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# RoPE
# --------------------------------------------------------------------------------------------


def _rope_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    _, x_shape, x_dt = a["x"]
    seq, rot_dim = a["cos"][1]
    cos, sin = g.rope_tables(seq, rot_dim, BY_SHORT[a["cos"][2]].numpy)
    return {"x": _randn(rng, x_shape, x_dt), "cos": cos, "sin": sin}


def _rope_golden(fn: Callable[..., np.ndarray]):
    def golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
        return {"out": fn(i["x"], i["cos"], i["sin"], out_dtype=BY_SHORT[a["out"][2]].numpy)}

    return golden


def _x_inputs(scale: float = 1.0):
    """Inputs ``{"x": randn * scale}`` in ``x``'s dtype."""

    def make(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
        return {"x": _randn(rng, a["x"][1], a["x"][2], scale)}

    return make


def _x_inputs_named(name: str, scale: float = 1.0):
    """Inputs ``{name: randn * scale}`` in that argument's dtype."""

    def make(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
        return {name: _randn(rng, a[name][1], a[name][2], scale)}

    return make


def _unary_golden(fn: Callable[..., np.ndarray]):
    def golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
        return {"out": fn(i["x"], out_dtype=BY_SHORT[a["out"][2]].numpy)}

    return golden


def _rms_norm_rope_inputs(
    rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]
) -> Arrays:
    inputs = _rope_inputs(rng, c, a)
    inputs["gamma"] = (1.0 + 0.1 * rng.standard_normal(a["gamma"][1])).astype(
        BY_SHORT[a["gamma"][2]].numpy
    )
    return inputs


def _rms_norm_rope_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {
        "out": g.rms_norm_rope(
            i["x"], i["gamma"], i["cos"], i["sin"], c["EPS"], BY_SHORT[a["out"][2]].numpy
        )
    }


def _attention_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {n: _randn(rng, a[n][1], a[n][2]) for n in ("q", "k", "v")}


def _attention_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {
        "out": g.decode_attention(i["q"], i["k"], i["v"], c["SCALE"], BY_SHORT[a["out"][2]].numpy)
    }


def _router_logits(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Router logits with distinct values in every row (multiples of 1/8: exact in bf16), so
    that top-k has no ties and one right answer."""
    tokens, experts = shape
    rows = [rng.permutation(experts) for _ in range(tokens)]
    return ((np.stack(rows) - experts / 2) * 0.125).astype(BY_SHORT[dtype].numpy)


def _moe_sigmoid_inputs(
    rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]
) -> Arrays:
    return {
        "logits": _router_logits(rng, a["logits"][1], a["logits"][2]),
        "bias": rng.uniform(0.0, 0.05, a["bias"][1]).astype(BY_SHORT[a["bias"][2]].numpy),
    }


def _moe_sigmoid_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    w, idx = g.moe_routing_sigmoid(i["logits"], i["bias"], c["TOP_K"])
    return {"weights": w, "indices": idx}


def _moe_softmax_inputs(
    rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]
) -> Arrays:
    return {"logits": _router_logits(rng, a["logits"][1], a["logits"][2])}


def _moe_softmax_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    w, idx = g.moe_routing_softmax(i["logits"], c["TOP_K"])
    return {"weights": w, "indices": idx}


def _linear_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    k = a["x"][1][-1]
    return {
        "x": _randn(rng, a["x"][1], a["x"][2]),
        "w": _randn(rng, a["w"][1], a["w"][2], 1.0 / np.sqrt(k)),
        "bias": _randn(rng, a["bias"][1], a["bias"][2]),
    }


def _linear_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"out": g.linear(i["x"], i["w"], i["bias"], BY_SHORT[a["out"][2]].numpy)}


def _embedding_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    vocab = a["weight"][1][0]
    return {
        "weight": _randn(rng, a["weight"][1], a["weight"][2]),
        "ids": rng.integers(0, vocab, a["ids"][1]).astype(BY_SHORT[a["ids"][2]].numpy),
    }


def _embedding_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"out": g.embedding(i["weight"], i["ids"])}


def _repeat_kv_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"out": g.repeat_kv(i["kv"], c["GROUPS"])}


def _mean_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"out": g.mean_last(i["x"], BY_SHORT[a["out"][2]].numpy)}


def _type_as_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"a": _randn(rng, a["a"][1], a["a"][2], 4.0)}


def _type_as_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {"out": g.type_as(i["a"], BY_SHORT[a["out"][2]].numpy)}


def _projection_inputs(rng: np.random.Generator, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    hidden = a["x"][1][-1]
    inputs = {
        "x": _randn(rng, a["x"][1], a["x"][2]),
        "gamma": (1.0 + 0.1 * rng.standard_normal(a["gamma"][1])).astype(
            BY_SHORT[a["gamma"][2]].numpy
        ),
    }
    if a["w"][2] == "i8":
        inputs["w"] = rng.integers(-127, 128, a["w"][1]).astype(np.int8)
        w_scale = rng.uniform(0.5, 1.5, a["w_scale"][1]) / (127.0 * np.sqrt(hidden))
        inputs["w_scale"] = w_scale.astype(BY_SHORT[a["w_scale"][2]].numpy)
    else:
        inputs["w"] = _randn(rng, a["w"][1], a["w"][2], 1.0 / np.sqrt(hidden))
    return inputs


def _projection_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    return {
        "out": g.linear_projection(
            i["x"], i["gamma"], i["w"], c["EPS"], BY_SHORT[a["out"][2]].numpy
        )
    }


def _projection_quant_golden(i: Arrays, c: Mapping[str, Any], a: dict[str, Arg]) -> Arrays:
    out = g.linear_projection_quant(
        i["x"], i["gamma"], i["w"], i["w_scale"], c["EPS"], BY_SHORT[a["out"][2]].numpy
    )
    return {"out": out}


_BF16_TOL = "seed 000's bf16 acceptance (atol=1e-4, rtol=2^-7); the seed gives none for this op"
_ROPE_TOL = "seed 000 (AT-04 / InterleaveRope): atol=1e-4, rtol=2^-7"

SEED_KERNELS: list[SeedKernel] = [
    _entry(
        "rope_half_split",
        "rope_half_split.py",
        "rope_half_split_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_half_split),
        TOL_BF16,
        _ROPE_TOL,
        "000 AT-04 variant A; 001 rope skeleton",
    ),
    _entry(
        "rope_half_split_partial",
        "rope_half_split.py",
        "rope_half_split_partial_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_half_split),
        TOL_BF16,
        _ROPE_TOL,
        "000 AT-04 variant A, partial_rotate",
    ),
    _entry(
        "rope_interleave",
        "rope_interleave.py",
        "rope_interleave_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_interleave),
        TOL_BF16,
        _ROPE_TOL + " (InterleaveRope uses it for fp16 and bf16)",
        "000 AT-04 variant B (InterleaveRope), fp16, CAST_NONE",
    ),
    _entry(
        "rope_interleave_partial",
        "rope_interleave.py",
        "rope_interleave_partial_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_interleave),
        TOL_BF16,
        _ROPE_TOL + " (InterleaveRope uses it for fp16 and bf16)",
        "000 AT-04 variant B, partial_rotate, fp16",
    ),
    _entry(
        "rope_rotate_half",
        "rope_rotate_half.py",
        "rope_rotate_half_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_rotate_half),
        TOL_BF16,
        _ROPE_TOL,
        "000 AT-04 variant C (MLAPrologQuant)",
    ),
    _entry(
        "rope_rotate_half_partial",
        "rope_rotate_half.py",
        "rope_rotate_half_partial_kernel",
        ["out"],
        _rope_inputs,
        _rope_golden(g.rope_rotate_half),
        TOL_BF16,
        _ROPE_TOL,
        "000 AT-04 variant C, partial_rotate",
    ),
    _entry(
        "gelu_tanh",
        "gelu.py",
        "gelu_tanh_kernel",
        ["out"],
        _x_inputs(scale=2.0),
        _unary_golden(g.gelu_tanh),
        TOL_BF16,
        _BF16_TOL,
        "001 GELU scheme A (tanh approximation)",
    ),
    _entry(
        "gelu_erf",
        "gelu.py",
        "gelu_erf_kernel",
        ["out"],
        _x_inputs(scale=2.0),
        _unary_golden(g.gelu_erf),
        TOL_BF16,
        _BF16_TOL,
        "001 GELU scheme B (erf)",
    ),
    _entry(
        "rms_norm_rope",
        "rms_norm_rope.py",
        "rms_norm_rope_kernel",
        ["out"],
        _rms_norm_rope_inputs,
        _rms_norm_rope_golden,
        TOL_BF16,
        _ROPE_TOL,
        "001 RoPE scheme B (fused RMSNorm + RoPE); 000 Qwen3 Q/K kernel",
    ),
    _entry(
        "decode_attention",
        "decode_attention.py",
        "decode_attention_kernel",
        ["out"],
        _attention_inputs,
        _attention_golden,
        TOL_BF16,
        _BF16_TOL + "; the golden is the exact whole-row softmax",
        "001 Attention scheme B (online softmax, gqa_decode_attn)",
    ),
    _entry(
        "moe_routing_sigmoid",
        "moe_routing.py",
        "moe_routing_sigmoid_kernel",
        ["weights", "indices"],
        _moe_sigmoid_inputs,
        _moe_sigmoid_golden,
        TOL_FP32,
        "FP32 outputs of FP32 math: atol=1e-5, rtol=1e-5 (indices exact: no ties by construction)",
        "001 MoE Routing scheme A (sigmoid gating)",
    ),
    _entry(
        "moe_routing_softmax",
        "moe_routing.py",
        "moe_routing_softmax_kernel",
        ["weights", "indices"],
        _moe_softmax_inputs,
        _moe_softmax_golden,
        TOL_FP32,
        "FP32 outputs of FP32 math: atol=1e-5, rtol=1e-5 (indices exact: no ties by construction)",
        "001 MoE Routing scheme B (softmax gating)",
    ),
    _entry(
        "linear_add",
        "linear.py",
        "linear_add_kernel",
        ["out"],
        _linear_inputs,
        _linear_golden,
        TOL_BF16,
        _BF16_TOL,
        "001 Linear scheme A (matmul + add)",
    ),
    _entry(
        "linear_bias",
        "linear.py",
        "linear_bias_kernel",
        ["out"],
        _linear_inputs,
        _linear_golden,
        TOL_BF16,
        _BF16_TOL,
        "001 Linear scheme B (extend_params bias_tensor)",
    ),
    _entry(
        "embedding_gather",
        "embedding.py",
        "embedding_gather_kernel",
        ["out"],
        _embedding_inputs,
        _embedding_golden,
        TOL_EXACT,
        "data movement only: exact",
        "001 Embedding scheme A (gather, 2-D ids)",
    ),
    _entry(
        "embedding_index_select",
        "embedding.py",
        "embedding_index_select_kernel",
        ["out"],
        _embedding_inputs,
        _embedding_golden,
        TOL_EXACT,
        "data movement only: exact",
        "001 Embedding scheme B (index_select, 1-D ids)",
    ),
    _entry(
        "repeat_kv",
        "repeat_kv.py",
        "repeat_kv_kernel",
        ["out"],
        _x_inputs_named("kv"),
        _repeat_kv_golden,
        TOL_EXACT,
        "data movement only: exact",
        "001 repeat_kv scheme A (unsqueeze + expand_clone + reshape)",
    ),
    _entry(
        "mean",
        "mean.py",
        "mean_kernel",
        ["out"],
        _x_inputs(),
        _mean_golden,
        TOL_BF16,
        _BF16_TOL,
        "001 mean (FP32 cast before sum)",
    ),
    _entry(
        "type_as",
        "type_as.py",
        "type_as_kernel",
        ["out"],
        _type_as_inputs,
        _type_as_golden,
        TOL_EXACT,
        "one RNE rounding FP32 -> BF16 on both sides: exact",
        "003 type_as skeleton",
    ),
    _entry(
        "linear_projection",
        "linear_projection.py",
        "linear_projection_kernel",
        ["out"],
        _projection_inputs,
        _projection_golden,
        TOL_BF16,
        _BF16_TOL + "; the golden rounds the normalised rows to bf16 where the kernel does",
        "002 SK-03 linear projection (RMSNorm -> MatMul)",
    ),
    _entry(
        "linear_projection_quant",
        "linear_projection.py",
        "linear_projection_quant_kernel",
        ["out"],
        _projection_inputs,
        _projection_quant_golden,
        TOL_BF16,
        _BF16_TOL + "; the golden quantises in float32 like the kernel",
        "002 SK-03 quant variant (V -> Quant -> C -> Dequant, AT-11)",
    ),
]


def kernel_by_name(name: str) -> SeedKernel:
    for k in SEED_KERNELS:
        if k.name == name:
            return k
    raise KeyError(name)
