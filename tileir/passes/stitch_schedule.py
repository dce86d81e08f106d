"""The order `stitch` gives the ops of one group: their dependencies (SSA uses, memory
effects, settings), the software-pipelined priority of each op and the list schedule
that follows it, and the settings a reordered group needs re-inserted (`SettingsPlan`).
The pass and its contract are in `tileir.passes.stitch`."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Block, Operation, SSAValue

from tileir.ir import clone_ops
from tileir.passes.stitch_effects import (
    KINDS,
    SETTINGS,
    Access,
    Effects,
    IndexForms,
    Setting,
    effects_list,
    setting_key,
)


def _differ(a: Setting, b: Setting) -> bool:
    return a is None or b is None or a != b


class _SettingOrder:
    """Ordering constraints from one kind of setting (vec tile, cube tile, label).

    With `seen(R)` the value in force at reader R in program order, a reorder keeps
    every reader's value and the final value when the writers keep their order, R
    stays after the last writer before it, and a writer stays after every earlier
    reader that saw another value. (Then the last writer before R in the new order
    has R's value: every earlier writer is before R's own, and a later writer of
    another value stays after R.) Readers of one value are not held between its
    writers, so iterations that each set the same tile shapes still interleave.

    Writers of different values must not swap: `set [1]; set [8]; neg` would become
    `set [8]; set [1]; neg`, a reader placed after both seeing the wrong one."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.state: Setting = None
        self.last: int | None = None
        self.readers: dict[Setting, list[int]] = {}
        self.consumed: dict[tuple[Setting, Setting], int] = {}

    def add(self, n: int, fx: Effects, deps: set[int]) -> None:
        if self.kind in fx.reads:
            if self.last is not None:
                deps.add(self.last)
            self.readers.setdefault(self.state, []).append(n)
        if self.kind not in fx.writes:
            return
        value = fx.writes[self.kind]
        if self.last is not None:
            deps.add(self.last)
        for seen, readers in self.readers.items():
            if not _differ(seen, value):
                continue
            # (readers before the last writer of `value` are before it already)
            start = self.consumed.get((seen, value), 0)
            deps.update(r for r in readers[start:] if r != n)
            self.consumed[(seen, value)] = len(readers)
        self.state = value
        self.last = n


@dataclass
class SettingsPlan:
    """How the settings of a group are kept right when its ops move.

    A kind is *re-established* (`remat`) when every op that uses it in the group uses a
    value set inside the group and the value after the group is known: the scheduler
    then ignores that kind, the group's own setting statements of that kind are dropped,
    and a copy of the right setting is put in front of each op whose value would
    otherwise differ (and at the end, for the ops after the group). Other kinds are
    ordered by `_SettingOrder`."""

    effects: list[Effects]
    need: list[dict[str, Setting]]
    """Per op, the value of every kind in force before it (in program order); ops
    between two writes share one dict."""
    final: dict[str, Setting]
    remat: set[str]
    source: dict[Setting, Operation]

    @staticmethod
    def of(ops: Sequence[Operation], forms: IndexForms) -> SettingsPlan:
        effects = effects_list(ops, forms)
        state: dict[str, Setting] = dict.fromkeys(KINDS)
        unknown: set[str] = set()
        written: set[str] = set()
        need: list[dict[str, Setting]] = []
        source: dict[Setting, Operation] = {}
        missing = set(KINDS)  # (the kinds whose value in `state` is None)
        for op, fx in zip(ops, effects):
            need.append(state)
            reads, writes = fx.reads, fx.writes
            if reads and missing and not missing.isdisjoint(reads):
                unknown.update(missing & reads)
            if writes:
                state = dict(state)  # (`need` keeps the one before the op)
                for k, v in writes.items():
                    written.add(k)
                    if v is None:
                        unknown.add(k)
                    state[k] = v
                missing = {k for k, v in state.items() if v is None}
                for inner in forms.walk(op) if op.regions else (op,):
                    if type(inner) in SETTINGS:
                        source.setdefault(setting_key(inner), inner)
        remat = {k for k in written if k not in unknown and state[k] is not None}
        return SettingsPlan(effects, need, state, remat, source)

    def emit(self, ops: Sequence[Operation], order: Sequence[int]) -> list[Operation]:
        """`ops` in `order`, with the re-established kinds' settings re-inserted where
        the value in force would differ from the original one."""
        if not self.remat:  # (what the loop below comes to)
            return [ops[n] for n in order]
        remat, effects, need, source = self.remat, self.effects, self.need, self.source
        current: dict[str, Setting] = dict.fromkeys(remat)
        out: list[Operation] = []

        def establish(kind: str, value: Setting) -> None:
            if current[kind] != value:
                out.append(clone_ops((source[value],), {})[0])
                current[kind] = value

        # (not the set `reads` itself: its order varies with the hash seed)
        kinds = [k for k in KINDS if k in remat]
        # per `Effects` object (most are shared by many ops), the kinds it reads
        # that are re-established, in `kinds`' order
        reading: dict[int, tuple[Effects, list[str]]] = {}
        settings = SETTINGS
        for n in order:
            op = ops[n]
            fx = effects[n]
            writes = fx.writes
            # (a setting writes its kind: only an op that writes can be one)
            if writes and settings.get(type(op)) in remat:
                op.detach()
                op.erase()
                continue
            if fx.reads:
                hit = reading.get(id(fx))
                if hit is None:
                    reads = fx.reads
                    hit = reading[id(fx)] = (fx, [k for k in kinds if k in reads])
                if hit[1]:
                    before = need[n]
                    for kind in hit[1]:
                        value = before[kind]
                        now = current[kind]
                        # (`establish`, inlined: most reads find the value in force,
                        # often the very same key)
                        if now is not value and now != value:
                            out.append(clone_ops((source[value],), {})[0])
                            current[kind] = value
            out.append(op)
            if writes:
                for kind, value in writes.items():
                    if kind in remat:
                        current[kind] = value
        for kind in sorted(self.remat):
            establish(kind, self.final[kind])
        return out


