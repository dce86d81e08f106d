"""`semantic-labels`: give every `pto.stage` a semantic label.

PyPTO's `set_semantic_label(...)` names the ops that follow it (until the next label);
the compiler uses the names to find stage boundaries and the profiler to report them.
This pass labels each stage made by `vc-split`:

- with the user's `pto.set_semantic_label` in effect at the stage's first op with a
  unit (labels are statements in program order), kept verbatim;
- else with a label derived from what the stage computes, by the rule table below,
  made unique within its kernel (`rope`, `rope-2`, ...).

Rule table (`RULES`): the *pattern* rules that match are joined with `-` in table order
(a fused RMSNorm + RoPE stage is `rmsnorm-rope`); when none matches, the first matching
*fallback* rule names the stage.

| label        | kind     | the stage contains                                          |
| ------------ | -------- | ----------------------------------------------------------- |
| `linear`     | pattern  | a matmul (or scaled_mm) whose right operand is a 2-D weight read from a kernel argument |
| `matmul`     | pattern  | any other matmul (attention scores, batched matmul ...)     |
| `rmsnorm`    | pattern  | `sum` and `rsqrt` (or `sqrt`)                               |
| `rope`       | pattern  | two `mul`s, an `add`, a `sub` or `neg`, and a `concat`, `gathermask` or `transpose` |
| `softmax`    | pattern  | `exp` and `sum` (or `maximum`: the online-softmax update)   |
| `gelu`       | pattern  | `erf`, or `tanh` and `mul`, or (PyPTO 0.2.0 has neither: they are composed) `exp`, `div` and four `mul`s without a `sum` |
| `quant`      | pattern  | a `cast` to i8                                              |
| `dequant`    | pattern  | a `cast` from i32                                           |
| `gating`     | fallback | `topk`                                                      |
| `gather`     | fallback | `gather`, `index_select` or `gathermask`                    |
| `reduce`     | fallback | `sum`, `amax` or `amin`                                     |
| `cast`       | fallback | a `cast` and otherwise only data movement                   |
| `copy`       | fallback | only data movement (view, assemble, reshape, transpose ...) |
| `elementwise`| fallback | anything else                                               |

Labels never change what a program computes; the PyPTO back end emits them as
`set_semantic_label` calls. The kernel is marked `labelled`, so that `check_labels`
(also `semantic-labels{check=true}`, usable after any pass) can report a stage, or an op
with a unit outside every stage, that a later pass left without a label: a pass that
creates a stage must give it the label of the stage it came from.

Before / after:

```mlir
%y = pto.stage vector tile [8, 64] { ... pto.rsqrt ... pto.sum ... }
%z = pto.stage cube cube [16, 16, 64, 64, 32, 32] { ... pto.matmul %a, %w ... }
// becomes
%y = pto.stage vector label "rmsnorm" tile [8, 64] { ... }
%z = pto.stage cube label "linear" cube [16, 16, 64, 64, 32, 32] { ... }
```
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, StringAttr, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tileir.diagnostics import TileirError, location_of
from tileir.dialect import pto
from tileir.passes.stages import enclosing_stage, kernels, op_unit, walk_ops

LABELLED_ATTR = "labelled"

_DATA_MOVEMENT = frozenset(
    {
        "pto.view",
        "pto.assemble",
        "pto.reshape",
        "pto.transpose",
        "pto.concat",
        "pto.unsqueeze",
        "pto.expand_clone",
        "pto.transfer",
        "pto.full",
    }
)


@dataclass(frozen=True)
class StageFacts:
    """What a stage computes, as the rules see it."""

    ops: Counter[str]
    """Op names of the stage's ops that have a unit, and its views."""
    casts_to: frozenset[str]
    casts_from: frozenset[str]
    weight_matmul: bool
    """A matmul whose right operand is a 2-D tile read from a kernel argument."""


def _elem_name(t: object) -> str:
    if isinstance(t, TensorType):
        e = t.get_element_type()
        if isinstance(e, IntegerType):
            return f"i{e.width.data}"
        return str(e)
    return ""


