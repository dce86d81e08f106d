"""Region building: the kernel, `pypto.loop` / `pypto.loop_unroll` bodies, runtime `if`.

Where PyPTO's tracing and tileir's IR differ, this is where the frontend bridges:

- a `pypto.loop` body is one region, so a value computed in it cannot be used after
  it (state goes through `pypto.tensor` workspaces, as in PyPTO), except a Python int
  counted under runtime `if`s (`paths.py`: PyPTO traces the body once per path) and an
  inplace reshape of memory from outside the loop (moved before it);
- `if` on loop state becomes `scf.if`, whose results are the tiles assigned in both
  branches;
- PyPTO traces a `pypto.loop_unroll` body once per factor with the chunk length a
  Python int; tileir traces it once with the length an index value, and only when
  that fails (the body needs the length as an int) once per factor under
  `scf.if %n == factor`;
- a kernel is built for the shapes and scalars of a call (`specialise`).
"""

from __future__ import annotations

import ast
import inspect
import types
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from frontends.pypto import paths, specialise
from frontends.pypto.evaluator import Evaluator
from frontends.pypto.kinds import (
    describe,
    is_index,
    is_mem,
    is_ssa,
)
from frontends.pypto.loader import SOURCES, KernelEntry, looks_like_jit
from frontends.pypto.paths import LoopTrace
from frontends.pypto.scope import MISSING, Frame, LiveScope, LoopControl, ReturnValue, Scope
from frontends.pypto.standin import JitKernel
from frontends.pypto.values import Dynamic, Poison, PyptoRef, TensorSpec
from tileir.diagnostics import TileirError, TileirWarning
from tileir.dialect import dtypes, pto


def _sig_set_cache_policy(policy, value): ...
def _sig_loop(
    *args,
    name=None,
    idx_name=None,
    unroll_list=None,
    submit_before_loop=False,
    parallel=False,
    **ignored,
): ...