def dependencies(
    ops: Sequence[Operation], forms: IndexForms, plan: SettingsPlan
) -> tuple[list[list[int]], list[int]]:
    """The order constraints of `ops`: for each op, the later ops that must stay after
    it (each once), and the number of earlier ops it must stay after."""
    # (keyed by id: xDSL's `Operation.__hash__` is Python code)
    position = {id(op): n for n, op in enumerate(ops)}
    block = ops[0].parent if ops else None
    size = len(ops)
    succs: list[list[int]] = [[] for _ in ops]
    waiting = [0] * size
    # recorded[m] == n: the edge m -> n is in `succs` already (edges are kept in lists,
    # not a set per op: most come from operands, and an op uses few values)
    recorded = [-1] * size
    # per buffer (by id): its accesses so far, and its writes so far
    by_buffer: dict[int, tuple[list[tuple[int, Access]], list[tuple[int, Access]]]] = {}
    # A kind no op of the group sets orders nothing (its readers only wait for a
    # writer that never comes), so only the kinds set in the group get an order.
    written = {k for fx in plan.effects if fx.writes for k in fx.writes}
    orders = [_SettingOrder(k) for k in KINDS if k in written and k not in plan.remat]
    last_barrier: int | None = None

    def top_level(value: SSAValue) -> int | None:
        owner = value.owner
        n = position.get(id(owner))
        if n is not None:  # the common case: a result of a top-level op
            return n
        op = owner.parent_op() if isinstance(owner, Block) else owner
        while op is not None and op.parent is not block:
            op = op.parent_op()
        return position.get(id(op)) if op is not None else None

    get = position.get
    effects = plan.effects
    outside: dict[int, tuple[SSAValue, int | None]] = {}
    for n, op in enumerate(ops):
        count = 0
        if op.regions:
            # the operands of the ops inside, but for the values defined by those ops
            # (their own top-level op is `op`: no edge)
            nested = forms.walk(op)
            inside = {id(inner) for inner in nested}
            operands = [v for inner in nested for v in inner._operands if id(v.owner) not in inside]
        else:
            operands = op._operands
        for operand in operands:
            p = get(id(operand.owner))  # (the common case of `top_level`, inlined)
            if p is None:
                # a value from outside the group or from inside a region op: its
                # top-level op (or None) found once, not by a walk up per use
                hit = outside.get(id(operand))
                if hit is None:
                    hit = outside[id(operand)] = (operand, top_level(operand))
                p = hit[1]
                if p is None:
                    continue
            if p != n and recorded[p] != n:
                recorded[p] = n
                succs[p].append(n)
                count += 1
        fx = effects[n]
        if last_barrier is None and not fx.barrier and not fx.accesses:
            if not orders or not (fx.reads or fx.writes):
                waiting[n] = count
                continue
        # the other constraints, gathered in a set first
        deps: set[int] = set()
        if last_barrier is not None:
            deps.add(last_barrier)
        if fx.barrier:
            # After every earlier op: those before the last barrier already are before
            # it (an edge the scheduler would only count again).
            deps.update(range(0 if last_barrier is None else last_barrier, n))
            last_barrier = n
        for acc in fx.accesses:
            seen = by_buffer.get(id(acc.buffer))
            if seen is None:
                seen = by_buffer[id(acc.buffer)] = ([], [])
            # a write is ordered after every access, a read after the writes only
            for m, prev in reversed(seen[0] if acc.write else seen[1]):
                if m == n or not (prev.write or acc.write) or prev.disjoint(acc):
                    continue
                deps.add(m)
                if prev.write and prev.window is not None and prev.window == acc.window:
                    break  # everything before `prev` that overlaps is ordered before it
            seen[0].append((n, acc))
            if acc.write:
                seen[1].append((n, acc))
        if orders and (fx.reads or fx.writes):
            reads, writes = fx.reads, fx.writes
            for order in orders:
                if order.kind in reads or order.kind in writes:  # (else `add` does nothing)
                    order.add(n, fx, deps)
        deps.discard(n)  # (only a setting order can point at `n` itself)
        for m in deps:
            if recorded[m] != n:
                recorded[m] = n
                succs[m].append(n)
                count += 1
        waiting[n] = count
    return succs, waiting


