"""The malformed-input corpus (issue 18): `.mlir` and PyPTO `.py` files a hostile user
might hand to `tileir-opt` / `tileir-run`, each with the command to run it through.

Every case must end with exit code 1 and a diagnostic naming the file (`file:line:col:
error:` where there is a place), never a traceback, within the runner's time and memory
bounds (see test_malformed_corpus.py). A case is `(name, suffix, content, tool)`:
`content` is text or bytes; `tool` is `opt` (parse and verify), `default` (`-p
default`), `emit` (`-p default -t pypto`) or `run` (`tileir-run --random-inputs`).
"""

from __future__ import annotations

from collections.abc import Iterator

Case = tuple[str, str, str | bytes, str]

# --------------------------------------------------------------------------- .mlir

GOOD = """pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {
  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>
  %e = pto.exp %t : tensor<8x64xf32>
  pto.assemble %e into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32>
}
"""
EXP = "%e = pto.exp %t : tensor<8x64xf32>"
HEAD = "pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {\n"
CONSTS = (
    "  %c0 = arith.constant 0 : index\n"
    "  %c1 = arith.constant 1 : index\n"
    "  %c8 = arith.constant 8 : index\n"
)


def body(*lines: str) -> str:
    """A kernel of GOOD's signature with these body lines."""
    return HEAD + CONSTS + "".join(f"  {line}\n" for line in lines) + "}\n"


def swap(new: str) -> str:
    """GOOD with its `pto.exp` line replaced."""
    return GOOD.replace(EXP, new)


def loop(head: str) -> str:
    return body(f"pto.loop %i = {head} {{", "}")


def nested(depth: int, open_: str, close: str = "}") -> str:
    lines = [CONSTS.rstrip("\n"), "  %b = arith.constant true"]
    lines += ["  " * (d + 1) + open_.format(d=d) for d in range(depth)]
    inner = "  " * (depth + 1)
    lines += [f"{inner}%t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>"]
    lines += [f"{inner}pto.assemble %t into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32>"]
    lines += ["  " * (d + 1) + close for d in reversed(range(depth))]
    return HEAD + "\n".join(lines) + "\n}\n"


DYNAMIC = """pto.kernel @k(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %out: memref<?x64xf32>) attributes {dynamic_dims = {x = ["S"], y = ["T"], out = ["S"]}} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %m = memref.dim %y, %c0 : memref<?x64xf32>
  %t = pto.view %x[0, 0] sizes(%n) : memref<?x64xf32> -> tensor<?x64xf32>
  %u = pto.view %y[0, 0] sizes(%m) : memref<?x64xf32> -> tensor<?x64xf32>
  %s = pto.add %t, %u : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  pto.assemble %s into %out[0, 0] : tensor<?x64xf32>, memref<?x64xf32>
}
"""

