"""The program generator itself: what it makes must verify, round-trip, and cover the
IR the passes have to handle."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType

from tileir.diagnostics import verify_located
from tileir.dialect import pto
from tileir.dialect.dtypes import element_type
from tileir.ir import parse_module, print_module
from tileir.testing import features, inputs_for, kernels, modules, random_inputs
from tileir.testing.inputs import find_kernel

COVERAGE_DRAWS = 1000
"""Fixed (not profile-scaled): the coverage guarantee is about this many draws."""

REQUIRED = {
    # every op kind the generator is meant to write
    *(
        f"op:pto.{n}"
        for n in (
            "kernel view assemble tensor reshape transpose concat unsqueeze expand_clone cast "
            "neg exp log sqrt rsqrt tanh erf sigmoid abs reciprocal relu add sub mul div "
            "maximum minimum eq ne lt le gt ge full where sum amax amin matmul loop "
            "is_loop_begin is_loop_end set_vec_tile_shapes set_cube_tile_shapes "
            "set_semantic_label pow gathermask topk gather index_select"
        ).split()
    ),
    "op:scf.if",
    "op:memref.dim",
    "op:arith.ceildivsi",
    "op:arith.minsi",
    # scalar integer arithmetic on every width, unsigned ops, i1 logic, casts
    *(
        f"op:arith.{n}"
        for n in (
            "addi subi muli divsi divui remsi remui floordivsi ceildivui andi ori xori shli "
            "shrsi shrui maxsi maxui minui cmpi select extsi extui trunci index_cast sitofp "
            "uitofp"
        ).split()
    ),
    *(f"arith:{t}" for t in ("i1", "i8", "i16", "i32", "i64", "index")),
    # loops and tails
    "loop",
    "loop:unroll",
    "loop:dynamic",
    "loop:step",
    "loop:nested",
    "tail",
    "tail:dynamic",
    "dynamic-dims",
    # memory
    "workspace",
    "workspace:sized",
    "workspace:rmw",
    "if:begin",
    "if:end",
    "outputs:2+",
    # operand forms
    "broadcast",
    "scalar-operand",
    "scalar-lhs",
    "reduce:keepdim",
    "reduce:dropdim",
    "reduce:dim0",
    "reduce:negative-dim",
    "matmul+vector",
    "matmul:a_trans",
    "matmul:b_trans",
    # element types and cast modes
    "dtype:f32",
    "dtype:f16",
    "dtype:bf16",
    "dtype:i32",
    *(f"cast:{m}" for m in ("none", "rint", "round", "floor", "ceil", "trunc", "odd")),
    "cast:sat",
}


@given(modules())
def test_every_generated_module_verifies_and_round_trips(module):
    for f in sorted(features(module)):
        event(f)
    verify_located(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    assert print_module(parse_module(print_module(module, generic=True))) == text


def test_distribution_covers_every_op_loop_and_tail_case():
    seen: Counter[str] = Counter()

    @settings(
        max_examples=COVERAGE_DRAWS,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(modules())
    def collect(module):
        seen.update(features(module))

    collect()
    missing = sorted(REQUIRED - set(seen))
    assert not missing, f"not generated in {COVERAGE_DRAWS} draws: {missing}"


def _arg_types(module):
    k = find_kernel(module)
    return k, dict(zip(k.names, (a.type for a in k.body.block.args)))


@given(st.data())
def test_inputs_match_the_kernel_signature(data):
    module = data.draw(modules(templates=["rows", "accumulate", "softmax"]))
    inputs = data.draw(inputs_for(module))
    k, types = _arg_types(module)
    assert set(inputs) == set(types)
    sizes: dict[str, int] = {}
    for name, t in types.items():
        assert isinstance(t, MemRefType)
        arr = inputs[name]
        assert arr.dtype == element_type(t.get_element_type()).numpy
        symbols = iter(k.dynamic_names(name))
        for declared, actual in zip(t.get_shape(), arr.shape, strict=True):
            if declared == DYNAMIC_INDEX:
                # one symbol, one size, in every argument that names it
                assert sizes.setdefault(next(symbols), actual) == actual
            else:
                assert declared == actual


@given(modules())
def test_random_inputs_are_reproducible_from_the_seed(module):
    a = random_inputs(module, seed=5)
    b = random_inputs(module, seed=5)
    c = random_inputs(module, seed=6)
    assert a.keys() == b.keys() == c.keys()
    for name in a:
        assert np.array_equal(a[name].view(np.uint8), b[name].view(np.uint8))
    assert any(
        not np.array_equal(a[n].view(np.uint8), c[n].view(np.uint8)) for n in a if a[n].size > 4
    ) or all(a[n].size <= 4 for n in a)


def test_dynamic_dims_take_the_requested_size():
    @settings(max_examples=20, derandomize=True, database=None)
    @given(modules(templates=["rows"]))
    def run(module):
        k, types = _arg_types(module)
        if k.dynamic_dims is None:
            return
        inputs = random_inputs(module, sizes={"S": 11})
        for name, t in types.items():
            if DYNAMIC_INDEX in t.get_shape():
                assert inputs[name].shape[0] == 11

    run()


@settings(max_examples=30)
@given(kernels(templates=["rows"], dtypes=["i32"], max_ops=2))
def test_restrictions_are_honoured(kernel):
    loops = [op for op in kernel.walk() if isinstance(op, pto.LoopOp)]
    assert len(loops) in (1, 2)  # a row loop, maybe nested in a loop over row blocks
    for arg in kernel.body.block.args:
        assert str(arg.type.get_element_type()) in ("i32", "i1", "f32", "f16", "bf16")
    # the loaded tensor keeps the requested dtype
    assert str(kernel.body.block.args[0].type.get_element_type()) == "i32"


@given(modules(max_ops=1))
def test_small_budgets_make_small_programs(module):
    n_ops = sum(1 for _ in module.walk())
    assert n_ops < 80


def test_unknown_template_is_named():
    with pytest.raises(ValueError, match="unknown templates \\['loops'\\]"):
        kernels(templates=["loops"])
    with pytest.raises(ValueError, match="unknown dtypes \\['f64'\\]"):
        modules(dtypes=["f32", "f64"])


def test_features_reads_the_ir():
    # the coverage test trusts `features`, so check it on a module written by hand
    module = parse_module(
        """
