"""What `stitch` knows of the ops it reorders: the settings they read and write
(tile shapes, labels), the index forms of their offsets (`i * 8 + 2`), and their
memory effects (the windows they read and write). `tileir.passes.stitch` schedules
with these; nothing here changes IR."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    MemRefType,
    TensorType,
)
from xdsl.dialects.utils.dynamic_index_list import get_dynamic_index_list
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import (
    IsTerminator,
    MemoryEffect,
    NoMemoryEffect,
)

from tileir.bindings.matmul import CUBE_OPS
from tileir.dialect.pto import (
    AssembleOp,
    LoopOp,
    LoopUnrollOp,
    SetCubeTileShapesOp,
    SetSemanticLabelOp,
    SetVecTileShapesOp,
    StageOp,
    StitchOp,
    TensorOp,
    TransferOp,
    ViewOp,
    YieldOp,
    constant_index,
    is_alias,
    memory_root,
)
from tileir.ir import walk_list
from tileir.passes.known_effects import memref_effects

_item = tuple.__getitem__

SETTINGS: dict[type[Operation], str] = {
    SetVecTileShapesOp: "vec",
    SetCubeTileShapesOp: "cube",
    SetSemanticLabelOp: "label",
}
KINDS = tuple(SETTINGS.values())
_STRUCTURE = (StageOp, StitchOp, YieldOp, LoopOp, LoopUnrollOp)
"""pto ops that only hold other ops and use no setting themselves."""


# --------------------------------------------------------------------------- index forms


@dataclass(frozen=True)
class Linear:
    """`const + sum(coeff * base)` over opaque index values: enough to prove that two
    windows `[%j + 1]` and `[%j + 2]` do not overlap."""

    const: int
    terms: frozenset[tuple[SSAValue, int]] = frozenset()

    def plus(self, other: Linear, sign: int = 1) -> Linear:
        coeffs: dict[SSAValue, int] = dict(self.terms)
        for v, c in other.terms:
            coeffs[v] = coeffs.get(v, 0) + sign * c
        return Linear(
            self.const + sign * other.const,
            frozenset((v, c) for v, c in coeffs.items() if c),
        )

    def scaled(self, k: int) -> Linear:
        if k == 0:
            return Linear(0)
        return Linear(self.const * k, frozenset((v, c * k) for v, c in self.terms))


class IndexForms:
    """Memoised `Linear` forms of index values (through constant, addi, subi, muli, and
    the results of `pto.stage` / `pto.stitch`, the values their bodies yield),
    and of the static index lists and shapes the windows are made of. (Keyed by id,
    the key's object kept alive by the entry: xDSL's `__hash__` is Python code, or
    hashes an attribute's whole contents.)"""

    def __init__(self, share: bool = True) -> None:
        self.memo: dict[int, tuple[SSAValue, Linear]] = {}
        self.ints: dict[int, Linear] = {}
        self.statics: dict[int, tuple[Attribute, tuple[int, ...]]] = {}
        self.traces: dict[int, tuple[SSAValue, SSAValue, bool]] = {}
        self.memrefs: dict[type[Attribute], bool] = {}
        self.share = share
        """Whether equal forms and equal accesses are made once and shared (off: every
        form and every view's or assemble's effects computed anew, the reference the
        tests compare the shared ones with)."""
        self.derived: dict[tuple[object, ...], tuple[Linear, Linear, Linear]] = {}
        """`a + b`, `a - b`, `a * b` by (op class, id(a), id(b)), with a and b kept alive:
        the copies of one loop body that `loop-unroll` makes compute the same forms from
        the same (shared) forms of their operands."""
        self.accesses: dict[tuple[object, ...], tuple[tuple[object, ...], Effects]] = {}
        """The effects of a view or assemble by what they are made of (the key of
        `_shared_access_effects`), with those objects kept alive."""
        self.access_statics: dict[tuple[object, ...], tuple[tuple[object, ...], object]] = {}
        """`_static_access_key` of a view or assemble, by the class and the identity of
        the attributes and the memory it is made of (those kept alive)."""
        self.access_prefixes: dict[tuple[object, ...], tuple[tuple[object, ...], object]] = {}
        """The distinct static keys, each one tuple (whose identity is part of the key
        of `accesses`), with the objects whose ids it holds kept alive."""
        self.walks: dict[int, tuple[Operation, list[Operation]]] = {}
        """`walk_list(op)` of the region ops of the loop body being rewritten (cleared
        for each body: `stitch` moves a body's ops, not what is inside them)."""

    def walk(self, op: Operation) -> list[Operation]:
        """`op` and the ops inside it in program order (`list(op.walk())`), listed once
        per body: its settings, its effects and its operands each need them."""
        hit = self.walks.get(id(op))
        if hit is None:
            hit = self.walks[id(op)] = (op, walk_list(op))
        return hit[1]

    def is_memref(self, t: Attribute) -> bool:
        """`isinstance(t, MemRefType)`, once per attribute class."""
        known = self.memrefs.get(type(t))
        if known is None:
            known = self.memrefs[type(t)] = isinstance(t, MemRefType)
        return known

    def trace(self, memory: SSAValue) -> tuple[SSAValue, bool]:
        """(`memory_root(memory)`, `is_alias(memory)`), once per value: a value's chain
        of owners does not change while the pass runs (a group's results, which take
        over uses, lead back to the same root)."""
        hit = self.traces.get(id(memory))
        if hit is None:
            hit = self.traces[id(memory)] = (memory, memory_root(memory), is_alias(memory))
        return hit[1], hit[2]

    def of(self, value: int | SSAValue) -> Linear:
        if type(value) is int:
            form = self.ints.get(value)
            if form is None:
                form = self.ints[value] = Linear(value)
            return form
        hit = self.memo.get(id(value))
        if hit is not None:
            return hit[1]
        form = self._compute(value)
        self.memo[id(value)] = (value, form)
        return form

    def static(self, attr: DenseArrayBase | TensorType) -> tuple[int, ...]:
        """`attr.get_values()` of a dense array / `attr.get_shape()` of a tensor type."""
        hit = self.statics.get(id(attr))
        if hit is None:
            values = attr.get_shape() if isinstance(attr, TensorType) else attr.get_values()
            hit = self.statics[id(attr)] = (attr, tuple(values))
        return hit[1]

    def _compute(self, value: SSAValue) -> Linear:
        op = value.owner
        kind = type(op)  # (isinstance on xDSL's ABC-based classes is slow)
        if kind is arith.ConstantOp:
            c = constant_index(value)
            if c is not None:
                return self.of(c) if self.share else Linear(c)
        elif kind is arith.AddiOp or kind is arith.SubiOp or kind is arith.MuliOp:
            lhs, rhs = op._operands
            a, b = self.of(lhs), self.of(rhs)
            if not self.share:
                form = self._combine(kind, a, b)
                return form if form is not None else Linear(0, frozenset({(value, 1)}))
            key = (kind, id(a), id(b))
            hit = self.derived.get(key)
            if hit is not None:
                return hit[2]
            form = self._combine(kind, a, b)
            if form is not None:  # (an opaque product is its own value's: not shared)
                self.derived[key] = (a, b, form)
                return form
        elif kind is StageOp or kind is StitchOp:
            # Its one block runs once, inline: a result is the value the block yields
            # (`vc-split` computes a stage's offsets inside it and passes them out).
            block = op.regions[0]._first_block
            last = block._last_op if block is not None else None
            index = value.index  # type: ignore[attr-defined]
            if type(last) is YieldOp and index < len(last._operands):
                return self.of(_item(last._operands, index))
        return Linear(0, frozenset({(value, 1)}))

    @staticmethod
    def _combine(kind: type[Operation], a: Linear, b: Linear) -> Linear | None:
        """The form of `a + b`, `a - b` or `a * b` (`kind`), None for a product of two
        forms with terms (not linear)."""
        if kind is arith.AddiOp:
            return a.plus(b)
        if kind is arith.SubiOp:
            return a.plus(b, -1)
        if not b.terms:
            return a.scaled(b.const)
        if not a.terms:
            return b.scaled(a.const)
        return None


# --------------------------------------------------------------------------- effects


@dataclass(frozen=True)
class Access:
    """A read or write of `buffer`; `window` is one (offset, size) per dim, None for
    the whole buffer (size None: not known statically)."""

    buffer: SSAValue
    write: bool
    window: tuple[tuple[Linear, int | None], ...] | None

    def disjoint(self, other: Access) -> bool:
        if self.window is None or other.window is None:
            return False
        for (a, sa), (b, sb) in zip(self.window, other.window):
            if a.terms != b.terms:
                continue
            d = b.const - a.const
            if (sa is not None and d >= sa) or (sb is not None and -d >= sb):
                return True
        return False


def _window(
    forms: IndexForms, offsets: Sequence[int | SSAValue], shape: Sequence[int]
) -> tuple[tuple[Linear, int | None], ...]:
    of = forms.of
    return tuple([(of(o), None if s == DYNAMIC_INDEX else s) for o, s in zip(offsets, shape)])


def _access(
    forms: IndexForms,
    memory: SSAValue,
    write: bool,
    offsets: Sequence[int | SSAValue],
    shape: Sequence[int],
) -> Access:
    """An access of `memory` at `offsets`, keyed by the memory's root; through a
    `pto.reshape_mem` alias the window is in other coordinates, so it is the whole root."""
    root, alias = forms.trace(memory)
    return Access(root, write, None if alias else _window(forms, offsets, shape))


Setting = tuple[object, ...] | None
"""A setting's value (op name and properties); None when not known statically."""


@dataclass
class Effects:
    """What one top-level op of a group does, its nested ops included. Settings are
    statements that hold until the next one: `reads` are the kinds the op's pto ops
    use before the op sets them itself; `writes` the value each kind has after it."""

    accesses: list[Access] = field(default_factory=list)
    writes: dict[str, Setting] = field(default_factory=dict)
    reads: set[str] = field(default_factory=set)
    barrier: bool = False


_IS_TILE: dict[type[Attribute], bool] = {}
_READS: dict[type[Operation], tuple[str, ...]] = {}


def _is_tile(t: Attribute) -> bool:
    """`isinstance(t, TensorType)`, once per attribute class (isinstance on xDSL's
    ABC-based classes is slow, and this is asked of every operand of every op)."""
    known = _IS_TILE.get(type(t))
    if known is None:
        known = _IS_TILE[type(t)] = isinstance(t, TensorType)
    return known


def _class_reads(t: type[Operation]) -> tuple[str, ...]:
    """The settings the ops of class `t` are compiled under when they touch a tile."""
    reads = _READS.get(t)
    if reads is None:
        if issubclass(t, TransferOp):
            reads = ()
        elif issubclass(t, CUBE_OPS):
            reads = ("cube", "label")
        else:
            reads = ("vec", "label")
        _READS[t] = reads
    return reads


def _touches_tile(op: Operation) -> bool:
    known = _IS_TILE.get
    for v in op.results:
        tile = known(type(v._type))
        if tile or (tile is None and _is_tile(v._type)):
            return True
    for v in op._operands:
        tile = known(type(v._type))
        if tile or (tile is None and _is_tile(v._type)):
            return True
    return False


def _reads_of(op: Operation) -> tuple[str, ...]:
    """The settings an op is compiled under: the cube tile shape for matmul, the
    vector tile shape for the rest; the label for all. A transfer is tileir's model
    of a buffer hand-off and is not emitted; ops on no tile (loop-state queries) use
    none."""
    reads = _class_reads(type(op))
    return reads if reads and _touches_tile(op) else ()


def _conditional(op: Operation, top: Operation) -> bool:
    """Whether `op` may not run when `top` runs (it sits in a loop or a branch)."""
    if op is top:
        return False
    parent = op.parent_op()
    while parent is not None and parent is not top:
        if not isinstance(parent, StageOp | StitchOp):
            return True
        parent = parent.parent_op()
    return False


_OP_CLASS: dict[type[Operation], tuple[str, tuple[str, ...]]] = {}
"""Per op class, how `effects_of` treats it and the settings its ops read when they
touch a tile (computed once per class: the traits are the same for every instance)."""


def _op_class(op: Operation) -> tuple[str, tuple[str, ...]]:
    t = type(op)
    c = _OP_CLASS.get(t)
    if c is None:
        if t in SETTINGS:
            how = "setting"
        elif t is ViewOp:
            how = "view"
        elif t is AssembleOp:
            how = "assemble"
        elif t is TensorOp:
            how = "alloc"
        elif op.has_trait(IsTerminator) or op.has_trait(NoMemoryEffect):
            how = "none"
        elif not op.get_traits_of_type(MemoryEffect):
            how = "unknown"  # (`get_effects` is None for every op of the class)
        else:
            how = "query"  # ask the op instance (or its contents, for region ops)
        tile = t.name.startswith("pto.") and not issubclass(t, _STRUCTURE)
        c = _OP_CLASS[t] = (how, _class_reads(t) if tile else ())
    return c


_SHARED_EFFECTS: dict[tuple[bool, tuple[str, ...]], Effects] = {}
"""The effects of an op without regions that has no memory effect, or effects that
are unknown for its whole class (a barrier), by that and the settings it reads: one
shared (read-only, like every `Effects` once made) object each."""


_BY_CLASS: dict[type[Operation], tuple[Effects, Effects] | None] = {}
"""Per op class: the shared effects of its ops without regions when it has none or
unknown ones for the whole class, (touching a tile, not touching one); None when its
ops' effects depend on the op."""


def _shared_by_class(t: type[Operation], top: Operation) -> tuple[Effects, Effects] | None:
    known = _BY_CLASS.get(t, False)
    if known is not False:
        return known  # type: ignore[return-value]
    how, reads = _op_class(top)
    shared = None
    if how == "none" or how == "unknown":
        pair = []
        for r in (reads, ()):
            key = (how == "unknown", r)
            fx = _SHARED_EFFECTS.get(key)
            if fx is None:
                fx = _SHARED_EFFECTS[key] = Effects(reads=set(r), barrier=key[0])
            pair.append(fx)
        shared = (pair[0], pair[1])
    _BY_CLASS[t] = shared
    return shared


def effects_of(top: Operation, forms: IndexForms) -> Effects:
    if not top.regions:
        shared = _BY_CLASS.get(type(top), False)
        if shared is False:
            shared = _shared_by_class(type(top), top)
        if shared is not None:
            tile, other = shared  # type: ignore[misc]
            if tile is other or _touches_tile(top):
                return tile
            return other
        cls = type(top)
        if cls is ViewOp or cls is AssembleOp:
            return _view_or_assemble_effects(top, cls, forms)
    fx = Effects()
    definite: set[str] = set()
    for op in forms.walk(top) if top.regions else (top,):
        how, reads = _op_class(op)
        if how == "setting":
            kind = SETTINGS[type(op)]
            if _conditional(op, top):
                fx.writes[kind] = None
            else:
                fx.writes[kind] = setting_key(op)
                definite.add(kind)
            continue
        if reads and _touches_tile(op):
            if definite:
                fx.reads.update(k for k in reads if k not in definite)
            else:
                fx.reads.update(reads)
        if how == "none":
            continue
        if how == "view" or how == "assemble":
            # (a view or assemble inside a region op: the access its own effects hold)
            cls = ViewOp if how == "view" else AssembleOp
            fx.accesses.extend(_view_or_assemble_effects(op, cls, forms).accesses)
        elif how == "alloc":
            fx.accesses.append(Access(op.results[0], True, None))
        elif op.regions:  # region ops act through their contents, walked here too
            continue
        elif how == "unknown":
            fx.barrier = True
        else:
            accesses, unknown = memref_effects(op)
            fx.accesses.extend(Access(memory_root(v), write, None) for v, write in accesses)
            if unknown:
                fx.barrier = True
    return fx


def effects_list(ops: Sequence[Operation], forms: IndexForms) -> list[Effects]:
    """`[effects_of(op, forms) for op in ops]`, the cases that make no new `Effects`
    (the shared ones of a class, a view's or assemble's shared ones) taken without a
    call of `effects_of` per op."""
    out: list[Effects] = []
    append = out.append
    by_class = _BY_CLASS
    share = forms.share
    touches = _touches_tile
    is_tile = _IS_TILE.get
    for top in ops:
        if not top.regions:
            cls = type(top)
            shared = by_class.get(cls, False)
            if shared is None:
                if share and (cls is ViewOp or cls is AssembleOp):
                    append(_shared_access_effects(top, cls, forms))
                    continue
            elif shared is not False:
                tile, other = shared  # type: ignore[misc]
                if tile is not other:
                    # (`_touches_tile`'s first test, inlined: a tile op's first result)
                    results = top.results
                    if not (results and is_tile(type(_item(results, 0)._type))):
                        tile = tile if touches(top) else other
                append(tile)
                continue
        append(effects_of(top, forms))
    return out


def _view_or_assemble_effects(top: Operation, cls: type[Operation], forms: IndexForms) -> Effects:
    """The effects of a view or assemble (`cls`): shared ones, or with `forms.share` off
    made anew."""
    if forms.share:
        return _shared_access_effects(top, cls, forms)
    return _access_effects(top, cls, forms)


def _access_effects(top: Operation, cls: type[Operation], forms: IndexForms) -> Effects:
    """What the loop of `effects_of` makes of one view or assemble, without the loop."""
    access = _view_access(top, forms) if cls is ViewOp else _assemble_access(top, forms)
    reads = _class_reads(cls) if _touches_tile(top) else ()
    return Effects([access] if access is not None else [], {}, set(reads))


def _shared_access_effects(top: Operation, cls: type[Operation], forms: IndexForms) -> Effects:
    """`_access_effects`, made once per distinct key and shared (read-only): the copies
    of a loop body read and write the same windows of the same memory, often as many
    times as there are copies. The key holds all that `_access_effects` reads: the
    static part (`_static_access_key`: the class, whether the op touches a tile, the
    memory, the static shape, offsets and segment sizes), found by the identity of the
    attributes and the memory it is made of (the copies share those objects), and the
    forms of all the index operands (shared objects, `IndexForms.derived`; by
    identity)."""
    operands = top._operands
    properties = top.properties
    offsets = properties["static_offsets"]
    if cls is ViewOp:
        memory = _item(operands, 0)
        typed = _item(top.results, 0)._type
        segments = properties["operandSegmentSizes"]
        first = 1
    else:
        memory = _item(operands, 1)
        typed = _item(operands, 0)._type
        segments = None
        first = 2
    found = (cls, id(offsets), id(typed), id(memory), id(segments))
    static = forms.access_statics.get(found)
    if static is None:
        alive = (offsets, typed, memory, segments)
        prefix = _static_access_key(top, cls, forms, memory, typed, offsets, segments)
        static = forms.access_statics[found] = (alive, prefix)
    prefix = static[1]
    if prefix is None:  # (a view of a tile: no access to share)
        return _access_effects(top, cls, forms)
    dynamic = _item(operands, slice(first, None))
    if len(dynamic) == 1:  # (the common case, without the comprehensions)
        form = forms.of(_item(dynamic, 0))
        dynamic_forms: tuple[Linear, ...] = (form,)
        key: tuple[int, ...] = (id(prefix), id(form))
    else:
        of = forms.of
        dynamic_forms = tuple([of(v) for v in dynamic])
        key = (id(prefix), *[id(f) for f in dynamic_forms])
    hit = forms.accesses.get(key)
    if hit is None:
        alive = (prefix, dynamic_forms)
        hit = forms.accesses[key] = (alive, _access_effects(top, cls, forms))
    return hit[1]


def _static_access_key(
    top: Operation,
    cls: type[Operation],
    forms: IndexForms,
    memory: SSAValue,
    typed: Attribute,
    offsets: DenseArrayBase,
    segments: DenseArrayBase | None,
) -> tuple[object, ...] | None:
    """What a view's or assemble's effects depend on besides its index operands, by
    value (from the parts `_shared_access_effects` read: the memory, the tile's type,
    the static offsets and segment sizes), as one tuple per distinct value
    (`IndexForms.access_prefixes`); None for a view of a tile (no access)."""
    if cls is ViewOp and not forms.is_memref(memory._type):
        return None
    key = (
        cls,
        _touches_tile(top),
        id(memory),
        forms.static(typed),  # type: ignore[arg-type]
        id(offsets.elt_type),
        offsets.data.data,
        id(segments.elt_type) if segments is not None else None,
        segments.data.data if segments is not None else None,
    )
    hit = forms.access_prefixes.get(key)
    if hit is None:
        hit = forms.access_prefixes[key] = (key, (memory, offsets.elt_type, segments))
    return hit[0]


def _view_access(op: Operation, forms: IndexForms) -> Access | None:
    """The read of a `pto.view` of memory (None: a view of a tile)."""
    # (operands and results unpacked or read by `tuple`'s own indexing:
    # `SSAValues.__getitem__` is Python code)
    source = _item(op._operands, 0)
    if not forms.is_memref(source._type):
        return None
    (result,) = op.results
    shape = forms.static(result._type)  # type: ignore[arg-type]
    offsets = forms.static(op.properties["static_offsets"])  # type: ignore[arg-type]
    if DYNAMIC_INDEX in offsets:
        # `op.offsets`: the operands after the source, as many as the segment sizes
        # say (read once per segment-sizes attribute)
        segments = forms.static(op.properties["operandSegmentSizes"])  # type: ignore[arg-type]
        dynamic = _item(op._operands, slice(1, 1 + segments[1]))
        offsets = get_dynamic_index_list(offsets, dynamic, DYNAMIC_INDEX)
    return _access(forms, source, False, offsets, shape)


def _assemble_access(op: Operation, forms: IndexForms) -> Access:
    """The write of a `pto.assemble`."""
    src, dst, *dynamic = op._operands
    shape = forms.static(src._type)  # type: ignore[arg-type]
    offsets = forms.static(op.properties["static_offsets"])  # type: ignore[arg-type]
    if DYNAMIC_INDEX in offsets:  # (`op.offsets`: the operands after src, dst)
        offsets = get_dynamic_index_list(offsets, dynamic, DYNAMIC_INDEX)
    return _access(forms, dst, True, offsets, shape)


def setting_key(op: Operation) -> tuple[object, ...]:
    return (op.name, tuple(sorted(op.properties.items())))
