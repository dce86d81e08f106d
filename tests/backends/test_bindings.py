"""The bindings (`tileir.bindings`): every `pto` op is a PyPTO function with a binding or
is marked internal, and, for every binding, the frontend reads the emitted PyPTO of its
op back to the same op (frontend(emit(op)) == op).

Each binding's op is made by a PyPTO call written here by hand (`EXAMPLES`, one per
PyPTO function: a new binding without an example fails `test_every_binding_has_an_example`),
read by the frontend, then put through `assert_round_trip` (emit, read back, compare the
flat IR structurally: operands, attributes, result types). Each result is stored with
`keep(r)` so that the comparison (which merges and drops unused pure ops) sees it.
"""

from __future__ import annotations

import textwrap

import pytest
from test_emitter_roundtrip import assert_round_trip
from xdsl.dialects.builtin import TensorType

from frontends.pypto import load_source
from tileir import bindings
from tileir.backends.numpy import semantics
from tileir.backends.pypto.emitter import emit_module
from tileir.dialect import pto
from tileir.dialect.pto import PTO

HEADER = """\
import pypto


def tileir_index_put(input, indices, values, accumulate=False):
    out = pypto.clone(input)
    pypto.index_put_(out, indices, values, accumulate)
    return out


def keep(t):
    w = pypto.tensor(t.shape, t.dtype, "")
    pypto.assemble(t, [0] * len(t.shape), w)


@pypto.frontend.jit()
def k(
    x: pypto.Tensor([4, 8], pypto.DT_FP32),
    y: pypto.Tensor([4, 8], pypto.DT_FP32),
    idx: pypto.Tensor([4, 8], pypto.DT_INT32),
    out: pypto.Tensor([4, 8], pypto.DT_FP32),
):
"""

_UNARY = "neg exp log sqrt rsqrt tanh erf sigmoid abs reciprocal relu".split()
_BINARY = "add sub mul div maximum minimum pow eq ne lt le gt ge".split()

