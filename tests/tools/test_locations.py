"""Op locations from `LocatedParser` (issue 18, item 5 made it use a table of line
starts instead of counting newlines per op): every op's `line:col` is where its text
starts, checked against the layout the test wrote (blank lines, comments with multi-byte
characters, indentation, several ops on one line). Speed is measured in
benchmarks/parse.py, not here."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import FileLineColLoc

from tileir.ir import parse_module

OPS = [
    "%c0 = arith.constant 0 : index",
    "%t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>",
    "%e = pto.exp %t : tensor<8x64xf32>",
    "%n = pto.neg %e : tensor<8x64xf32>",
    "pto.assemble %n into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32>",
]

filler = st.lists(
    st.sampled_from(["", "   ", "// a comment", "// caf\u00e9 \u2603 \U0001f600", "\t"]), max_size=3
)


@settings(max_examples=max(10, settings.default.max_examples // 4))
@given(
    gaps=st.lists(filler, min_size=len(OPS) + 1, max_size=len(OPS) + 1),
    indents=st.lists(st.integers(0, 12), min_size=len(OPS), max_size=len(OPS)),
    prefix=st.sampled_from(["", "// \u00e9\u00e9\n", "\n\n\n"]),
)
def test_every_op_is_located_where_its_text_starts(
    gaps: list[list[str]], indents: list[int], prefix: str
) -> None:
    lines = (prefix + "pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {").split("\n")
    expected = {"pto.kernel": (len(lines), 1)}
    for gap, indent, op in zip(gaps, indents, OPS, strict=False):
        lines += gap
        lines.append(" " * indent + op)
        expected[op.split(" = ")[-1].split(" ")[0]] = (len(lines), indent + 1)
    lines += gaps[-1] + ["}"]
    module = parse_module("\n".join(lines) + "\n", "f.mlir")
    found = {}
    for op in module.walk():
        if op.name not in expected:  # the module, the kernel's implicit terminator
            continue
        loc = op.location
        assert isinstance(loc, FileLineColLoc) and loc.filename.data == "f.mlir"
        found[op.name] = (loc.line.data, loc.column.data)
    assert found == expected


def test_ops_sharing_a_line_have_their_own_columns() -> None:
    text = (
        "pto.kernel @k(%x: memref<8x64xf32>, %out: memref<8x64xf32>) {\n"
        "  %t = pto.view %x[0, 0] : memref<8x64xf32> -> tensor<8x64xf32>   "
        "%e = pto.exp %t : tensor<8x64xf32>\n"
        "pto.assemble %e into %out[0, 0] : tensor<8x64xf32>, memref<8x64xf32> }\n"
    )
    module = parse_module(text, "g.mlir")
    where = {
        op.name: (op.location.line.data, op.location.column.data)
        for op in module.walk()
        if isinstance(op.location, FileLineColLoc)
    }
    line2 = text.split("\n")[1]
    assert where["pto.view"] == (2, 3)
    assert where["pto.exp"] == (2, line2.index("%e = ") + 1)
    assert where["pto.assemble"] == (3, 1)
