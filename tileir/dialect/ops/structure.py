"""Structure ops: `pto.kernel`, its `pto.yield` terminator and the loops (`pto.loop`,
`pto.loop_unroll`). tileir's own `pto.stage` / `pto.transfer` / `pto.stitch` (made by
the vc-split and stitch passes; pypto-legalize removes them) are in
`tileir.dialect.ops.stages`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    MemRefType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from tileir.diagnostics import MAX_NESTING
from tileir.dialect.ops.base import (
    _check_element_type,
    _i64_array,
    _shape,
    constant_index,
    normalize_unroll_list,
    verify_dims,
)
from tileir.verify import ops_in


def nesting_error(root: Operation) -> tuple[Operation, int] | None:
    """The first op nested deeper than MAX_NESTING regions inside `root` (with its
    depth), found without recursion, or None. (It follows the fields behind xDSL's
    `first_op` / `next_op` properties: it runs on every op of a module.)"""
    stack: list[tuple[Operation, int]] = [(root, 0)]
    while stack:
        op, depth = stack.pop()
        if depth > MAX_NESTING:
            return op, depth
        for region in op.regions:
            block = region._first_block  # pyright: ignore[reportPrivateUsage]
            while block is not None:
                child = block._first_op  # pyright: ignore[reportPrivateUsage]
                while child is not None:
                    if child.regions:
                        stack.append((child, depth + 1))
                    child = child._next_op  # pyright: ignore[reportPrivateUsage]
                block = block._next_block  # pyright: ignore[reportPrivateUsage]
    return None


# --------------------------------------------------------------------------- kernel


class _IsolatedFromAbove(IsolatedFromAbove):
    """xDSL's `IsolatedFromAbove`, checked the same way (regions in the same order, the
    same first error) but faster on a large kernel: xDSL walks up the parents from
    every operand's owner. Here the values defined inside (the block arguments and the
    results met so far) are kept in a set (by `id`, as `SSAValue.__hash__` does, without
    calling Python code; the IR holds the values); an operand in it is inside, and any
    other operand is checked as xDSL checks it."""

    def verify(self, op: Operation) -> None:
        if _defined_inside(op):
            return
        inside: set[int] = set()
        isolated: dict[type[Operation], bool] = {}
        regions: list[Region] = list(op.regions)
        # (The fields behind xDSL's `first_op` / `next_op` ... properties: this visits
        # every op of the kernel.)
        while regions:
            block = regions.pop()._first_block  # pyright: ignore[reportPrivateUsage]
            while block is not None:
                inside.update(map(id, block._args))  # pyright: ignore[reportPrivateUsage]
                child_op = block._first_op  # pyright: ignore[reportPrivateUsage]
                while child_op is not None:
                    operands = child_op._operands  # pyright: ignore[reportPrivateUsage]
                    if not inside.issuperset(map(id, operands)):
                        for operand in operands:
                            if id(operand) in inside:
                                continue
                            if not op.is_ancestor(operand.owner) or operand.owner is op:
                                raise VerifyException(
                                    "Operation using value defined out of its "
                                    f"IsolatedFromAbove parent: {child_op}"
                                )
                    inside.update(map(id, child_op.results))
                    if child_op.regions:
                        cls = type(child_op)
                        nested = isolated.get(cls)
                        if nested is None:
                            nested = isolated[cls] = cls.has_trait(IsolatedFromAbove)
                        if not nested:
                            regions += child_op.regions
                    child_op = child_op._next_op  # pyright: ignore[reportPrivateUsage]
                block = block._next_block  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True)
class _SingleBlockImplicitTerminator(SingleBlockImplicitTerminator):
    """xDSL's `SingleBlockImplicitTerminator`, checked the same way (the same checks in
    the same order, the same messages) through the fields behind xDSL's `blocks` /
    `last_op` properties: it runs for every stage, loop and kernel."""

    def verify(self, op: Operation) -> None:
        for region in op.regions:
            block = region._first_block  # pyright: ignore[reportPrivateUsage]
            if block is None:
                continue
            if block._next_block is not None:  # pyright: ignore[reportPrivateUsage]
                raise VerifyException(f"'{op.name}' does not contain single-block regions")
            last_op = block._last_op  # pyright: ignore[reportPrivateUsage]
            if last_op is None:
                raise VerifyException(
                    f"'{op.name}' contains empty block instead of at least "
                    f"terminating with {self.op_type.name}"
                )
            if not isinstance(last_op, self.op_type):
                raise VerifyException(
                    f"'{op.name}' terminates with operation {last_op.name} "
                    f"instead of {self.op_type.name}"
                )


_RESULTS = attrgetter("results")
_OPERANDS = attrgetter("_operands")  # the field behind `Operation.operands`
_REGIONS = attrgetter("regions")


def _defined_inside(op: Operation) -> bool:
    """Whether every operand of every op inside `op`, at any depth, is a result of an
    op inside `op` or an argument of a block inside `op` (then `op` passes the
    `IsolatedFromAbove` check, which looks at fewer operands). The sets are built
    with C loops (`map`, `chain`), without a Python step per operand."""
    ops: list[Operation] = []
    for region in op.regions:
        ops_in(region, ops)
    inside = set(map(id, chain.from_iterable(map(_RESULTS, ops))))
    for holder in chain((op,), filter(_REGIONS, ops)):
        for region in holder.regions:
            block = region._first_block  # pyright: ignore[reportPrivateUsage]
            while block is not None:
                inside.update(map(id, block._args))  # pyright: ignore[reportPrivateUsage]
                block = block._next_block  # pyright: ignore[reportPrivateUsage]
    return inside.issuperset(map(id, chain.from_iterable(map(_OPERANDS, ops))))


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `pto` regions; yields the results of a `pto.stage`."""

    name = "pto.yield"
    arguments = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "attr-dict ($arguments^ `:` type($arguments))?"

    def __init__(self, *args: SSAValue | Operation):
        super().__init__(operands=[list(args)])


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A `@pypto.frontend.jit` kernel.

    Arguments are the kernel's tensors (memrefs); their names are kept in `arg_names`
    (the SSA names in the custom syntax). A `?` dim is a `pypto.frontend.dynamic`
    symbol, named in `dynamic_dims` (`{x = ["S"]}`); the same name in two arguments
    is one size. `jit_options` keeps the decorator's option dicts.

    ```mlir
    pto.kernel @k(%x: memref<?x64xf32>, %out: memref<?x64xf32>)
        attributes {dynamic_dims = {x = ["S"], out = ["S"]}} {
      ...
    }
    ```
    """

    name = "pto.kernel"
    sym_name = prop_def(StringAttr, prop_name="sym_name")
    function_type = prop_def(FunctionType)
    arg_names = prop_def(ArrayAttr[StringAttr])
    dynamic_dims = opt_prop_def(DictionaryAttr)
    jit_options = opt_prop_def(DictionaryAttr)
    body = region_def("single_block")
    traits = traits_def(
        SymbolOpInterface(),
        _IsolatedFromAbove(),
        _SingleBlockImplicitTerminator(YieldOp),
    )

    def __init__(
        self,
        name: str,
        args: Sequence[tuple[str, MemRefType]],
        body: Region | None = None,
        *,
        dynamic_dims: dict[str, Sequence[str]] | None = None,
        jit_options: DictionaryAttr | None = None,
    ):
        types = [t for _, t in args]
        if body is None:
            body = Region(Block(arg_types=types))
        for arg, (arg_name, _) in zip(body.block.args, args):
            arg.name_hint = arg_name
        props: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(types, []),
            "arg_names": ArrayAttr([StringAttr(n) for n, _ in args]),
            "jit_options": jit_options,
        }
        if dynamic_dims:
            # Sorted keys: MLIR prints dictionaries sorted, so this keeps the text
            # identical through a round trip via mlir-opt.
            props["dynamic_dims"] = DictionaryAttr(
                {
                    k: ArrayAttr([StringAttr(s) for s in dynamic_dims[k]])
                    for k in sorted(dynamic_dims)
                }
            )
        super().__init__(properties=props, regions=[body])

    @property
    def names(self) -> list[str]:
        return [a.data for a in self.arg_names]

    def dynamic_names(self, arg: str) -> list[str]:
        if self.dynamic_dims is None or arg not in self.dynamic_dims.data:
            return []
        value = self.dynamic_dims.data[arg]
        assert isinstance(value, ArrayAttr)
        return [s.data for s in value.data if isinstance(s, StringAttr)]

    def verify_(self) -> None:
        deep = nesting_error(self)
        if deep is not None:
            from tileir.diagnostics import location_of

            where = location_of(deep[0])
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: a '{deep[0].name}'"
                f"{f' at {where}' if where else ''} is nested {deep[1]} regions deep; tileir handles at most {MAX_NESTING} (a PyPTO "
                "kernel is a Python function, which allows at most 100 nested blocks)"
            )
        args = self.body.block.args
        inputs = self.function_type.inputs.data
        if len(inputs) != len(args) or any(a.type != t for a, t in zip(args, inputs)):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: block arguments do not match the "
                "function type"
            )
        if len(self.arg_names.data) != len(args):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: {len(self.arg_names.data)} "
                f"arg_names for {len(args)} arguments"
            )
        names = self.names
        for n in names:
            if not n.isidentifier():
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument name {n!r} is not a "
                    "Python identifier"
                )
        if len(set(names)) != len(names):
            raise VerifyException(
                f"'pto.kernel' @{self.sym_name.data}: argument names {names} repeat"
            )
        for name, arg in zip(names, args):
            if not isinstance(arg.type, MemRefType):
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument {name!r} has type "
                    f"{arg.type}; kernel arguments are memrefs (global tensors)"
                )
            _check_element_type(self, arg.type, f"argument {name!r}")
            verify_dims(self, _shape(arg.type), f"argument {name!r}")
            n_dyn = list(arg.type.get_shape()).count(DYNAMIC_INDEX)
            if len(self.dynamic_names(name)) != n_dyn:
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: argument {name!r} has {n_dyn} "
                    f"dynamic dims but {len(self.dynamic_names(name))} names in "
                    "dynamic_dims"
                )
        if self.dynamic_dims is not None:
            unknown = set(self.dynamic_dims.data) - set(names)
            if unknown:
                raise VerifyException(
                    f"'pto.kernel' @{self.sym_name.data}: dynamic_dims names unknown "
                    f"arguments {sorted(unknown)}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        for i, (arg, name) in enumerate(zip(self.body.block.args, self.names)):
            if i:
                printer.print_string(", ")
            arg.name_hint = name
            printer.print_block_argument(arg)
        printer.print_string(")")
        extra: dict[str, Attribute] = {}
        if self.dynamic_dims is not None:
            extra["dynamic_dims"] = self.dynamic_dims
        if self.jit_options is not None:
            extra["jit_options"] = self.jit_options
        extra.update(self.attributes)
        printer.print_op_attributes(extra, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
        )
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region(args)
        arg_names = [a.name.text[1:] for a in args]
        props = attrs.data if attrs is not None else {}
        dyn = props.get("dynamic_dims")
        opts = props.get("jit_options")
        types = [a.type for a in args]
        assert all(t is not None for t in types)
        op = cls(
            name,
            [(n, t) for n, t in zip(arg_names, types)],  # type: ignore[misc]
            region,
            jit_options=opts if isinstance(opts, DictionaryAttr) else None,
        )
        if isinstance(dyn, DictionaryAttr):
            op.dynamic_dims = DictionaryAttr({k: dyn.data[k] for k in sorted(dyn.data)})
        for k, v in props.items():
            if k not in ("dynamic_dims", "jit_options"):
                op.attributes[k] = v
        if not region.blocks[0].ops or not isinstance(region.blocks[0].last_op, YieldOp):
            region.blocks[0].add_op(YieldOp())
        return op


def is_kernel_argument(value: SSAValue) -> bool:
    """True for an argument of a `pto.kernel` (a global tensor)."""
    return isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), KernelOp)


# --------------------------------------------------------------------------- loops


def _verify_unroll_list(op: Operation, factors: Sequence[int] | None) -> None:
    if factors is None:
        return
    if not factors:
        raise VerifyException(f"'{op.name}' unroll_list is empty; drop it or give factors")
    if any(f <= 0 for f in factors):
        raise VerifyException(f"'{op.name}' unroll_list {list(factors)} has a factor <= 0")
    if any(a <= b for a, b in zip(factors, factors[1:])) or factors[-1] != 1:
        raise VerifyException(
            f"'{op.name}' unroll_list {list(factors)} must be strictly descending and end "
            f"in 1 (PyPTO normalises it to {normalize_unroll_list(sorted(set(factors)))})"
        )


class _LoopBase(IRDLOperation):
    lower_bound = operand_def(IndexType)
    upper_bound = operand_def(IndexType)
    step = operand_def(IndexType)
    loop_name = opt_prop_def(StringAttr, prop_name="name")
    idx_name = opt_prop_def(StringAttr)
    unroll_list = opt_prop_def(DenseArrayBase.constr(i64))
    parallel = opt_prop_def(UnitAttr)
    """`parallel=True`: the iterations do not depend on each other, so PyPTO may run
    them in parallel (with the runtime option `device_sched_parallelism`); a scheduling
    hint, no change to what the loop computes."""
    body = region_def("single_block")
    traits = traits_def(_SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())

    N_BLOCK_ARGS: ClassVar[int] = 1

    @property
    def induction_var(self) -> BlockArgument:
        return self.body.block.args[0]

    @property
    def factors(self) -> list[int]:
        return list(self.unroll_list.get_values()) if self.unroll_list is not None else []

    def verify_(self) -> None:
        args = self.body.block.args
        if len(args) != self.N_BLOCK_ARGS or any(not isinstance(a.type, IndexType) for a in args):
            raise VerifyException(
                f"'{self.name}' body must have {self.N_BLOCK_ARGS} index block argument(s)"
            )
        _verify_unroll_list(self, self.factors if self.unroll_list is not None else None)
        step = constant_index(self.step)
        if step is not None and step <= 0:
            raise VerifyException(f"'{self.name}' step {step} must be positive")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(" = ")
        printer.print_ssa_value(self.lower_bound)
        printer.print_string(" to ")
        printer.print_ssa_value(self.upper_bound)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        if self.loop_name is not None:
            printer.print_string(" name ")
            printer.print_attribute(self.loop_name)
        if self.idx_name is not None:
            printer.print_string(" idx_name ")
            printer.print_attribute(self.idx_name)
        if self.unroll_list is not None:
            printer.print_string(" unroll [")
            printer.print_list(self.factors, lambda f: printer.print_string(str(f)))
            printer.print_string("]")
        if self.parallel is not None:
            printer.print_string(" parallel")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser):
        args = [parser.parse_argument(expect_type=False) for _ in range(1)]
        while len(args) < cls.N_BLOCK_ARGS:
            parser.parse_punctuation(",")
            args.append(parser.parse_argument(expect_type=False))
        parser.parse_punctuation("=")
        index = IndexType()
        lb = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        parser.parse_keyword("to")
        ub = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        parser.parse_keyword("step")
        step = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        name = idx_name = None
        factors: list[int] | None = None
        if parser.parse_optional_keyword("name") is not None:
            name = parser.parse_str_literal()
        if parser.parse_optional_keyword("idx_name") is not None:
            idx_name = parser.parse_str_literal()
        if parser.parse_optional_keyword("unroll") is not None:
            pos = parser.pos
            factors = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
            if not factors:
                parser.raise_error(
                    f"'{cls.name}' unroll list is empty; give factors (`unroll [4, 1]`) "
                    "or drop `unroll`",
                    pos,
                    parser.pos,
                )
        parallel = parser.parse_optional_keyword("parallel") is not None
        attrs = parser.parse_optional_attr_dict_with_keyword()
        typed = [a.resolve(index) for a in args]
        body = parser.parse_region(typed)
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        op = cls(
            lb, ub, step, body, name=name, idx_name=idx_name, unroll_list=factors, parallel=parallel
        )
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def __init__(
        self,
        lower_bound: SSAValue | Operation,
        upper_bound: SSAValue | Operation,
        step: SSAValue | Operation,
        body: Region | Block | None = None,
        *,
        name: str | None = None,
        idx_name: str | None = None,
        unroll_list: Sequence[int] | None = None,
        parallel: bool = False,
    ):
        if body is None:
            body = Block(arg_types=[IndexType()] * self.N_BLOCK_ARGS)
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(
            operands=[lower_bound, upper_bound, step],
            properties=self.header_properties(name, idx_name, unroll_list, parallel),
            regions=[body],
        )

    @staticmethod
    def header_properties(
        name: str | None = None,
        idx_name: str | None = None,
        unroll_list: Sequence[int] | None = None,
        parallel: bool = False,
    ) -> dict[str, Attribute]:
        """The properties a loop with this header holds, in their order (also what
        `loop-unroll` gives the chunk loops it makes without `__init__`)."""
        properties: dict[str, Attribute] = {}
        if name is not None:
            properties["name"] = StringAttr(name)
        if idx_name is not None:
            properties["idx_name"] = StringAttr(idx_name)
        if unroll_list:
            properties["unroll_list"] = _i64_array(unroll_list)
        if parallel:
            properties["parallel"] = UnitAttr()
        return properties


@irdl_op_definition
class LoopOp(_LoopBase):
    """`for i in pypto.loop(start, stop, step, name=, idx_name=, unroll_list=, parallel=)`.

    `unroll_list` (normalised: strictly descending, ending in 1) asks PyPTO to compile
    one graph per factor; the `loop-unroll` pass makes that form explicit.
    """

    name = "pto.loop"


@irdl_op_definition
class LoopUnrollOp(_LoopBase):
    """`for i, n in pypto.loop_unroll(start, stop, step, unroll_list=...)`: the body sees
    the chunk start `i` and the chunk length `n` (a factor of the list), and covers
    iterations `i, i+step, ..., i+(n-1)*step` itself."""

    name = "pto.loop_unroll"
    N_BLOCK_ARGS: ClassVar[int] = 2

    @property
    def chunk_length(self) -> BlockArgument:
        return self.body.block.args[1]

    def verify_(self) -> None:
        super().verify_()
        if not self.factors:
            raise VerifyException("'pto.loop_unroll' needs an unroll_list")