def _reads_kernel_argument(value: SSAValue) -> bool:
    """Does `value` come (through views, casts, transfers, reshapes) from a kernel
    argument, i.e. a weight rather than an activation?"""
    seen = 0
    while seen < 16:
        seen += 1
        if pto.is_kernel_argument(value):
            return True
        owner = value.owner
        if isinstance(owner, pto.StageOp):
            term = owner.body.block.last_op
            if not isinstance(term, pto.YieldOp):
                return False
            value = term.arguments[value.index]  # type: ignore[attr-defined]
        elif isinstance(
            owner, pto.ViewOp | pto.CastOp | pto.ReshapeOp | pto.ReshapeMemOp | pto.TransposeOp
        ):
            value = owner.operands[0]
        elif isinstance(owner, pto.TransferOp):
            value = owner.input
        else:
            return False
    return False


def stage_facts(stage: pto.StageOp) -> StageFacts:
    ops: Counter[str] = Counter()
    casts_to: set[str] = set()
    casts_from: set[str] = set()
    weight = False
    for op in walk_ops(stage):
        kind = type(op)
        if op is stage or kind is pto.YieldOp:
            continue
        if kind is not pto.ViewOp and op_unit(op) is None:
            continue
        ops[op.name] += 1
        if kind is pto.CastOp:
            casts_to.add(_elem_name(op.result.type))  # type: ignore[attr-defined]
            casts_from.add(_elem_name(op.input.type))  # type: ignore[attr-defined]
        elif (
            kind in (pto.MatmulOp, pto.ScaledMmOp)
            and len(op.b.type.get_shape()) == 2  # type: ignore[attr-defined]
            and _reads_kernel_argument(op.b)  # type: ignore[attr-defined]
        ):
            weight = True
    return StageFacts(ops, frozenset(casts_to), frozenset(casts_from), weight)


Kind = Literal["pattern", "fallback"]


@dataclass(frozen=True)
class Rule:
    label: str
    kind: Kind
    matches: Callable[[StageFacts], bool]


def _has(f: StageFacts, *names: str) -> bool:
    return all(f.ops[f"pto.{n}"] > 0 for n in names)


def _any(f: StageFacts, *names: str) -> bool:
    return any(f.ops[f"pto.{n}"] > 0 for n in names)


_MATMULS = ("matmul", "scaled_mm")
"""The ops the `linear` / `matmul` labels are about (`scaled_mm`: PyPTO's MX matmul)."""

RULES: tuple[Rule, ...] = (
    Rule("linear", "pattern", lambda f: _any(f, *_MATMULS) and f.weight_matmul),
    Rule("matmul", "pattern", lambda f: _any(f, *_MATMULS) and not f.weight_matmul),
    Rule("rmsnorm", "pattern", lambda f: _has(f, "sum") and _any(f, "rsqrt", "sqrt")),
    Rule(
        "rope",
        "pattern",
        lambda f: (
            f.ops["pto.mul"] >= 2
            and _has(f, "add")
            and _any(f, "sub", "neg")
            and _any(f, "concat", "gathermask", "transpose")
        ),
    ),
    Rule("softmax", "pattern", lambda f: _has(f, "exp") and _any(f, "sum", "maximum")),
    Rule(
        "gelu",
        "pattern",
        lambda f: (
            _has(f, "erf")
            or _has(f, "tanh", "mul")
            or (_has(f, "exp", "div") and f.ops["pto.mul"] >= 4 and not _has(f, "sum"))
        ),
    ),
    Rule("quant", "pattern", lambda f: "i8" in f.casts_to),
    Rule("dequant", "pattern", lambda f: "i32" in f.casts_from),
    Rule("gating", "fallback", lambda f: _has(f, "topk")),
    Rule("gather", "fallback", lambda f: _any(f, "gather", "index_select", "gathermask")),
    Rule("reduce", "fallback", lambda f: _any(f, "sum", "amax", "amin")),
    Rule(
        "cast",
        "fallback",
        lambda f: _has(f, "cast") and all(n in _DATA_MOVEMENT or n == "pto.cast" for n in f.ops),
    ),
    Rule("copy", "fallback", lambda f: all(n in _DATA_MOVEMENT for n in f.ops)),
    Rule("elementwise", "fallback", lambda f: True),
)


