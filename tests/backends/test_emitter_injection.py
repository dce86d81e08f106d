"""No name, label or string attribute of the IR can inject code into the emitted
PyPTO module: every hostile string ends up inside a string literal or sanitized."""

from __future__ import annotations

import ast

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64

from tileir import parse_module
from tileir.backends.pypto.emitter import emit_module, sanitize

HOSTILE = '"); import os; os.system("x'
HOSTILE2 = "'''\n\"\"\"\nimport os\n#"


def hostile_module() -> str:
    label = HOSTILE.replace("\\", "\\\\").replace('"', '\\"')
    other = HOSTILE2.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f"""
pto.kernel @"k(); import os; os.system('x')"(%x: memref<?x64xf32>, %import: memref<?x64xf32>)
    attributes {{dynamic_dims = {{import = ["{label}"], x = ["{label}"]}}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w = pto.tensor "{other}" : memref<1x64xf32>
  pto.loop %i = %c0 to %c4 step %c1 name "{label}" idx_name "{other}" {{
    pto.set_semantic_label "{label}"
    %t = pto.view %x[%i, 0] : memref<?x64xf32> -> tensor<1x64xf32>
    pto.assemble %t into %import[%i, 0] : tensor<1x64xf32>, memref<?x64xf32>
    pto.assemble %t into %w[0, 0] : tensor<1x64xf32>, memref<1x64xf32>
  }}
}}
"""


def check_no_injection(source: str) -> None:
    tree = ast.parse(source)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [a.name for n in imports for a in n.names] == ["pypto"]
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    assert not called & {"exec", "eval", "system", "__import__", "open"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "system"


def test_hostile_names_stay_inside_literals() -> None:
    module = parse_module(hostile_module())
    kernel = next(iter(module.body.block.ops))
    kernel.jit_options = DictionaryAttr(
        {
            "runtime_options": DictionaryAttr(
                {HOSTILE: StringAttr(HOSTILE2), "n": IntegerAttr(3, i64)}
            )
        }
    )
    source = emit_module(module)
    check_no_injection(source)
    tree = ast.parse(source)
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    # The strings survive intact, as data.
    assert HOSTILE in strings and HOSTILE2 in strings


def test_sanitize_makes_identifiers() -> None:
    for raw in ["import", "a-b", "1x", "", "match", "pypto", "float", "x y", "é"]:
        name = sanitize(raw)
        assert name.isidentifier() and name.isascii()
        assert name not in {"import", "match", "pypto", "float"}
    # Builtins other than `float` may be shadowed (the emitted code calls none), so
    # kernel arguments named `input` or `sum` keep their names through a round trip.
    assert sanitize("input") == "input" and sanitize("sum") == "sum"


def test_jit_option_keys_are_sanitized() -> None:
    module = parse_module("pto.kernel @k(%x: memref<4xf32>) {\n}\n")
    kernel = next(iter(module.body.block.ops))
    kernel.jit_options = DictionaryAttr({"a=1)\nimport os\n(": StringAttr("v")})
    check_no_injection(emit_module(module))
