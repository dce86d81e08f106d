"""Loading, printing and verifying `pto` modules: the entry points of the scripting API."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, memref, scf, tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.printer import Printer

from tileir.diagnostics import parse_located
from tileir.dialect.pto import PTO


def make_context() -> Context:
    """A context that knows `pto` and the upstream dialects `pto` IR uses."""
    ctx = Context()
    for dialect in (
        builtin.Builtin,
        arith.Arith,
        func.Func,
        memref.MemRef,
        scf.Scf,
        tensor.Tensor,
        PTO,
    ):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse `.mlir` text (custom or generic form) and verify it; errors are located
    `TileirError`s."""
    return parse_located(ctx or make_context(), text, name)


def print_module(module: ModuleOp, generic: bool = False) -> str:
    """The module as text; `generic=True` gives the form real MLIR tools accept."""
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"


def _clonable_in_one_pass(op: Operation) -> bool:
    """Whether `clone_op` can copy `op`: no successors and only single-block regions,
    inside too (so every value is defined before its uses, in walk order)."""
    if op.successor_uses:
        return False
    stack = [op]
    while stack:  # (not `op.walk()`: its nested generators cost more than the test)
        for region in stack.pop().regions:
            if len(region.blocks) != 1:
                return False
            for inner in region.block.ops:
                if inner.successor_uses:
                    return False
                if inner.regions:
                    stack.append(inner)
    return True


def _clone_one_pass(op: Operation, mapping: dict[SSAValue, SSAValue]) -> Operation:
    new = type(op).create(
        operands=[mapping.get(v, v) for v in op.operands],
        result_types=[r.type for r in op.results],
        properties=op.properties,
        attributes=op.attributes,
        location=op.location,
        regions=[Region() for _ in op.regions],
    )
    for old, result in zip(op.results, new.results):
        mapping[old] = result
        if old.name_hint is not None:  # (the setter checks the name: skip the default)
            result.name_hint = old.name_hint
    for region, new_region in zip(op.regions, new.regions):
        block = region.block
        new_block = Block()
        for index, arg in enumerate(block.args):
            new_arg = new_block.insert_arg(arg.type, index, arg.location)
            new_arg.name_hint = arg.name_hint
            mapping[arg] = new_arg
        new_block.add_ops([_clone_one_pass(inner, mapping) for inner in block.ops])
        new_region.add_block(new_block)
    return new


def clone_op(op: Operation, mapping: dict[SSAValue, SSAValue]) -> Operation:
    """`op.clone(mapping)` (values from above renamed by `mapping`, which learns the
    copies of `op`'s results and block arguments), each op made once: xDSL's clone
    makes every op and then sets every operand again in a second walk of both trees
    (for uses before definitions, which single-block regions do not have), about half
    the time of a loop-unroll. Ops with successors or multi-block regions go through
    xDSL's clone."""
    if not _clonable_in_one_pass(op):
        return op.clone(mapping)
    return _clone_one_pass(op, mapping)
