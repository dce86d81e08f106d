"""Control ops that compute no tile: the loop-state tests `pto.is_loop_begin` /
`pto.is_loop_end`, and the settings for the ops that follow (`set_vec_tile_shapes`,
`set_cube_tile_shapes`, `set_semantic_label`, `set_options`).
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tileir.dialect.ops.base import _i64_array, verify_tile_shape
from tileir.dialect.ops.structure import _LoopBase
from tileir.verify import signature_only


class _LoopStateOp(IRDLOperation):
    index = operand_def(IndexType)
    result = result_def(i1)
    traits = traits_def(Pure())
    assembly_format = "$index attr-dict"

    def __init__(self, index: SSAValue | Operation):
        super().__init__(operands=[index], result_types=[i1])

    def loop(self) -> _LoopBase:
        owner = self.index.owner
        assert isinstance(owner, Block)
        parent = owner.parent_op()
        assert isinstance(parent, _LoopBase)
        return parent

    def verify_(self) -> None:
        if not (
            isinstance(self.index, BlockArgument)
            and isinstance(self.index.block.parent_op(), _LoopBase)
            and self.index.index == 0
        ):
            raise VerifyException(
                f"'{self.name}' operand must be the index of an enclosing pto.loop or "
                "pto.loop_unroll"
            )


@irdl_op_definition
class IsLoopBeginOp(_LoopStateOp):
    """`pypto.is_loop_begin(i)`: true in the first iteration of i's loop."""

    name = "pto.is_loop_begin"


@irdl_op_definition
class IsLoopEndOp(_LoopStateOp):
    """`pypto.is_loop_end(i)`: true in the last iteration of i's loop."""

    name = "pto.is_loop_end"


# --------------------------------------------------------------------------- settings


def _verify_pair(op: Operation, what: str, values: Sequence[int]) -> None:
    if len(values) != 2 or any(v <= 0 for v in values):
        raise VerifyException(
            f"'{op.name}' {what} must be an [L0, L1] pair of positive sizes, got {list(values)}"
        )


@irdl_op_definition
class SetVecTileShapesOp(IRDLOperation):
    """`pypto.set_vec_tile_shapes(*shape)`: the vector tile shape of the ops that
    follow, until the next setting."""

    name = "pto.set_vec_tile_shapes"
    shape = prop_def(DenseArrayBase.constr(i64))
    assembly_format = "$shape attr-dict"

    def __init__(self, shape: Sequence[int]):
        super().__init__(properties={"shape": _i64_array(shape)})

    @signature_only
    def verify_(self) -> None:
        verify_tile_shape(self, self.shape.get_values(), "vector tile shape")


@irdl_op_definition
class SetCubeTileShapesOp(IRDLOperation):
    """`pypto.set_cube_tile_shapes(m, k, n, enable_split_k)`, each an [L0, L1] pair; k
    may be [L0, L1a, L1b], A's and B's L1 sizes apart (PyPTO 0.2.0 takes both forms)."""

    name = "pto.set_cube_tile_shapes"
    m = prop_def(DenseArrayBase.constr(i64))
    k = prop_def(DenseArrayBase.constr(i64))
    n = prop_def(DenseArrayBase.constr(i64))
    enable_split_k = opt_prop_def(UnitAttr)
    assembly_format = "`m` $m `k` $k `n` $n (`split_k` $enable_split_k^)? attr-dict"

    def __init__(
        self,
        m: Sequence[int],
        k: Sequence[int],
        n: Sequence[int],
        enable_split_k: bool = False,
    ):
        super().__init__(
            properties={
                "m": _i64_array(m),
                "k": _i64_array(k),
                "n": _i64_array(n),
                "enable_split_k": UnitAttr() if enable_split_k else None,
            }
        )

    @property
    def k_pair(self) -> tuple[int, int]:
        """[kL0, kL1] (of A, when k also names B's L1 size)."""
        k0, k1, *_ = self.k.get_values()
        return k0, k1

    @signature_only
    def verify_(self) -> None:
        for what in ("m", "n"):
            _verify_pair(self, what, self.m.get_values() if what == "m" else self.n.get_values())
        k = self.k.get_values()
        if len(k) == 3 and all(v > 0 for v in k):
            return  # [kL0, kL1a, kL1b]: A's and B's L1 sizes apart (PyPTO 0.2.0's CubeTile)
        _verify_pair(self, "k", k)


@irdl_op_definition
class SetSemanticLabelOp(IRDLOperation):
    """`pypto.set_semantic_label(label)`: labels the ops that follow."""

    name = "pto.set_semantic_label"
    label = prop_def(StringAttr)
    assembly_format = "$label attr-dict"

    def __init__(self, label: str):
        super().__init__(properties={"label": StringAttr(label)})

    @signature_only
    def verify_(self) -> None:
        if not self.label.data:
            raise VerifyException("'pto.set_semantic_label' label must not be empty")


OPTION_FUNCTIONS: dict[str, str] = {
    "pass_options": "set_pass_options",
    "operation_options": "experimental.set_operation_options",
    "matrix_size": "set_matrix_size",
    "auto_mix_partition": "experimental.auto_mix_partition",
    "codegen_options": "set_codegen_options",
}
"""`pto.set_options` kinds -> the PyPTO function (inside `pypto`) that sets them."""


@irdl_op_definition
class SetOptionsOp(IRDLOperation):
    """`pypto.set_pass_options(**options)` / `pypto.experimental.set_operation_options(
    **options)` / `pypto.set_matrix_size(size)` / `pypto.experimental.auto_mix_partition(
    value)` (newer PyPTO: `set_options(pass_options={"auto_mix_partition": value})`, 0 or
    1: whether its ReduceCopyMerge pass merges Cube and Vector subgraphs) /
    `pypto.set_codegen_options(**options)` (`support_dynamic_aligned`): options that steer PyPTO's compiler for the ops that follow (PyPTO: "the
    setting is local to the current jit or loop"). They change no value, so the numpy
    back end ignores them; passes keep them in place as statements. Keys are Python
    keyword names; values are builtin attributes (ints, floats, bools, strings, arrays,
    dicts; a pypto enum member as its dotted name, `"pypto.X.Y"`)."""

    name = "pto.set_options"
    kind = prop_def(StringAttr)
    options = prop_def(DictionaryAttr)
    assembly_format = "$kind $options attr-dict"

    def __init__(self, kind: str, options: DictionaryAttr):
        super().__init__(properties={"kind": StringAttr(kind), "options": options})

    def verify_(self) -> None:
        if self.kind.data not in OPTION_FUNCTIONS:
            raise VerifyException(
                f"'pto.set_options' kind {self.kind.data!r} is not one of "
                f"{sorted(OPTION_FUNCTIONS)}"
            )
        for key in self.options.data:
            if not key.isidentifier() or keyword.iskeyword(key):
                raise VerifyException(
                    f"'pto.set_options' option name {key!r} is not a Python keyword name"
                )
        if self.kind.data == "auto_mix_partition":
            value = self.options.data.get("value")
            if (
                set(self.options.data) != {"value"}
                or not isinstance(value, IntegerAttr)
                or value.value.data not in (0, 1)
            ):
                raise VerifyException(
                    "'pto.set_options' \"auto_mix_partition\" takes {value = 0} or {value = 1}"
                )


SETTING_OPS = (SetVecTileShapesOp, SetCubeTileShapesOp, SetSemanticLabelOp, SetOptionsOp)
"""The statements that set what the ops after them use (tile shapes, the label, compiler
options) without computing a value: passes and back ends keep them in place."""
