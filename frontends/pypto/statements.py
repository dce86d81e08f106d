"""The evaluator's statements: assignments, `for` (over Python values; `pypto.loop`
goes to the region builder), `while` (on Python values), `if`, `assert`, `return`, nested
`def`s."""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.ir import BlockArgument

from frontends.pypto.kinds import (
    describe,
    is_cond,
    is_index,
    is_mem,
    is_ssa,
    is_tile,
)
from frontends.pypto.limits import MAX_TRACE_STEPS
from frontends.pypto.scope import _BINOPS, LoopControl, ReturnValue, Scope, _holds_ssa
from frontends.pypto.values import BoundMethod, Dynamic, Helper, PyptoRef, TensorSpec


class Statements:
    """Runs a kernel's statements (a mixin of `Evaluator`)."""

    # ----------------------------------------------------------------------- statements

    def exec_body(self, body: Sequence[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self.exec_stmt(stmt, scope)

    def exec_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        self.current = stmt
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            self.fail(
                stmt, f"`{type(stmt).__name__.lower()}` statements are not supported in kernels"
            )
        outer, self.statement = self.statement, stmt
        try:
            method(stmt, scope)
        finally:
            self.statement = outer

    def stmt_Expr(self, stmt: ast.Expr, scope: Scope) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # docstring
        self.eval(stmt.value, scope)

    def stmt_Pass(self, stmt: ast.Pass, scope: Scope) -> None:
        return

    def stmt_Assign(self, stmt: ast.Assign, scope: Scope) -> None:
        value = self.eval(stmt.value, scope)
        for target in stmt.targets:
            self.assign(target, value, scope, stmt.value)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, scope: Scope) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, scope), scope, stmt.value)

    def stmt_AugAssign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        target = stmt.target
        if not isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
            self.fail(
                target, "augmented assignment is only supported on names, attributes and slices"
            )
        if isinstance(target, ast.Name):
            load: ast.expr = ast.Name(target.id, ast.Load())
        elif isinstance(target, ast.Attribute):
            load = ast.Attribute(target.value, target.attr, ast.Load())
        else:  # `acc[:] += v`: read the slice, compute, write it back
            load = ast.Subscript(target.value, target.slice, ast.Load())
        left = self.eval(ast.copy_location(load, target), scope)
        right = self.eval(stmt.value, scope)
        value = self.binop(_BINOPS[type(stmt.op)], left, right, stmt)
        self.assign(target, value, scope, stmt)

    def assign(self, target: ast.expr, value: Any, scope: Scope, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if is_ssa(value) and value.name_hint is None and not isinstance(value, BlockArgument):
                try:
                    value.name_hint = target.id
                except Exception:  # names xDSL does not accept stay unnamed
                    pass
            scope.vars[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            value = self.resolve(value, node)
            if not isinstance(value, list | tuple):
                self.fail(target, f"cannot unpack {describe(value)}")
            star = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if star:
                i = star[0]
                n_after = len(target.elts) - i - 1
                if len(value) < len(target.elts) - 1:
                    self.fail(target, f"not enough values to unpack (got {len(value)})")
                parts = [
                    *value[:i],
                    list(value[i : len(value) - n_after]),
                    *value[len(value) - n_after :],
                ]
                elts = [e.value if isinstance(e, ast.Starred) else e for e in target.elts]
            else:
                if len(value) != len(target.elts):
                    self.fail(
                        target,
                        f"cannot unpack {len(value)} values into {len(target.elts)} names",
                    )
                parts, elts = list(value), target.elts
            for t, v in zip(elts, parts):
                self.assign(t, v, scope, node)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, value, scope)
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, value, scope)
        else:
            self.fail(target, "unsupported assignment target")

    def assign_attribute(self, target: ast.Attribute, value: Any, scope: Scope) -> None:
        """`self.x = v` / `cfg.attr = v`: Python's setattr at trace time, on the user's
        own objects (as PyPTO's frontend runs it). A tensor stored in an attribute inside
        a pypto.loop or a runtime `if` would leave its region unseen, so there it is an
        error (a name is carried out of the region, an attribute is not)."""
        obj = self.resolve(self.eval(target.value, scope), target.value)
        if is_ssa(obj) or isinstance(
            obj, PyptoRef | TensorSpec | Dynamic | Helper | BoundMethod | types.ModuleType
        ):
            self.fail(target, f"cannot assign the attribute `{target.attr}` of {describe(obj)}")
        if self.region_depth > 0 and _holds_ssa(value):
            self.fail(
                target,
                f"storing {describe(value)} in the attribute `{target.attr}` inside "
                "pypto.loop or a runtime `if` is not supported; assign it to a name",
            )
        try:
            setattr(obj, target.attr, value)
        except Exception as e:  # frozen dataclasses, slots, properties ...
            self.fail(
                target, f"cannot assign the attribute `{target.attr}` of {describe(obj)}: {e}"
            )

    def stmt_Return(self, stmt: ast.Return, scope: Scope) -> None:
        frame = self.frames[-1] if self.frames else None
        if frame is None:
            self.fail(stmt, "`return` outside a function")
        if frame.pypto_function and stmt.value is not None:
            self.fail(
                stmt,
                f"@pypto.frontend.function `{frame.name}` cannot return a value (PyPTO rule); "
                "pass an output tensor and write it with out.move(value) or `out[:] = value`",
            )
        if frame.is_kernel and stmt.value is not None:
            self.fail(
                stmt,
                "a kernel cannot return a value; write results into an output argument "
                "with pypto.assemble or `out[:] = value`",
            )
        if self.region_depth > frame.region_depth:
            self.fail(
                stmt,
                "`return` inside pypto.loop or a runtime `if` is not supported; return after it",
            )
        raise ReturnValue(None if stmt.value is None else self.eval(stmt.value, scope))

    def stmt_Assert(self, stmt: ast.Assert, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if is_ssa(cond):
            self.fail(stmt.test, "assert needs a condition known when the kernel is traced")
        if not cond:
            msg = self.eval(stmt.msg, scope) if stmt.msg is not None else None
            self.fail(stmt, f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    def stmt_FunctionDef(self, stmt: ast.FunctionDef, scope: Scope) -> None:
        self.define_function(stmt, scope)

    def stmt_While(self, stmt: ast.While, scope: Scope) -> None:
        """A `while` runs when the kernel is traced, as in PyPTO (whose JIT runs the
        Python): a helper computing tile sizes (`while True: ... break`). Its condition
        must be a Python value then; a run-time loop is `pypto.loop`."""
        while True:
            cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
            if is_ssa(cond):
                self.fail(
                    stmt.test,
                    f"`while` runs when the kernel is traced, so its condition must be known "
                    f"then, got {describe(cond)}; use `for ... in pypto.loop(...)` for a "
                    "run-time loop",
                )
            try:
                taken = bool(cond)
            except Exception:
                self.fail(stmt.test, f"cannot use {describe(cond)} as a condition")
            if not taken:
                self.exec_body(stmt.orelse, scope)
                return
            if not self.trace_iteration(stmt, scope):
                return

    def stmt_Delete(self, stmt: ast.Delete, scope: Scope) -> None:
        """`del a, b`: unbinds local names, as Python does when PyPTO traces the kernel
        (Gym kernels free their names of finished tiles); a tile itself lives on in the
        IR as long as an op uses it."""
        for target in stmt.targets:
            if not isinstance(target, ast.Name):
                self.fail(
                    target, "`del` in a kernel takes names only, not subscripts or attributes"
                )
            if target.id not in scope.vars:
                self.fail(
                    target, f"name `{target.id}` is not defined here, so it cannot be deleted"
                )
            del scope.vars[target.id]

    def stmt_Break(self, stmt: ast.Break, scope: Scope) -> None:
        raise LoopControl("break", stmt)

    def stmt_Continue(self, stmt: ast.Continue, scope: Scope) -> None:
        raise LoopControl("continue", stmt)

    def stmt_Import(self, stmt: ast.Import, scope: Scope) -> None:
        self.fail(stmt, "imports inside a kernel are not supported; import at module level")

    stmt_ImportFrom = stmt_Import  # type: ignore[assignment]

    def stmt_With(self, stmt: ast.With, scope: Scope) -> None:
        self.fail(stmt, "`with` blocks are not supported in kernels")

    # --- for

    def stmt_For(self, stmt: ast.For, scope: Scope) -> None:
        if stmt.orelse:
            self.fail(stmt.orelse[0], "`for ... else` is not supported")
        it = stmt.iter
        if isinstance(it, ast.Call):
            callee = self.eval(it.func, scope)
            if isinstance(callee, PyptoRef) and callee.path in (("loop",), ("loop_unroll",)):
                self.pypto_loop(stmt, callee.path[0], scope)
                return
            if callee is range or callee is builtins.range:
                args = [self.resolve(self.eval(a, scope), a) for a in it.args]
                if it.keywords or any(is_ssa(a) for a in args):
                    bad = next((a for a, v in zip(it.args, args) if is_ssa(v)), it)
                    self.fail(
                        bad,
                        "range() is unrolled when the kernel is traced, so its bounds must be "
                        "constants; use pypto.loop(...) for a runtime trip count",
                    )
                try:
                    values: Any = range(*args)
                except TypeError as e:
                    self.fail(it, str(e))
                self.trace_loop(stmt, values, scope)
                return
            if isinstance(callee, PyptoRef):
                self.fail(it, f"cannot iterate over {callee.dotted}(...); use pypto.loop")
        values = self.resolve(self.eval(it, scope), it)
        if is_ssa(values):
            self.fail(it, f"cannot iterate over {describe(values)}; use pypto.loop")
        try:
            values = list(values)
        except TypeError:
            self.fail(it, f"cannot iterate over {describe(values)}")
        self.trace_loop(stmt, values, scope)

    def trace_step(self, node: ast.AST) -> None:
        """One iteration of a translation-time Python loop, within `MAX_TRACE_STEPS`."""
        self.trace_steps += 1
        if self.trace_steps > MAX_TRACE_STEPS:
            self.fail(
                node,
                f"translation-time Python loops ran more than {MAX_TRACE_STEPS} iterations "
                "while reading this kernel (tileir's limit): `range` / list loops run when the "
                "kernel is traced; use pypto.loop(...) for a large trip count",
            )

    def trace_loop(self, stmt: ast.For, values: Any, scope: Scope) -> None:
        for v in values:
            self.assign(stmt.target, v, scope, stmt.iter)
            if not self.trace_iteration(stmt, scope):
                break

    def trace_iteration(self, stmt: ast.For | ast.While, scope: Scope) -> bool:
        """One iteration of a translation-time `for` / `while` body; False after `break`."""
        self.trace_step(stmt)
        try:
            self.exec_body(stmt.body, scope)
        except LoopControl as c:
            return c.kind != "break"
        return True

    # --- if

    def stmt_If(self, stmt: ast.If, scope: Scope) -> None:
        cond = self.resolve(self.eval(stmt.test, scope), stmt.test)
        if is_tile(cond) or is_mem(cond):
            self.fail(stmt.test, f"`if` on {describe(cond)} is not supported")
        if is_index(cond):
            zero = self.index(0, stmt.test)
            cond = self.emit(arith.CmpiOp(cond, zero, "ne"), stmt.test).results[0]
        if not is_cond(cond):
            try:
                taken = bool(cond)
            except Exception:
                self.fail(stmt.test, f"cannot use {describe(cond)} as a condition")
            if self.loop_traces:
                self.loop_traces[-1].took(stmt, taken)
            self.exec_body(stmt.body if taken else stmt.orelse, scope)
            return
        self.runtime_if(stmt, cond, scope)