MLIR: list[tuple[str, str | bytes, str]] = [
    # ---- text that is not MLIR at all
    ("garbage", "\x00\x01 ??? %%%", "opt"),
    ("only-percent", "%", "opt"),
    ("not-utf8-start", b"\xff\xfe" + GOOD.encode(), "opt"),
    ("not-utf8-comment", GOOD.encode().replace(b"{\n", b"{ // caf\xe9\n", 1), "opt"),
    ("not-utf8-name", GOOD.encode().replace(b"@k", b"@k\xc3"), "opt"),
    ("nul-byte", GOOD.replace("pto.exp", "pto.\x00exp"), "opt"),
    ("python-source", "import pypto\n\ndef k(x):\n    return x\n", "opt"),
    ("json", '{"kernel": "k", "ops": []}\n', "opt"),
    ("unterminated-string", swap('pto.set_semantic_label "abc'), "opt"),
    ("stray-brace", GOOD + "}\n", "opt"),
    ("missing-brace", GOOD[: GOOD.rindex("}")], "opt"),
    ("long-undefined-name", GOOD.replace("pto.exp %t", "pto.exp %" + "t" * 100_000), "opt"),
    ("long-garbage-line", "pto.kernel @k() {\n" + "+" * 200_000 + "\n}\n", "opt"),
    *[(f"truncated-{n}", GOOD[:n], "opt") for n in (5, 12, 20, 40, 61, 80, 100, 130, 160, 200)],
    # ---- syntax of ops, values and types
    ("unknown-op", GOOD.replace("pto.exp", "pto.expo"), "opt"),
    ("unknown-dialect", GOOD.replace("pto.exp", "foo.exp"), "opt"),
    ("unknown-type", GOOD.replace("tensor<8x64xf32>", "tile<8x64xf32>", 1), "opt"),
    ("undefined-value", GOOD.replace("pto.exp %t", "pto.exp %q"), "opt"),
    ("value-defined-twice", GOOD.replace("%e = pto.exp", "%t = pto.exp"), "opt"),
    ("operand-type-mismatch", swap("%e = pto.exp %t : tensor<8x32xf32>"), "opt"),
    ("missing-type", swap("%e = pto.exp %t"), "opt"),
    (
        "generic-wrong-operands",
        swap('%e = "pto.exp"(%t, %t) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>'),
        "opt",
    ),
    ("generic-no-results", swap('"pto.exp"(%t) : (tensor<8x64xf32>) -> ()'), "opt"),
    ("dim-2-pow-70", GOOD.replace("8x64", f"{2**70}x64"), "run"),
    ("negative-dim", GOOD.replace("memref<8x64xf32>, %out", "memref<-8x64xf32>, %out"), "opt"),
    ("bad-element-type", GOOD.replace("f32", "q7"), "opt"),
    ("f64-not-pypto", GOOD.replace("f32", "f64"), "opt"),
    ("integer-too-wide", body("%c = arith.constant 300 : i8"), "opt"),
    # xDSL's verifier raises ValueError here (MLIR accepts index): still a located error
    ("addui-extended-index", body("%s, %o = arith.addui_extended %c1, %c8 : index, i1"), "opt"),
    ("i64-2-pow-70", body(f"%c = arith.constant {2**70} : i64"), "opt"),
    ("float-for-index", body("%c = arith.constant 1.5 : index"), "opt"),
    ("attribute-garbage", GOOD.replace(") {", ") attributes {a = } {", 1), "opt"),
    # ---- the pto verifier
    ("exp-on-memref", swap("%e = pto.exp %x : memref<8x64xf32>"), "opt"),
    ("view-out-of-bounds", GOOD.replace("%x[0, 0]", "%x[4, 0]"), "opt"),
    ("view-negative-offset", GOOD.replace("%x[0, 0]", "%x[-1, 0]"), "opt"),
    ("view-rank-mismatch", GOOD.replace("%x[0, 0]", "%x[0]"), "opt"),
    (
        "view-bigger-than-source",
        GOOD.replace("-> tensor<8x64xf32>\n", "-> tensor<16x64xf32>\n", 1).replace(
            "pto.exp %t : tensor<8x64xf32>", "pto.exp %t : tensor<16x64xf32>"
        ),
        "opt",
    ),
    ("assemble-out-of-bounds", GOOD.replace("%out[0, 0]", "%out[1, 0]"), "run"),
    (
        "assemble-dtype",
        GOOD.replace("%out: memref<8x64xf32>", "%out: memref<8x64xf16>").replace(
            "tensor<8x64xf32>, memref<8x64xf32>", "tensor<8x64xf32>, memref<8x64xf16>"
        ),
        "opt",
    ),
    ("cast-mode", swap('%e = pto.cast %t mode "up" : tensor<8x64xf32> -> tensor<8x64xf32>'), "opt"),
    ("reduce-dim", swap("%e = pto.sum %t, 3 : tensor<8x64xf32> -> tensor<8x64xf32>"), "opt"),
    (
        "reduce-result-shape",
        swap("%e = pto.sum %t, 1 keepdim : tensor<8x64xf32> -> tensor<8x64xf32>"),
        "opt",
    ),
    (
        "matmul-contraction",
        swap("%e = pto.matmul %t, %t : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>"),
        "opt",
    ),
    (
        "broadcast",
        swap(
            "%s = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<4x64xf32>\n  %e = pto.add %t, %s : tensor<8x64xf32>, tensor<4x64xf32> -> tensor<8x64xf32>"
        ),
        "opt",
    ),
    (
        "reshape-count",
        swap("%r = pto.reshape %t : tensor<8x64xf32> -> tensor<8x32xf32>\n  " + EXP),
        "opt",
    ),
    (
        "tile-rank-5",
        swap("%r = pto.reshape %t : tensor<8x64xf32> -> tensor<2x2x2x2x32xf32>\n  " + EXP),
        "opt",
    ),
    (
        "transpose-attr",
        swap('%e = pto.transpose %t, "a", 1 : tensor<8x64xf32> -> tensor<64x8xf32>'),
        "opt",
    ),
    (
        "transpose-dims",
        swap("%e = pto.transpose %t, 0, 7 : tensor<8x64xf32> -> tensor<64x8xf32>"),
        "opt",
    ),
    ("kernel-arg-tensor", GOOD.replace("%x: memref<8x64xf32>", "%x: tensor<8x64xf32>"), "opt"),
    ("duplicate-arg-name", GOOD.replace("%out: memref", "%x: memref"), "opt"),
    ("empty-label", swap('pto.set_semantic_label ""\n  ' + EXP), "opt"),
    ("label-hex-escapes", swap('pto.set_semantic_label "a\\22b\\00c\\ff"\n  ' + EXP), "opt"),
    ("label-not-string", swap("pto.set_semantic_label 3\n  " + EXP), "opt"),
    ("two-kernels-k", GOOD + GOOD, "opt"),
    ("kernel-no-name", GOOD.replace("@k", ""), "opt"),
    ("tile-shapes-rank", swap("pto.set_vec_tile_shapes [8, 64, 2, 2, 2]\n  " + EXP), "opt"),
    # ---- loops and ifs
    ("unroll-ascending", loop("%c0 to %c8 step %c1 unroll [1, 2]"), "opt"),
    ("unroll-2-pow-70", loop(f"%c0 to %c8 step %c1 unroll [{2**70}, 1]"), "opt"),
    ("unroll-negative", loop("%c0 to %c8 step %c1 unroll [-2, 1]"), "opt"),
    (
        "loop-f32-bound",
        body("%f = arith.constant 1.0 : f32", "pto.loop %i = %c0 to %f step %c1 {", "}"),
        "opt",
    ),
    ("loop-no-body", body("pto.loop %i = %c0 to %c8 step %c1"), "opt"),
    ("loop-undefined-bound", loop("%c0 to %n step %c1"), "opt"),
    ("if-on-index", body("scf.if %c1 {", "}"), "opt"),
    (
        "if-yield-mismatch",
        body(
            "%r = scf.if %b -> (index) {",
            "  scf.yield %c0, %c1 : index, index",
            "} else {",
            "  scf.yield %c0 : index",
            "}",
        ),
        "opt",
    ),
    ("nested-65-loops", nested(65, "pto.loop %i{d} = %c0 to %c1 step %c1 {{"), "opt"),
    ("nested-150-loops", nested(150, "pto.loop %i{d} = %c0 to %c1 step %c1 {{"), "default"),
    ("nested-120-ifs", nested(120, "scf.if %b {{"), "emit"),
    ("nested-1000-ifs", nested(1000, "scf.if %b {{"), "run"),
    ("nested-21-loops-emit", nested(21, "pto.loop %i{d} = %c0 to %c8 step %c1 {{"), "emit"),
    # ---- what only a back end finds
    (
        "option-keys-collide",
        GOOD.replace(") {", ') attributes {jit_options = {"a-b" = {}, "a_b" = {}}} {', 1),
        "emit",
    ),
    (
        "run-huge-full",
        swap(
            "%c = arith.constant 1.0 : f32\n  %z = pto.full %c : f32 -> tensor<100000x100000x1000xf32>\n  "
            + EXP
        ),
        "run",
    ),
    (
        "run-huge-input",
        GOOD.replace("%x: memref<8x64xf32>", f"%x: memref<{2**40}x64xf32>").replace(
            "pto.view %x[0, 0] : memref<8x64xf32>", f"pto.view %x[0, 0] : memref<{2**40}x64xf32>"
        ),
        "run",
    ),
    (
        "run-broadcast-at-run-time",
        DYNAMIC.replace(
            "%m = memref.dim %y, %c0 : memref<?x64xf32>",
            "%c2 = arith.constant 2 : index\n  %m = arith.divui %n, %c2 : index",
        ),
        "run",
    ),
    ("run-two-kernels", GOOD + GOOD.replace("@k", "@k2"), "run"),
    ("run-no-kernel", "builtin.module {\n}\n", "run"),
    ("run-dim-not-set", DYNAMIC.replace('out = ["S"]', 'out = ["U"]'), "run"),
]

