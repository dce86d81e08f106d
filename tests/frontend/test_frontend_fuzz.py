"""Mutated kernels never crash the frontend: each either loads and verifies or gives one
located `TileirError` (`file:line:col: error: ...`), never another exception."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from frontends.pypto import load_source
from tileir.diagnostics import TileirError

DATA = Path(__file__).parent / "data"
KERNEL_ROOT = Path(__file__).resolve().parents[2] / "frontends" / "kernels"
FILES = sorted(DATA.glob("*.py")) + sorted(
    p for p in KERNEL_ROOT.glob("*.py") if p.name not in ("__init__.py", "goldens.py")
)
# Read once: the kernel files may change while a test session runs, and hypothesis
# needs the same input for the same choices.
SOURCES = {p.name: p.read_text() for p in FILES}
REPLACEMENTS = [0, 1, -1, 3, 7, 0.5, "x", None, True, [1, 2], [0], (), {"k": 1}]
WRAPPERS = [
    "pypto.exp(HOLE)",
    "pypto.sum(HOLE, 0)",
    "pypto.amax(HOLE, -1, keepdim=True)",
    "pypto.view(HOLE, [1, 1], [0, 0])",
    "pypto.reshape(HOLE, [-1])",
    "pypto.cast(HOLE, pypto.DT_INT8)",
    "pypto.matmul(HOLE, HOLE, pypto.DT_FP32)",
    "pypto.transpose(HOLE, 0, 5)",
    "pypto.concat([HOLE, HOLE], 9)",
    "pypto.full(HOLE, 1.0, pypto.DT_FP32)",
    "pypto.topk(HOLE, 100)",
    "pypto.gather(HOLE, 0, HOLE)",
    "pypto.where(HOLE, HOLE, 0.0)",
    "HOLE[0]",
    "HOLE[1:, ::1]",
    "HOLE.shape",
    "-HOLE",
    "HOLE // 0",
    "HOLE * HOLE",
    "[HOLE] * 3",
    "pypto.min(HOLE, 3)",
    "pypto.is_loop_begin(HOLE)",
]
LOCATED = re.compile(r"^fuzz\.py(:\d+:\d+)?: error: .+")


def _replace(tree: ast.AST, old: ast.expr, new: ast.expr) -> None:
    ast.copy_location(new, old)
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
            elif isinstance(value, list) and any(v is old for v in value):
                value[[id(v) for v in value].index(id(old))] = new


def _mutate(tree: ast.Module, data: st.DataObject) -> ast.Module:
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr | ast.stmt)]
    target = data.draw(st.sampled_from(nodes), label="node")
    kind = data.draw(
        st.sampled_from(["replace", "drop-arg", "drop-stmt", "swap-args", "rename", "wrap"])
    )
    if kind == "rename" and isinstance(target, ast.Name):
        names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
        target.id = data.draw(st.sampled_from(names), label="name")
    elif kind == "wrap" and isinstance(target, ast.expr):
        wrapper = data.draw(st.sampled_from(WRAPPERS), label="wrapper")
        hole = target

        class Fill(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                return copy.deepcopy(hole) if n.id == "HOLE" else n

        _replace(tree, target, Fill().visit(ast.parse(wrapper, mode="eval").body))
    if kind == "replace" and isinstance(target, ast.expr):
        new = ast.parse(repr(data.draw(st.sampled_from(REPLACEMENTS))), mode="eval").body
        _replace(tree, target, new)
    elif kind in ("drop-arg", "swap-args") and isinstance(target, ast.Call) and target.args:
        if kind == "drop-arg":
            target.args.pop(data.draw(st.integers(0, len(target.args) - 1)))
        else:
            target.args.reverse()
    elif kind == "drop-stmt":
        for parent in ast.walk(tree):
            body = getattr(parent, "body", None)
            if isinstance(body, list) and target in body and len(body) > 1:
                body.remove(target)
    return ast.fix_missing_locations(tree)


@given(st.data())
def test_mutated_kernels_load_or_fail_located(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SOURCES)), label="file")
    tree = _mutate(ast.parse(SOURCES[name]), data)
    source = ast.unparse(tree)
    try:
        load_source(source, "fuzz.py")
    except TileirError as e:
        first = str(e).splitlines()[0]
        assert LOCATED.match(first), first
        assert "internal error" not in first, first