pto.kernel @k(%x: memref<?x4xf32>, %out: memref<?x4xf32>, %m: memref<1x4xf32>)
    attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %s = memref.dim %x, %c0 : memref<?x4xf32>
  %acc = pto.tensor "acc" : memref<1x4xf32>
  pto.loop %i = %c0 to %s step %c2 name "rows" unroll [2, 1] {
    %left = arith.subi %s, %i : index
    %rows = arith.minsi %left, %c2 : index
    %t = pto.view %x[%i, 0] valid [%rows, 4] : memref<?x4xf32> -> tensor<2x4xf32>
    %h = arith.constant 2.000000e+00 : f32
    %r = pto.sub %h, %t : f32, tensor<2x4xf32> -> tensor<2x4xf32>
    pto.assemble %r into %out[%i, 0] : tensor<2x4xf32>, memref<?x4xf32>
    %a = pto.view %acc[0, 0] : memref<1x4xf32> -> tensor<1x4xf32>
    %c = pto.amax %t, -2 keepdim : tensor<2x4xf32> -> tensor<1x4xf32>
    %n = pto.maximum %a, %c : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
    pto.assemble %n into %acc[0, 0] : tensor<1x4xf32>, memref<1x4xf32>
  }
  %f = pto.view %acc[0, 0] : memref<1x4xf32> -> tensor<1x4xf32>
  %g = pto.cast %f mode floor : tensor<1x4xf32> -> tensor<1x4xbf16>
  %h2 = pto.cast %g : tensor<1x4xbf16> -> tensor<1x4xf32>
  pto.assemble %h2 into %m[0, 0] : tensor<1x4xf32>, memref<1x4xf32>
}
"""
    )
    f = features(module)
    expected = {
        "loop",
        "loop:unroll",
        "loop:dynamic",
        "loop:step",
        "tail",
        "tail:dynamic",
        "dynamic-dims",
        "workspace",
        "workspace:rmw",
        "scalar-operand",
        "scalar-lhs",
        "reduce:keepdim",
        "reduce:dim0",
        "reduce:negative-dim",
        "cast:floor",
        "cast:none",
        "outputs:2+",
        "dtype:f32",
        "op:pto.sub",
    }
    assert expected <= f
    absent = {"loop:nested", "if:begin", "if:end", "broadcast", "matmul+vector", "cast:sat"}
    assert not (absent & f)