# --------------------------------------------------------------------------- .py

PY_GOOD = '''"""2 * x + 1 in tiles of 4 rows (with a tail tile)."""

import pypto

B, D, T = 10, 32, 4


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def kern(
    x: pypto.Tensor([B, D], pypto.DT_FP32),
    out: pypto.Tensor([B, D], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(T, D)
    for i in pypto.loop(0, (B + T - 1) // T, 1, name="tiles", idx_name="i", unroll_list=[2, 1]):
        rows = pypto.min(B - i * T, T)
        t = pypto.view(x, [T, D], [i * T, 0], valid_shape=[rows, D])
        y = pypto.add(pypto.mul(t, 2.0), 1.0)
        pypto.assemble(y, [i * T, 0], out)
'''
Y = "y = pypto.add(pypto.mul(t, 2.0), 1.0)"
LOOP = (
    'for i in pypto.loop(0, (B + T - 1) // T, 1, name="tiles", idx_name="i", unroll_list=[2, 1]):'
)


def py_swap(old: str, new: str) -> str:
    assert old in PY_GOOD, old
    return PY_GOOD.replace(old, new)


def py_y(new: str) -> str:
    return py_swap(Y, new)


def py_nested(depth: int, stmt: str) -> str:
    head = PY_GOOD[: PY_GOOD.index("    pypto.set_vec_tile_shapes")]
    lines = ["    " * (d + 1) + stmt.format(d=d) for d in range(depth)]
    inner = "    " * (depth + 1)
    return (
        head
        + "\n".join(lines)
        + f"\n{inner}pypto.assemble(pypto.view(x, [T, D], [0, 0]), [0, 0], out)\n"
    )