def interleave(
    ops: Sequence[Operation], ids: Sequence[int], forms: IndexForms, plan: SettingsPlan
) -> list[int]:
    """A dependency-respecting order of `ops` that pairs op p of iteration k with op p-1
    of iteration k+1 (the smallest `local position + iteration` first)."""
    succs, waiting = dependencies(ops, forms, plan)
    order = schedule(succs, waiting, priorities(ids))
    assert len(order) == len(ops), "stitch: dependency cycle"
    return order


def priorities(ids: Sequence[int]) -> list[int]:
    """Per op (`ids`: their iterations), the priority (local position + iteration,
    iteration, index) as one int, ordered as the tuple is (each part is below the
    factor it is multiplied by): the heap then compares ints and makes no tuple per op."""
    size = len(ids)
    if not size:
        return []
    first = min(ids)
    span = max(ids) - first + 1
    priority: list[int] = []
    if ids == sorted(ids):
        # The common case, a group's iterations one after the other: within the run of
        # iteration i starting at index `start`, local = n - start, so the priority
        # grows by span * size + 1 from one op to the next (a range per iteration).
        step = span * size + 1
        for i in sorted(set(ids)):
            start, end = bisect_left(ids, i), bisect_right(ids, i)
            low = (i - first) * (span + 1) * size + start
            priority.extend(range(low, low + (end - start) * step, step))
        return priority
    counts: dict[int, int] = {}
    for n, i in enumerate(ids):
        local = counts.get(i, 0)
        counts[i] = local + 1
        priority.append(((local + i - first) * span + (i - first)) * size + n)
    return priority


def schedule(succs: Sequence[list[int]], waiting: list[int], priority: list[int]) -> list[int]:
    """The list schedule: repeatedly the ready op (no earlier op left to wait for,
    `waiting` counts them down) of the smallest priority (distinct ints >= 0, the op's
    index modulo the number of ops)."""
    size = len(priority)
    heap = [priority[n] for n in range(size) if not waiting[n]]
    if not heap:
        return []
    heapq.heapify(heap)
    order: list[int] = []
    pop, push, pushpop = heapq.heappop, heapq.heappush, heapq.heappushpop
    item = pop(heap)
    while True:
        n = item % size
        order.append(n)
        held = -1  # the last op made ready, pushed and popped in one step below
        for s in succs[n]:
            waiting[s] -= 1
            if not waiting[s]:
                if held >= 0:
                    push(heap, held)
                held = priority[s]
        if held >= 0:
            # (push, then pop the smallest: without a heap operation when `held` is
            # below every item in it, as along a chain of dependent ops)
            item = pushpop(heap, held)
        elif heap:
            item = pop(heap)
        else:
            return order


__all__ = ["SettingsPlan", "dependencies", "interleave", "priorities", "schedule"]