def derive_label(stage: pto.StageOp) -> str:
    """The label the rule table gives `stage` (not yet made unique)."""
    facts = stage_facts(stage)
    patterns = [r.label for r in RULES if r.kind == "pattern" and r.matches(facts)]
    if patterns:
        return "-".join(patterns)
    return next(r.label for r in RULES if r.kind == "fallback" and r.matches(facts))


def _stages_and_user_labels(
    kernel: pto.KernelOp,
) -> tuple[list[pto.StageOp], dict[pto.StageOp, str]]:
    """The kernel's stages in program order, and the `set_semantic_label` in effect at
    each stage's first op with a unit (transfers aside; labels are statements, in
    effect in program order until the next one)."""
    current: str | None = None
    found: dict[pto.StageOp, str] = {}
    all_stages: list[pto.StageOp] = []
    pending: pto.StageOp | None = None
    for op in walk_ops(kernel):
        kind = type(op)
        if kind is pto.SetSemanticLabelOp:
            current = op.label.data  # type: ignore[attr-defined]
        elif kind is pto.StageOp:
            all_stages.append(op)  # type: ignore[arg-type]
            pending = op  # type: ignore[assignment]
        elif (
            pending is not None
            and kind is not pto.TransferOp
            and op.parent is pending.body.block
            and op_unit(op) is not None
        ):
            if current is not None:
                found[pending] = current
            pending = None
    return all_stages, found


def _unique(base: str, used: set[str]) -> str:
    label, n = base, 1
    while label in used:
        n += 1
        label = f"{base}-{n}"
    return label


def label_kernel(kernel: pto.KernelOp) -> int:
    """Label the kernel's unlabelled stages; returns how many got a label."""
    all_stages, user = _stages_and_user_labels(kernel)
    used = {s.label.data for s in all_stages if s.label is not None}
    attrs: dict[str, StringAttr] = {}
    count = 0
    for stage in all_stages:
        if stage.label is not None:
            continue
        label = user.get(stage) or _unique(derive_label(stage), used)
        used.add(label)
        attr = attrs.get(label)
        if attr is None:
            attr = attrs[label] = StringAttr(label)
        stage.label = attr
        count += 1
    if all_stages:
        # A kernel without stages (vc-split has not run) has nothing to label yet.
        kernel.attributes[LABELLED_ATTR] = UnitAttr()
    return count


def check_labels(module: Operation) -> list[str]:
    """Problems with labels in kernels that `semantic-labels` has seen: a stage without
    a label, or an op with a unit that sits outside every stage (so it has no label).
    Each problem names the op and, when known, its source location."""
    problems: list[str] = []

    def report(op: Operation, what: str) -> None:
        where = location_of(op)
        problems.append(f"{where}: {what}" if where else what)

    for kernel in kernels(module):
        if LABELLED_ATTR not in kernel.attributes:
            continue
        name = kernel.sym_name.data
        for op in walk_ops(kernel):
            if isinstance(op, pto.StageOp):
                if op.label is None:
                    report(op, f"a {op.unit.data} stage in @{name} has no semantic label")
            elif not op.regions and op_unit(op) is not None and enclosing_stage(op) is None:
                report(
                    op,
                    f"'{op.name}' in @{name} is outside every stage, so it has lost its "
                    "semantic label",
                )
    return problems


@dataclass(frozen=True)
class SemanticLabelsPass(ModulePass):
    """Label every stage (see the module docstring). `check=true` only checks: it fails
    with the list of problems if any stage or op has lost its label."""

    name = "semantic-labels"

    @property
    def requires(self) -> tuple[str, ...]:
        return () if self.check else ("staged",)

    @property
    def establishes(self) -> tuple[str, ...]:
        return () if self.check else ("labelled",)

    check: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.check:
            problems = check_labels(op)
            if problems:
                raise TileirError("error: semantic labels lost:\n  " + "\n  ".join(problems))
            return
        for kernel in kernels(op):
            label_kernel(kernel)