PY: list[tuple[str, str | bytes, str]] = [
    # ---- not Python, or Python the parser refuses
    ("py-not-utf8", PY_GOOD.encode().replace(b"2 * x", b"2 \xff x"), "opt"),
    ("py-not-utf8-code", PY_GOOD.encode().replace(b"rows = ", b"rows\xe9 = "), "opt"),
    ("py-nul-byte", PY_GOOD.replace("rows =", "rows\x00 ="), "opt"),
    ("py-syntax", py_y("y = pypto.add(pypto.mul(t, 2.0), 1.0"), "opt"),
    ("py-indent", py_y("  y = pypto.add(t, 1.0)"), "opt"),
    ("py-tabs", py_y("\ty = pypto.add(t, 1.0)"), "opt"),
    ("py-mlir-text", GOOD, "opt"),
    ("py-garbage", "\x01\x02 ??? def (", "opt"),
    *[
        (f"py-truncated-{n}", PY_GOOD[: PY_GOOD.index(at) + k], "opt")
        for n, (at, k) in enumerate(
            [
                ("def kern(", 6),
                ("pypto.loop(", 8),
                ("valid_shape=[rows", 14),
                ("pypto.assemble(y", 16),
            ]
        )
    ],
    ("py-plus-100000", py_y("y = pypto.add(t, 1.0" + " + 1.0" * 100_000 + ")"), "opt"),
    ("py-plus-3000", py_y("y = t" + " + t" * 3000), "opt"),
    ("py-plus-400", py_y("y = t" + " + t" * 400), "opt"),
    ("py-parens-300", py_y("y = " + "(" * 300 + "t" + ")" * 300), "opt"),
    ("py-nested-70-loops", py_nested(70, "for i{d} in pypto.loop(1):"), "opt"),
    ("py-nested-70-ifs", py_nested(70, "if True:"), "opt"),
    ("py-nested-21-loops-emit", py_nested(21, "for i{d} in pypto.loop(1):"), "emit"),
    # ---- what the frontend refuses
    ("py-no-kernel", PY_GOOD.replace("@pypto.frontend.jit", "@staticmethod"), "run"),
    ("py-unknown-function", py_y("y = pypto.frobnicate(t)"), "opt"),
    ("py-unknown-name", py_y("y = pypto.add(t, zz)"), "opt"),
    ("py-wrong-arity", py_y("y = pypto.add(t)"), "opt"),
    ("py-bad-keyword", py_y("y = pypto.add(t, 1.0, frob=2)"), "opt"),
    ("py-string-operand", py_y('y = pypto.add(t, "one")'), "opt"),
    ("py-shape-mismatch", py_y("y = pypto.add(t, pypto.view(x, [2, D], [0, 0]))"), "opt"),
    (
        "py-view-out-of-bounds",
        py_swap("[i * T, 0], valid_shape", "[i * T + 100, 0], valid_shape"),
        "run",
    ),
    ("py-view-static-oob", py_y("y = pypto.view(x, [T, D], [20, 0])"), "opt"),
    ("py-assemble-dtype", py_y("y = pypto.cast(t, pypto.DT_FP16)"), "opt"),
    (
        "py-bad-dtype",
        py_swap(
            "pypto.Tensor([B, D], pypto.DT_FP32),\n    out",
            "pypto.Tensor([B, D], pypto.DT_FP99),\n    out",
        ),
        "opt",
    ),
    ("py-negative-dim", py_swap("B, D, T = 10, 32, 4", "B, D, T = -10, 32, 4"), "opt"),
    ("py-dim-2-pow-70", py_swap("B, D, T = 10, 32, 4", f"B, D, T = {2**70}, 32, 4"), "run"),
    ("py-float-dim", py_swap("B, D, T = 10, 32, 4", "B, D, T = 10.5, 32, 4"), "opt"),
    ("py-unroll-zero", py_swap("unroll_list=[2, 1]", "unroll_list=[0]"), "opt"),
    ("py-unroll-2-pow-70", py_swap("unroll_list=[2, 1]", f"unroll_list=[{2**70}, 1]"), "opt"),
    ("py-unroll-string", py_swap("unroll_list=[2, 1]", 'unroll_list="2"'), "opt"),
    (
        "py-loop-float",
        py_swap("pypto.loop(0, (B + T - 1) // T, 1,", "pypto.loop(0, 2.5, 1,"),
        "opt",
    ),
    ("py-cast-mode", py_y("y = pypto.cast(t, pypto.DT_FP32, pypto.CastMode.CAST_BOGUS)"), "opt"),
    ("py-reduce-dim", py_y("y = pypto.sum(t, dim=5)"), "opt"),
    ("py-matmul", py_y("y = pypto.matmul(t, t, pypto.DT_FP32)"), "opt"),
    (
        "py-tile-shapes",
        py_swap("pypto.set_vec_tile_shapes(T, D)", "pypto.set_vec_tile_shapes(T, D, 1, 1, 1)"),
        "opt",
    ),
    ("py-label-empty", py_y('pypto.set_semantic_label("")\n        ' + Y), "opt"),
    ("py-label-number", py_y("pypto.set_semantic_label(3)\n        " + Y), "opt"),
    ("py-while", py_swap(LOOP, "while True:"), "opt"),
    (
        "py-try",
        py_y("try:\n            y = t\n        except Exception:\n            y = t"),
        "opt",
    ),
    ("py-lambda-wrong-arity", py_y("y = (lambda a, b: a)(t)"), "opt"),
    (
        "py-recursive-helper",
        py_swap(
            "@pypto.frontend.jit", "def f(a):\n    return f(a)\n\n\n@pypto.frontend.jit"
        ).replace(Y, "y = f(t)"),
        "opt",
    ),
    (
        "py-range-float",
        py_y("y = t\n        for _ in range(2.5):\n            y = pypto.add(y, 1.0)"),
        "opt",
    ),
    ("py-import-inside", py_y("import os\n        y = t"), "opt"),
    ("py-arg-not-tensor", py_swap("x: pypto.Tensor([B, D], pypto.DT_FP32),", "x: int,"), "opt"),
    ("py-index-tensor", py_y("y = t[0]"), "opt"),
    ("py-assemble-into-tile", py_y("pypto.assemble(t, [0, 0], t)\n        " + Y), "opt"),
    ("py-run-huge-tensor", py_swap("B, D, T = 10, 32, 4", f"B, D, T = {2**40}, 32, 4"), "run"),
]


def cases() -> Iterator[Case]:
    for name, content, tool in MLIR:
        yield name, ".mlir", content, tool
    for name, content, tool in PY:
        yield name, ".py", content, tool