EXAMPLES: dict[str, str] = {
    **{name: f"r = pypto.{name}(x)" for name in _UNARY},
    **{name: f"r = pypto.{name}(x, y)" for name in _BINARY},
    "where": "c = pypto.lt(x, y)\nr = pypto.where(c, x, 0.5)",
    "cast": "r = pypto.cast(x, pypto.DT_BF16, pypto.CastMode.CAST_RINT)",
    "full": "r = pypto.full([4, 8], 2.5, pypto.DT_FP32, valid_shape=[3, 8])",
    "sum": "r = pypto.sum(x, 1, keepdim=True)",
    "amax": "r = pypto.amax(x, -1)",
    "amin": "r = pypto.amin(x, 0, keepdim=True)",
    "tensor": 'w = pypto.tensor([4, 8], pypto.DT_FP32, "w")\npypto.assemble(pypto.exp(x), [0, 0], w)',
    "view": "r = pypto.view(x, [2, 8], [2, 0], valid_shape=[1, 8])",
    "assemble": "t = pypto.view(x, [2, 8], [0, 0])\npypto.assemble(t, [2, 0], out)",
    "Tensor.__getitem__": "e = idx[1, 2]\nr = pypto.view(x, [1, 8], [e, 0])",
    "reshape": "t = pypto.view(x, [4, 8], [0, 0])\nr = pypto.reshape(t, [8, 4])",
    "transpose": "r = pypto.transpose(pypto.exp(x), 0, 1)",
    "concat": "r = pypto.concat([pypto.exp(x), pypto.exp(y)], dim=1)",
    "unsqueeze": "r = pypto.unsqueeze(pypto.exp(x), 0)",
    "expand_clone": "t = pypto.view(x, [4, 1], [0, 0])\nr = pypto.expand_clone(t, [4, 8])",
    "matmul": "r = pypto.matmul(x, y, pypto.DT_FP32, b_trans=True)",
    "round": "r = pypto.round(x, -2)",
    "scaled_mm": (
        'a = pypto.tensor([4, 64], pypto.DT_FP8E4M3, "a")\n'
        'b = pypto.tensor([8, 64], pypto.DT_FP8E5M2, "b")\n'
        'sa = pypto.tensor([1, 4, 2], pypto.DT_FP8E8M0, "sa")\n'
        'sb = pypto.tensor([1, 8, 2], pypto.DT_FP8E8M0, "sb")\n'
        "r = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, b_trans=True, scale_a_trans=True, "
        'extend_params={"bias_tensor": pypto.view(x, [1, 8], [0, 0])})'
    ),
    "quant_mx": (
        "q = pypto.concat([pypto.exp(x)] * 8, dim=1)\n"
        "r, s = pypto.quant_mx(q, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -1, True)\nkeep(s)"
    ),
    "gathermask": "r = pypto.gathermask(x, 2)",
    "gather": "r = pypto.gather(x, 1, idx)",
    "index_select": "i = pypto.view(idx, [1, 2], [0, 0])\nr = pypto.index_select(x, 0, i)",
    "topk": "v, i = pypto.topk(x, 2, -1, largest=False)",
    "is_loop_begin": (
        "for i in pypto.loop(2):\n"
        "    if pypto.is_loop_begin(i):\n"
        "        pypto.assemble(pypto.exp(x), [0, 0], out)"
    ),
    "is_loop_end": (
        "for i in pypto.loop(2):\n"
        "    if pypto.is_loop_end(i):\n"
        "        pypto.assemble(pypto.exp(x), [0, 0], out)"
    ),
    "set_vec_tile_shapes": "pypto.set_vec_tile_shapes(2, 8)\nr = pypto.exp(x)",
    "set_cube_tile_shapes": (
        "pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])\n"
        "r = pypto.matmul(x, y, pypto.DT_FP32, b_trans=True)"
    ),
    "set_semantic_label": 'pypto.set_semantic_label("act")\nr = pypto.exp(x)',
    "set_pass_options": (
        "pypto.set_pass_options(sg_set_scope=2, vec_nbuffer_setting={0: 2})\nr = pypto.exp(x)"
    ),
    "clone": "r = pypto.exp(x).clone()",
    "deinterleave": "v, i = pypto.deinterleave(x)\nkeep(v)\nkeep(i)\na, b = pypto.deinterleave(x, y)",
    "silu": "r = pypto.silu(x)",
    "logical_not": "r = pypto.logical_not(x)",
    "fillpad": (
        't = pypto.view(x, [4, 8], [0, 0], valid_shape=[3, 5])\nr = pypto.fillpad(t, "constant", "-inf")'
    ),
    "arange": "r = pypto.arange(1.0, 4.0, 0.5)",
    "zeros": "r = pypto.zeros([4, 8], dtype=pypto.DT_INT32)",
    "ones": "r = pypto.ones(4, 8)",
    "scatter_update": (
        "i = pypto.view(idx, [2, 1], [0, 0])\nu = pypto.view(y, [2, 8], [0, 0])\n"
        "r = pypto.scatter_update(x, -2, i, u)"
    ),
    "scatter": ('i = pypto.view(idx, [2, 8], [0, 0])\nr = pypto.scatter(x, 0, i, y, reduce="add")'),
    "scatter_": "i = pypto.view(idx, [2, 8], [0, 0])\npypto.scatter_(out, 0, i, 1.5)",
    "index_add": "i = pypto.view(idx, [1, 8], [0, 0])\nj = pypto.reshape(i, [8])\nr = pypto.index_add(x, 1, j, y, alpha=2.0)",
    "index_add_": (
        "i = pypto.view(idx, [1, 3], [0, 0])\nj = pypto.reshape(i, [3])\n"
        "u = pypto.view(y, [3, 8], [0, 0])\npypto.index_add_(out, 0, j, u)"
    ),
    "index_put_": (
        "i = pypto.view(idx, [2, 1], [0, 0])\nj = pypto.reshape(i, [2])\n"
        "u = pypto.view(y, [2, 8], [0, 0])\npypto.index_put_(out, (j,), u, True)"
    ),
    "tileir_index_put": (
        "i = pypto.view(idx, [2, 1], [0, 0])\nj = pypto.reshape(i, [2])\n"
        "u = pypto.view(y, [2, 8], [0, 0])\nr = tileir_index_put(pypto.exp(x), (j,), u)"
    ),
    "experimental.set_operation_options": (
        "pypto.experimental.set_operation_options(combine_axis=True)\nr = pypto.exp(x)"
    ),
    "set_matrix_size": "pypto.set_matrix_size([16, 64, 16])\nr = pypto.exp(x)",
    "experimental.auto_mix_partition": "pypto.experimental.auto_mix_partition(1)\nr = pypto.exp(x)",
    "set_codegen_options": (
        "pypto.set_codegen_options(support_dynamic_aligned=True)\nr = pypto.exp(x)"
    ),
}

