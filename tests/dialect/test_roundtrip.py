"""`tests/filecheck/dialect/all_ops.mlir` holds every op of the dialect, and every op's
text is stable: print -> parse -> print gives the same text, in the custom and in the
generic form."""

from __future__ import annotations

from pathlib import Path

from tileir import parse_module, print_module
from tileir.dialect.pto import PTO

ALL_OPS = Path(__file__).parents[1] / "filecheck" / "dialect" / "all_ops.mlir"


def test_every_op_of_the_dialect_is_in_the_example_file() -> None:
    module = parse_module(ALL_OPS.read_text(), str(ALL_OPS))
    seen = {op.name for op in module.walk()}
    missing = sorted(op.name for op in PTO.operations if op.name not in seen)
    assert missing == [], f"add these ops to {ALL_OPS.name}: {missing}"


def test_custom_form_round_trips() -> None:
    once = print_module(parse_module(ALL_OPS.read_text()))
    assert print_module(parse_module(once)) == once


def test_generic_form_round_trips() -> None:
    generic = print_module(parse_module(ALL_OPS.read_text()), generic=True)
    again = print_module(parse_module(generic), generic=True)
    assert again == generic
    # and the generic form means the same module as the custom one
    assert print_module(parse_module(generic)) == print_module(parse_module(ALL_OPS.read_text()))
