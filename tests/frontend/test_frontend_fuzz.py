"""Mutated kernels never crash the frontend: each either loads and verifies or gives one
located `TileirError` (`file:line:col: error: ...`), never another exception."""

from __future__ import annotations

import ast
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
LOCATED = re.compile(r"^fuzz\.py(:\d+:\d+)?: error: .+")


def _mutate(tree: ast.Module, data: st.DataObject) -> ast.Module:
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr | ast.stmt)]
    target = data.draw(st.sampled_from(nodes), label="node")
    kind = data.draw(st.sampled_from(["replace", "drop-arg", "drop-stmt", "swap-args"]))
    if kind == "replace" and isinstance(target, ast.expr):
        new = ast.parse(repr(data.draw(st.sampled_from(REPLACEMENTS))), mode="eval").body
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is target:
                    setattr(parent, field, ast.copy_location(new, target))
                elif isinstance(value, list) and target in value:
                    value[value.index(target)] = ast.copy_location(new, target)
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
