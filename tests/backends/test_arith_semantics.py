"""Scalar `arith` on the numpy back end: fixed-width, as MLIR (issue 18, item 1).

Expected values are hand calculations of MLIR's semantics (two's complement, unsigned
ops on the bit pattern, i1 one bit whose signed value is -1, index 64 bits);
`test_arith_mlir_oracle.py` checks the same against the real mlir-opt on generated
cases.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileir.backends.numpy import run
from tileir.diagnostics import TileirError
from tileir.ir import parse_module
from tileir.testing import check_pass, inputs_for, modules

# (op lines on %x / %y, result type, expected): each through `pto.full` into an output
CASES = [
    ("%x = arith.constant true\n%r = arith.addi %x, %x : i1", "i1", False),
    (
        "%x = arith.constant -1 : index\n%y = arith.constant 0 : index\n"
        "%r = arith.cmpi ult, %x, %y : index",
        "i1",
        False,
    ),
    (
        "%x = arith.constant -2 : i32\n%y = arith.constant 2 : i32\n%r = arith.divui %x, %y : i32",
        "i32",
        2147483647,
    ),
    ("%x = arith.constant 100 : i8\n%r = arith.addi %x, %x : i8", "i8", -56),
    (
        "%x = arith.constant true\n%y = arith.constant false\n%r = arith.cmpi slt, %x, %y : i1",
        "i1",
        True,
    ),
    (
        "%x = arith.constant true\n%y = arith.constant false\n%r = arith.maxsi %x, %y : i1",
        "i1",
        False,
    ),
    ("%x = arith.constant true\n%r = arith.extsi %x : i1 to i32", "i32", -1),
    ("%x = arith.constant true\n%r = arith.extui %x : i1 to i32", "i32", 1),
    ("%x = arith.constant -1 : i16\n%r = arith.extui %x : i16 to i64", "i64", 65535),
    ("%x = arith.constant 300 : i32\n%r = arith.trunci %x : i32 to i8", "i8", 44),
    (
        "%x = arith.constant -7 : i8\n%y = arith.constant 2 : i8\n%r = arith.remsi %x, %y : i8",
        "i8",
        -1,
    ),
    (
        "%x = arith.constant -7 : i8\n%y = arith.constant 2 : i8\n%r = arith.floordivsi %x, %y : i8",
        "i8",
        -4,
    ),
    (
        "%x = arith.constant -7 : i8\n%y = arith.constant 2 : i8\n%r = arith.ceildivsi %x, %y : i8",
        "i8",
        -3,
    ),
    (
        "%x = arith.constant -8 : i8\n%y = arith.constant 1 : i8\n%r = arith.shrui %x, %y : i8",
        "i8",
        124,
    ),
    (
        "%x = arith.constant -8 : i8\n%y = arith.constant 1 : i8\n%r = arith.shrsi %x, %y : i8",
        "i8",
        -4,
    ),
    (
        "%x = arith.constant 64 : i8\n%y = arith.constant 1 : i8\n%r = arith.shli %x, %y : i8",
        "i8",
        -128,
    ),
    (
        "%x = arith.constant -1 : i8\n%y = arith.constant 1 : i8\n%r = arith.maxui %x, %y : i8",
        "i8",
        -1,
    ),
    (
        "%x = arith.constant 9223372036854775807 : index\n%y = arith.constant 1 : index\n"
        "%r = arith.addi %x, %y : index",
        "index",
        -(2**63),
    ),
    (
        "%x = arith.constant 18446744073709551615 : index\n%r = arith.index_cast %x : index to i64",
        "i64",
        -1,
    ),
    (
        "%x = arith.constant 4294967295 : i64\n%r = arith.index_cast %x : i64 to index\n",
        "index",
        4294967295,
    ),
    ("%x = arith.constant -1 : i8\n%r = arith.uitofp %x : i8 to f32", "f32", 255.0),
    ("%x = arith.constant 16777217 : i32\n%r = arith.sitofp %x : i32 to f32", "f32", 16777216.0),
    (
        "%x = arith.constant 0x7FC00000 : f32\n%y = arith.constant 1.0 : f32\n"
        "%r = arith.maxnumf %x, %y : f32",
        "f32",
        1.0,
    ),
    (
        "%x = arith.constant 0x7FC00000 : f32\n%y = arith.constant 1.0 : f32\n"
        "%c = arith.cmpf une, %x, %y : f32\n%r = arith.select %c, %y, %y : f32",
        "f32",
        1.0,
    ),
    (
        "%x = arith.constant -0.0 : f32\n%y = arith.constant 0.0 : f32\n"
        "%r = arith.minimumf %y, %x : f32",
        "f32",
        -0.0,
    ),
    ("%x = arith.constant -2.5 : f32\n%r = arith.fptosi %x : f32 to i8", "i8", -2),
    ("%x = arith.constant 1.0 : f32\n%r = arith.bitcast %x : f32 to i32", "i32", 0x3F800000),
]


def kernel(body: str, t: str) -> str:
    tile = "i64" if t == "index" else t
    return (
        f"pto.kernel @k(%out: memref<2x{tile}>) {{\n{body}\n"
        f"%t = pto.full %r : {t} -> tensor<2x{tile}>\n"
        f"pto.assemble %t into %out[0] : tensor<2x{tile}>, memref<2x{tile}>\n}}\n"
    )


@pytest.mark.parametrize(("body", "t", "expected"), CASES)
def test_fixed_width_results(body, t, expected):
    out = run(parse_module(kernel(body, t)), {})["out"]
    got = out[0].item()
    assert got == expected and type(got) is type(expected)
    if isinstance(expected, float):
        assert np.signbit(out[0]) == np.signbit(expected)


@pytest.mark.parametrize(
    ("body", "t", "reason"),
    [
        (
            "%x = arith.constant 5 : i32\n%y = arith.constant 0 : i32\n"
            "%r = arith.divsi %x, %y : i32",
            "i32",
            "division by zero",
        ),
        (
            "%x = arith.constant -128 : i8\n%y = arith.constant -1 : i8\n"
            "%r = arith.divsi %x, %y : i8",
            "i8",
            "signed division overflow",
        ),
        (
            "%x = arith.constant 1 : i8\n%y = arith.constant 8 : i8\n%r = arith.shli %x, %y : i8",
            "i8",
            "shift amount 8",
        ),
        (
            "%x = arith.constant 100 : i8\n%r = arith.addi %x, %x overflow<nsw> : i8",
            "i8",
            "overflow<nsw>",
        ),
        (
            "%x = arith.constant 3.0e9 : f32\n%r = arith.fptosi %x : f32 to i32",
            "i32",
            "does not fit i32",
        ),
    ],
)
def test_undefined_behaviour_is_a_located_error(body, t, reason):
    text = kernel(body, t)
    line = 1 + next(i for i, s in enumerate(text.splitlines()) if s.startswith("%r"))
    with pytest.raises(TileirError) as e:
        run(parse_module(text, "ub.mlir"), {})
    message = str(e.value)
    assert message.startswith(f"ub.mlir:{line}:1: error: ")
    assert "undefined behaviour" in message and reason in message


SELECT_ON_I1_ADD = """
pto.kernel @k(%x: memref<4xi32>, %out: memref<4xi32>) {
  %t = arith.constant true
  %s = arith.addi %t, %t : i1
  %a = arith.constant 7 : i32
  %b = arith.constant -3 : i32
  %v = arith.select %s, %a, %b : i32
  %f = pto.full %v : i32 -> tensor<4xi32>
  %in = pto.view %x[0] : memref<4xi32> -> tensor<4xi32>
  %r = pto.add %in, %f : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  pto.assemble %r into %out[0] : tensor<4xi32>, memref<4xi32>
}
"""


@pytest.mark.parametrize("pipeline", ["default", "canonicalize"])
def test_folding_i1_arithmetic_keeps_the_meaning(pipeline):
    # issue 18: `default` reported this as a miscompile (true + true gave 2, i.e. true)
    module = parse_module(SELECT_ON_I1_ADD)
    x = np.arange(4, dtype=np.int32)
    assert list(run(module, {"x": x})["out"]) == [-3, -2, -1, 0]
    check_pass(pipeline, module, inputs={"x": x})


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(data=st.data())
def test_passes_keep_generated_scalar_arithmetic(data):
    """Programs whose scalars come from integer arithmetic on every width (the
    generator's `scalars` module) through canonicalize and the default pipeline."""
    module = data.draw(modules(templates=["block", "rows"], dtypes=["i32", "f32"]))
    inputs = data.draw(inputs_for(module))
    check_pass("canonicalize,cse", module, inputs=inputs)
    check_pass("default", module, inputs=inputs)