LEFT_OUT_FOR_020 = {"experimental.auto_mix_partition"}
"""Functions PyPTO 0.2.0 has not: written back as a comment, so they do not read back."""


def test_every_pto_op_has_a_binding_or_is_internal() -> None:
    ops = set(PTO.operations)
    bound = set(bindings.BY_OP)
    internal = set(bindings.INTERNAL)
    assert not bound & internal, bound & internal
    missing = sorted(op.name for op in ops - bound - internal)
    assert not missing, f"pto ops with neither a binding nor an INTERNAL entry: {missing}"
    stale = sorted(op.name for op in (bound | internal) - ops)
    assert not stale, stale


def test_every_binding_has_an_example() -> None:
    assert set(EXAMPLES) == set(bindings.BY_PYPTO)


@pytest.mark.parametrize("name", sorted(bindings.BY_PYPTO))
def test_binding_names_its_pure_semantics(name: str) -> None:
    """A binding that names a semantics function names one that exists."""
    b = bindings.BY_PYPTO[name]
    if b.semantics is not None:
        assert callable(getattr(semantics, b.semantics, None)), b.semantics


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_frontend_of_emitted_op_is_the_op(name: str) -> None:
    binding = bindings.BY_PYPTO[name]
    body = EXAMPLES[name]
    kept = [v for v in ("r", "v", "i") if f"{v} = " in body or f"{v}, " in body]
    body += "".join(f"\nkeep({v})" for v in kept if not body.startswith("for "))
    source = HEADER + textwrap.indent(body, "    ") + "\n"
    module = load_source(source, f"{name}.py")
    made = [op for op in module.walk() if isinstance(op, binding.op)]
    assert made, f"the example of pypto.{name} makes no {binding.op.name}"
    if name in LEFT_OUT_FOR_020:
        text = emit_module(module)
        assert f"# tileir: PyPTO 0.2.0 has no {name}: left out" in text
        assert not any(isinstance(op, binding.op) for op in load_source(text).walk())
        return
    back = assert_round_trip(module, f"{name}_emitted.py")
    assert any(isinstance(op, binding.op) for op in back.walk())


def test_helper_work_arounds_read_back_as_the_op() -> None:
    """tanh / erf are written as helpers (PyPTO 0.2.0 has none); sigmoid only on a tile
    that may be a tail tile."""
    from tileir.backends.pypto.emitter import emit_module

    text = emit_module(load_source(HEADER + "    r = pypto.tanh(x)\n    s = pypto.sigmoid(x)\n"))
    assert "tileir_tanh(" in text and "pypto.sigmoid(" in text and "tileir_sigmoid" not in text
    tail = (
        HEADER
        + "    t = pypto.view(x, [4, 8], [0, 0], valid_shape=[3, 8])\n    s = pypto.sigmoid(t)\n"
    )
    text = emit_module(load_source(tail))
    assert "def tileir_sigmoid(x):" in text and "s = tileir_sigmoid(t)" in text


def test_compare_results_are_i1_tiles() -> None:
    module = load_source(HEADER + "    r = x < y\n")
    (op,) = [o for o in module.walk() if isinstance(o, pto.LtOp)]
    assert isinstance(op.result.type, TensorType)
    assert str(op.result.type) == "tensor<4x8xi1>"