class RegionBuilder(Evaluator):
    """Builds the kernel and the regions of loops and runtime `if`s."""

    # ----------------------------------------------------------------------- kernels

    def jit_options(self, kernel: JitKernel, node: ast.AST) -> DictionaryAttr | None:
        options = {k: self.to_attr(v, node) for k, v in kernel.options.items()}
        return DictionaryAttr(options) if options else None

    def to_attr(self, value: Any, node: ast.AST) -> Attribute:
        """A Python option value as an attribute; enum members keep their dotted name."""
        if isinstance(value, bool):
            return BoolAttr.from_bool(value)
        if isinstance(value, int):
            return IntegerAttr(value, i64)
        if isinstance(value, float):
            return FloatAttr(value, f64)
        if isinstance(value, str):
            return StringAttr(value)
        if isinstance(value, PyptoRef):
            return StringAttr(value.dotted)
        if isinstance(value, dtypes.ElementType):
            return StringAttr(f"pypto.{value.pypto}")
        if value is None:
            return UnitAttr()
        if isinstance(value, list | tuple):
            return ArrayAttr([self.to_attr(v, node) for v in value])
        if isinstance(value, dict):
            return DictionaryAttr({str(k): self.to_attr(v, node) for k, v in value.items()})
        if isinstance(value, Poison):
            self.fail(node, value.reason)
        self.fail(node, f"jit option value {describe(value)} cannot be kept as an attribute")

    def build_kernel(self, entry: KernelEntry, call: dict[str, Any]) -> pto.KernelOp:
        """`entry`'s kernel specialised to `call` (example arguments by parameter name)."""
        fn = entry.kernel.fn
        found = SOURCES.node_of(fn.__code__)
        if not isinstance(found, ast.FunctionDef):
            raise TileirError(
                f"{fn.__code__.co_filename}: error: cannot find the source of the kernel "
                f"{fn.__qualname__}()"
            )
        node = found
        self.frames = [Frame(entry.name, 0, True, filename=fn.__code__.co_filename)]
        self.dyn_values = {}
        self.dyn_sources = {}
        self.workspace_count = 0
        self.promoted = {}
        self.promoted_valid = {}
        self.trace_steps = 0
        self.loop_traces = []
        self.call_hint = ""
        self.tile_settings = {}
        decorator = next(
            (d for d in node.decorator_list if looks_like_jit(d)),
            node.decorator_list[0] if node.decorator_list else node,
        )
        options = self.jit_options(entry.kernel, decorator)
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs:
            bad = a.vararg or a.kwarg or a.kwonlyargs[0]
            self.fail(bad, "kernel parameters must be plain positional parameters")
        positional = [*a.posonlyargs, *a.args]
        try:
            values = specialise.call_values([p.arg for p in positional], call)
        except TileirError as e:
            self.fail(node, str(e))
        signature = inspect.signature(fn)
        args: list[tuple[str, MemRefType]] = []
        dyn_names: dict[str, list[str]] = {}
        written: dict[str, list[str]] = {}
        formats: dict[str, str] = {}
        needs_call: list[str] = []
        constants: dict[str, Any] = {}
        for arg in positional:
            param = signature.parameters[arg.arg]
            spec = self.annotation(fn, param, arg)
            value = values.get(arg.arg, MISSING)
            example = self.example(value, arg)
            if spec is None and example is not None:
                spec = TensorSpec(None, None)  # an unannotated tensor: all from the call
            if not isinstance(spec, TensorSpec):
                # A scalar or config parameter: a constant of this specialisation.
                if example is not None:
                    self.fail(
                        arg, f"`{arg.arg}` is not a tensor parameter, but the call gives {example}"
                    )
                if value is MISSING:
                    value = param.default
                if value is inspect.Parameter.empty:
                    value = Poison(
                        f"kernel parameter `{arg.arg}` has no value: the kernel is built for "
                        f"the scalars of a call; give it with --arg {arg.arg}=VALUE (in Python: "
                        f"load_function(kernel, ..., {arg.arg}=...))"
                    )
                constants[arg.arg] = value
                continue
            if value is not MISSING and example is None:
                self.fail(
                    arg,
                    f"tensor parameter `{arg.arg}` needs a tensor, the call gives {describe(value)}",
                )
            try:
                tp = specialise.tensor_param(arg.arg, spec, example)
            except TileirError as e:
                self.fail(arg.annotation or arg, str(e))
            if tp.dynamic_names:
                dyn_names[arg.arg] = tp.dynamic_names
            if tp.written is not None:
                written[arg.arg] = tp.written
            if spec.format is not None:
                formats[arg.arg] = spec.format
            if tp.call_dims:
                needs_call.append(arg.arg)
            args.append((arg.arg, tp.type))
        if needs_call:
            given = ", ".join(f"--arg {n}=AxBx<dtype>" for n in needs_call)
            self.call_hint = (
                f" (the kernel was read without the call's shapes, so the pypto.STATIC dims of "
                f"{', '.join(f'`{n}`' for n in needs_call)} are run-time values here: give them "
                f"with {given})"
            )
        kernel = pto.KernelOp(entry.name, args, dynamic_dims=dyn_names or None, jit_options=options)
        kernel.location = self.loc(node)
        if written:
            kernel.attributes["shape_annotations"] = DictionaryAttr(
                {k: ArrayAttr([StringAttr(t) for t in v]) for k, v in sorted(written.items())}
            )
        if formats:
            kernel.attributes["tensor_formats"] = DictionaryAttr(
                {k: StringAttr(v) for k, v in sorted(formats.items())}
            )
        block = kernel.body.block
        scope = Scope(LiveScope(fn))
        for (name, _), barg in zip(args, block.args):
            scope.vars[name] = barg
        scope.vars.update(constants)
        # dynamic dim name -> (argument, dim)
        sources: dict[str, tuple[SSAValue, int]] = {}
        for i, (name, t) in enumerate(args):
            for d, s in enumerate(t.get_shape()):
                if s == DYNAMIC_INDEX:
                    dname = dyn_names[name][list(t.get_shape())[:d].count(DYNAMIC_INDEX)]
                    sources.setdefault(dname, (block.args[i], d))
        self.dyn_sources = sources
        self.entry_block = block
        self.entry_last = None
        self.builder = Builder(InsertPoint.at_end(block))
        self.open_blocks = [block]
        self.index_constants = {}
        self.region_depth = 0
        try:
            self.exec_body(node.body, scope)
        except ReturnValue as r:
            if r.value is not None:
                self.fail(node, "kernels return nothing")
        except LoopControl as c:
            self.fail(c.node, f"`{c.kind}` outside a loop")
        finally:
            self.builder = None
            self.frames = []
        block.add_op(pto.YieldOp())
        return kernel

    def set_cache_policy(
        self, x: SSAValue, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> None:
        """`x.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)` on a kernel argument:
        a property of the tensor for PyPTO's compiler, kept on the kernel as
        `cache_policies = {x = {"pypto.CachePolicy.NONE_CACHEABLE" = true}}`. On a view of
        an argument (`w = x2[e, :, :]`, views and reshapes of it) it is kept on that
        argument (the hint is about how its data goes through the L2 cache); on anything
        else (a computed tile, a workspace) it is a hint without effect on values and is
        dropped."""
        bound = self.bind(_sig_set_cache_policy, args, kwargs, node, "Tensor.set_cache_policy")
        policy, value = self.resolve(bound["policy"], node), self.resolve(bound["value"], node)
        if not (isinstance(policy, PyptoRef) and policy.path[:1] == ("CachePolicy",)):
            self.fail(node, f"set_cache_policy takes a pypto.CachePolicy, got {describe(policy)}")
        if not isinstance(value, bool):
            self.fail(node, f"set_cache_policy takes a bool value, got {describe(value)}")
        kernel = self.entry_block.parent_op() if self.entry_block is not None else None
        while isinstance(x.owner, pto.ViewOp | pto.ReshapeOp | pto.ReshapeMemOp):
            x = x.owner.operands[0]
        if not (isinstance(x, BlockArgument) and x.block is self.entry_block) or not isinstance(
            kernel, pto.KernelOp
        ):
            return
        name = kernel.names[x.index]
        old = kernel.attributes.get("cache_policies")
        table = (
            {k: dict(v.data) for k, v in old.data.items()}
            if isinstance(old, DictionaryAttr)
            else {}
        )
        table.setdefault(name, {})[policy.dotted] = BoolAttr.from_bool(value)
        kernel.attributes["cache_policies"] = DictionaryAttr(
            {k: DictionaryAttr(v) for k, v in sorted(table.items())}
        )

    def annotation(self, fn: types.FunctionType, param: inspect.Parameter, arg: ast.arg) -> Any:
        """A parameter's annotation as a value (a string one is evaluated in the
        function's globals, as `typing.get_type_hints` would)."""
        ann = param.annotation
        if ann is inspect.Parameter.empty:
            return None
        if isinstance(ann, str):
            try:
                ann = eval(ann, fn.__globals__)  # noqa: S307 - the user's own module code
            except Exception as e:
                self.fail(arg.annotation or arg, f"cannot evaluate the annotation: {e}")
        if ann in (int, float, bool, str, list, tuple, dict):
            return ann
        return self.live(ann)

    def example(self, value: Any, arg: ast.arg) -> specialise.ArgShape | None:
        try:
            return specialise.example_of(value)
        except TileirError as e:
            self.fail(arg, str(e).removeprefix("error: "))

    def dynamic_value(self, dyn: Dynamic, node: ast.AST) -> SSAValue:
        """The run-time size of a named dynamic dim, read once at kernel entry."""
        if dyn.name in self.dyn_values:
            return self.dyn_values[dyn.name]
        if dyn.name not in self.dyn_sources or self.entry_block is None:
            self.fail(
                node,
                f"dynamic dim {dyn.name!r} is not the size of any argument of this kernel",
            )
        src, d = self.dyn_sources[dyn.name]
        c = arith.ConstantOp(IntegerAttr(d, IndexType()))
        dim = memref.DimOp(src, c)
        for op in (c, dim):
            op.location = self.loc(node)
            point = (
                InsertPoint.after(self.entry_last)
                if self.entry_last is not None
                else InsertPoint.at_start(self.entry_block)
            )
            Rewriter.insert_op(op, point)
            self.entry_last = op
        dim.result.name_hint = dyn.name if dyn.name.isidentifier() else None
        self.dyn_values[dyn.name] = dim.result
        return dim.result

    @contextmanager
    def region(self, block: Block) -> Iterator[None]:
        """Build into `block`, then restore the insertion point."""
        assert self.builder is not None
        saved = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.at_end(block)
        self.region_depth += 1
        self.open_blocks.append(block)
        try:
            yield
        except LoopControl as c:
            raise self.error(
                c.node, f"`{c.kind}` inside pypto.loop or a runtime `if` is not supported"
            ) from None
        finally:
            self.open_blocks.pop()
            # A closed block is not built into again (a rebuilt one starts empty), so
            # its cached constants must not be handed out.
            self.index_constants = {
                k: v for k, v in self.index_constants.items() if k[0] != id(block)
            }
            self.region_depth -= 1
            self.builder.insertion_point = saved

    def pypto_loop(self, stmt: ast.For, kind: str, scope: Scope) -> None:
        call = stmt.iter
        assert isinstance(call, ast.Call)
        args, kwargs = self.eval_args(call, scope)
        bound = self.bind(_sig_loop, args, kwargs, call, f"pypto.{kind}")
        for key in bound["ignored"]:
            # PyPTO's loop reads its keywords with `kwargs.get` and ignores the others
            warnings.warn(
                TileirWarning(
                    f"{self.filename}:{call.lineno}:{call.col_offset + 1}: warning: "
                    f"pypto.{kind}() ignores the keyword `{key}`, as PyPTO does (it reads "
                    f"name, idx_name, unroll_list, submit_before_loop and parallel)"
                ),
                stacklevel=1,
            )
        pos = bound["args"]
        if not 1 <= len(pos) <= 3:
            self.fail(call, f"pypto.{kind}() takes 1 to 3 positional arguments, got {len(pos)}")
        start, stop, step = (0, pos[0], 1) if len(pos) == 1 else (*pos, 1)[:3]
        if isinstance(step, int) and step <= 0:
            self.fail(call, f"pypto.{kind}() step must be positive, got {step}")
        factors: list[int] | None = None
        unroll = bound["unroll_list"]
        if unroll is None and kind == "loop_unroll":
            unroll = [1]
        if isinstance(unroll, set | frozenset):
            # PyPTO reads the list as `set(unroll_list)`: a set is the same factors
            ints_only = all(isinstance(f, int) for f in unroll)
            unroll = sorted(unroll, reverse=True) if ints_only else list(unroll)
        if unroll is not None:
            ints = self.static_ints(unroll, call, "unroll_list")
            try:
                factors = pto.normalize_unroll_list(ints)
            except ValueError as e:
                self.fail(call, str(e))
        for key in ("name", "idx_name"):
            if bound[key] is not None and not isinstance(bound[key], str):
                self.fail(call, f"pypto.{kind}() {key} must be a string")
        if not isinstance(bound["parallel"], bool):
            self.fail(call, f"pypto.{kind}() parallel must be True or False")
        n_vars = 2 if kind == "loop_unroll" else 1
        target = stmt.target
        names: list[ast.expr]
        if n_vars == 1:
            if not isinstance(target, ast.Name):
                self.fail(target, "the pypto.loop variable must be a single name")
            names = [target]
        else:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                self.fail(
                    target,
                    "pypto.loop_unroll yields (index, unroll_length): write `for i, n in ...`",
                )
            names = list(target.elts)
        lb, ub, st = (self.index(v, call) for v in (start, stop, step))
        op_cls = pto.LoopUnrollOp if kind == "loop_unroll" else pto.LoopOp
        body = Block(arg_types=[IndexType()] * n_vars)
        loop = op_cls(
            lb,
            ub,
            st,
            body,
            name=bound["name"],
            idx_name=bound["idx_name"],
            unroll_list=factors,
            parallel=bound["parallel"],
        )
        self.emit(loop, call)
        for barg, name in zip(body.args, names):
            if isinstance(name, ast.Name):
                barg.name_hint = name.id
        before = dict(scope.vars)
        workspaces = self.workspace_count
        trace = LoopTrace()
        self.loop_traces.append(trace)
        try:
            with self.region(body):
                for barg, name in zip(body.args, names):
                    self.assign(name, barg, scope, stmt)
                self.exec_body(stmt.body, scope)
        except TileirError:
            length = names[-1]
            if kind != "loop_unroll" or not (
                isinstance(length, ast.Name) and _mentions(stmt.body, length.id)
            ):
                raise
            # PyPTO traces a loop_unroll body once per factor, with the chunk length a
            # Python int. A body that needs it as one (a static shape, a Python `if` on
            # it) is rebuilt as one copy per factor, chosen by the chunk length.
            for op in reversed(list(body.ops)):
                body.erase_op(op)
            scope.vars.clear()
            scope.vars.update(before)
            self.workspace_count = workspaces
            assert factors is not None
            trace.runtime_ifs.clear()
            trace.python_ifs.clear()
            trace.nested.clear()
            with self.region(body):
                self.assign(names[0], body.args[0], scope, stmt)
                self.unroll_dispatch(stmt, body.args[1], length, factors, scope)
        finally:
            self.loop_traces.pop()
        body.add_op(pto.YieldOp())
        self.leave_region(scope, before, loop.body, stmt, kind, trace)
        if self.loop_traces:
            changed = {
                name: value - before[name]
                for name, value in scope.vars.items()
                if _plain_int(value) and _plain_int(before.get(name))
            }
            self.loop_traces[-1].nested[id(stmt)] = changed

    def unroll_dispatch(
        self, stmt: ast.For, length: SSAValue, name: ast.Name, factors: list[int], scope: Scope
    ) -> None:
        """`scf.if %n == f0 {body, n = f0} else {scf.if %n == f1 ...}`; the last factor
        needs no test: the chunk length is always one of the factors."""
        base = dict(scope.vars)
        factor, rest = factors[0], factors[1:]
        if not rest:
            self.assign(name, factor, scope, stmt)
            self.exec_body(stmt.body, scope)
            return
        call = stmt.iter
        cond = self.emit(arith.CmpiOp(length, self.index(factor, call), "eq"), call).results[0]
        then_block, else_block = Block(), Block()
        with self.region(then_block):
            self.assign(name, factor, scope, stmt)
            self.exec_body(stmt.body, scope)
        scope.vars.clear()
        scope.vars.update(base)
        with self.region(else_block):
            self.unroll_dispatch(stmt, length, name, rest, scope)
        for block in (then_block, else_block):
            block.add_op(scf.YieldOp())
            assert block.last_op is not None
            block.last_op.location = self.loc(call)
        self.emit(scf.IfOp(cond, [], Region(then_block), Region(else_block)), call)

    def leave_region(
        self,
        scope: Scope,
        before: dict[str, Any],
        region: Region,
        stmt: ast.For,
        kind: str,
        trace: LoopTrace,
    ) -> None:
        """Names rebound inside a loop body to values computed there cannot be used after
        it (loops have no results in `pto`): they become errors on use. A Python int
        changed in a body with runtime `if`s takes the value PyPTO's traces leave
        (`paths.py`: PyPTO traces the body once per path)."""
        call = stmt.iter
        assert isinstance(call, ast.Call)
        where = f"pypto.{kind} at line {call.lineno}"
        for name, value in scope.vars.items():
            old = before.get(name, MISSING)
            if old is value:
                continue
            if trace.runtime_ifs and _plain_int(old):
                if _plain_int(value) or self.defined_in(value, region):
                    try:
                        scope.vars[name] = paths.value_after(
                            stmt.body, name, old, trace, call.lineno
                        )
                    except paths.Unknown as e:
                        scope.vars[name] = Poison(
                            f"`{name}` is changed inside the {where}, which PyPTO traces "
                            f"once per path through its runtime `if`s, and {e}; its value "
                            "after the loop is unknown"
                        )
                    continue
            if not self.defined_in(value, region):
                continue
            chain = _alias_chain(value, region)
            if chain is not None:
                _move_before_loop(chain, region)
            else:
                scope.vars[name] = Poison(
                    f"`{name}` is assigned inside the {where}; a value computed in a loop "
                    "body cannot be used after the loop (keep loop state in memory: a "
                    "pypto.tensor workspace)"
                )

    def defined_in(self, value: Any, region: Region) -> bool:
        if isinstance(value, list | tuple):
            return any(self.defined_in(v, region) for v in value)
        if isinstance(value, dict):
            return any(self.defined_in(v, region) for v in value.values())
        if not isinstance(value, SSAValue):
            return False
        owner = value.owner
        op = owner if isinstance(owner, Operation) else owner.parent_op()
        return op is not None and region.is_ancestor(op)

    def runtime_if(self, stmt: ast.If, cond: SSAValue, scope: Scope) -> None:
        if self.loop_traces:
            self.loop_traces[-1].runtime_ifs.append(stmt)
        before = dict(scope.vars)
        then_block, else_block = Block(), Block()
        with self.region(then_block):
            self.exec_body(stmt.body, scope)
        then_vars = dict(scope.vars)
        scope.vars.clear()
        scope.vars.update(before)
        with self.region(else_block):
            self.exec_body(stmt.orelse, scope)
        else_vars = dict(scope.vars)
        merged: dict[str, Any] = {}
        results: list[tuple[str, SSAValue, SSAValue]] = []
        line = stmt.lineno
        for name in dict.fromkeys([*then_vars, *else_vars]):
            tv, ev = then_vars.get(name, MISSING), else_vars.get(name, MISSING)
            tv, ev = self.in_memory(tv), self.in_memory(ev)
            if tv is ev:
                merged[name] = tv
            elif tv is MISSING or ev is MISSING:
                merged[name] = Poison(
                    f"`{name}` is assigned in only one branch of the runtime `if` at line "
                    f"{line}; assign it in both branches to use it after the `if`"
                )
            elif is_ssa(tv) and is_ssa(ev) and tv.type == ev.type and not is_mem(tv):
                results.append((name, tv, ev))
            elif _int_or_index(tv) and _int_or_index(ev) and not _same_python(tv, ev):
                # `start = 0` in one branch, `start = i * T` in the other: an index result
                tv = self.index_in(then_block, tv, stmt)
                ev = self.index_in(else_block, ev, stmt)
                results.append((name, tv, ev))
            elif not is_ssa(tv) and not is_ssa(ev) and _same_python(tv, ev):
                merged[name] = tv
            else:
                what = (
                    f"{describe(tv)} in one and {describe(ev)} in the other"
                    if is_ssa(tv) or is_ssa(ev)
                    else "different values"
                )
                merged[name] = Poison(
                    f"`{name}` gets {what} branch of the runtime `if` at line {line}; it "
                    "cannot be used after the `if`"
                )
        then_block.add_op(scf.YieldOp(*[t for _, t, _ in results]))
        else_block.add_op(scf.YieldOp(*[e for _, _, e in results]))
        for op in (then_block.last_op, else_block.last_op):
            assert op is not None
            op.location = self.loc(stmt)
        else_region = Region(else_block)
        if not results and len(else_block.ops) == 1:
            else_region = Region()  # no `else`: print `scf.if %c { ... }`
        if_op = scf.IfOp(cond, [t.type for _, t, _ in results], Region(then_block), else_region)
        self.emit(if_op, stmt)
        for (name, _, _), res in zip(results, if_op.results):
            res.name_hint = name
            merged[name] = res
        scope.vars.clear()
        scope.vars.update(merged)

    def index_in(self, block: Block, v: int | SSAValue, node: ast.AST) -> SSAValue:
        """`v` as an index value at the end of a branch `block` being built."""
        if isinstance(v, SSAValue):
            return v
        op = arith.ConstantOp(IntegerAttr(v, IndexType()))
        op.location = self.loc(node)
        block.add_op(op)
        return op.result


def _alias_chain(value: Any, region: Region) -> list[Operation] | None:
    """`kv = pypto.reshape(kv_in, [n * h, d], inplace=True)` in a loop body, used after
    the loop: an inplace reshape of memory names the same memory whatever the iteration
    (`pto.reshape_mem` moves no data), so when its operands (and the index arithmetic
    of its sizes) come from outside the loop, it can move before the loop, where
    PyPTO's trace made it once too. The ops to move (operands first), or None when
    `value` is anything else computed in the body (which stays inside)."""
    if not (isinstance(value, SSAValue) and isinstance(value.owner, pto.ReshapeMemOp)):
        return None
    body = region.block
    chain: list[Operation] = []

    def collect(v: SSAValue) -> bool:
        op = v.owner
        if not isinstance(op, Operation) or not region.is_ancestor(op):
            return True  # defined before the loop
        if op.parent_block() is not body:
            return False
        if not isinstance(op, _ALIAS_CHAIN) and op.dialect_name() != "arith":
            return False
        if op in chain:
            return True
        if not all(collect(o) for o in op.operands):
            return False
        chain.append(op)
        return True

    return chain if collect(value) else None


def _move_before_loop(chain: Sequence[Operation], region: Region) -> None:
    """Move `chain` (ops of the loop body `region`, operands first) before the loop."""
    loop = region.parent_op()
    assert loop is not None
    for op in chain:
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(loop))


_ALIAS_CHAIN = (pto.ReshapeMemOp, memref.DimOp)


def _mentions(body: Sequence[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for stmt in body for n in ast.walk(stmt))


def _plain_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_or_index(v: Any) -> bool:
    return is_index(v) or (isinstance(v, int) and not isinstance(v, bool))


def _same_python(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False
