"""The evaluator's calls: argument binding, Python builtins and user callables at
trace time, helpers inlined, PyPTO calls and methods handed to the translator's hooks."""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import SSAValue

from frontends.pypto.kinds import (
    describe,
    is_index,
    is_mem,
    is_ssa,
    is_tile,
    static_shape,
)
from frontends.pypto.scope import (
    MAX_INLINE_DEPTH,
    Frame,
    LoopControl,
    ReturnValue,
    Scope,
    _sig_scalar2,
    _stores_only,
)
from frontends.pypto.standin import JitKernel
from frontends.pypto.values import BoundMethod, Dynamic, Helper, PyptoRef
from tileir.bindings import index as index_ops
from tileir.dialect import pto


class Calls:
    """Evaluates calls (a mixin of `Evaluator`)."""

    # --- calls

    def eval_args(self, node: ast.Call, scope: Scope) -> tuple[list[Any], dict[str, Any]]:
        args = self.eval_elts(node.args, scope)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                d = self.resolve(self.eval(kw.value, scope), kw.value)
                if not isinstance(d, dict):
                    self.fail(kw.value, "** needs a dict")
                kwargs.update(d)
            else:
                kwargs[kw.arg] = self.eval(kw.value, scope)
        return args, kwargs

    def expr_Call(self, node: ast.Call, scope: Scope) -> Any:
        callee = self.resolve(self.eval(node.func, scope), node.func)
        args, kwargs = self.eval_args(node, scope)
        outer, self.call_scope = self.call_scope, scope
        try:
            return self.call(callee, args, kwargs, node)
        finally:
            self.call_scope = outer

    def call(self, callee: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(callee, PyptoRef):
            return self.call_pypto(callee, args, kwargs, node)
        if isinstance(callee, BoundMethod):
            return self.call_method(callee, args, kwargs, node)
        if isinstance(callee, Helper):
            return self.inline(callee, args, kwargs, node)
        if isinstance(callee, JitKernel):
            self.fail(
                node, f"calling the kernel `{callee.fn.__name__}` from a kernel is not supported"
            )
        if isinstance(callee, type) and not callee.__module__ == "builtins":
            # A user class (a NamedTuple, a dataclass): Python builds it, and it may hold
            # tiles and index values as any Python object does.
            try:
                return callee(*[self.resolve(a, node) for a in args], **kwargs)
            except Exception as e:
                self.fail(node, f"{callee.__name__}() raised {type(e).__name__}: {e}")
        if callee in (min, max, builtins.min, builtins.max) and any(
            is_index(self.resolve(a, node)) or isinstance(a, Dynamic) for a in args
        ):
            return self.scalar_func(callee.__name__, args, kwargs, node)
        if callable(callee) and not is_ssa(callee):
            resolved = [self.resolve(a, node) for a in args]
            if any(is_ssa(a) for a in resolved) and callee is not len and not _stores_only(callee):
                name = getattr(callee, "__name__", "this function")
                where = getattr(callee, "__module__", None) or "builtins"
                what = describe(next(a for a in resolved if is_ssa(a)))
                if where == "builtins":
                    self.fail(node, f"{name}() cannot take {what}")
                self.fail(
                    node,
                    f"{where}.{name}() is library code: it runs as Python when the kernel "
                    f"is traced and cannot take {what}",
                )
            if callee is len and any(is_tile(a) or is_mem(a) for a in resolved):
                self.fail(node, "len() of a tensor is not supported; use len(x.shape)")
            try:
                return callee(*resolved, **kwargs)
            except (TypeError, ValueError) as e:
                name = getattr(callee, "__name__", "the function")
                given = ", ".join(describe(a) for a in resolved)
                self.fail(node, f"{name}() cannot take {given or 'these arguments'}: {e}")
            except Exception as e:
                self.fail(node, f"{type(e).__name__}: {e}")
        self.fail(node, f"{describe(callee)} is not callable")

    def bind(
        self,
        sig_fn: Callable[..., None],
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.AST,
        name: str,
    ) -> dict[str, Any]:
        sig = inspect.signature(sig_fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            params = ", ".join(str(p) for p in sig.parameters.values())
            self.fail(node, f"wrong arguments to {name}({params}): {e}")
        bound.apply_defaults()
        return dict(bound.arguments)

    def inline(
        self, helper: Helper, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        fn = helper.node
        if len(self.frames) > MAX_INLINE_DEPTH:
            self.fail(node, f"helper calls nest deeper than {MAX_INLINE_DEPTH} (recursion?)")
        a = fn.args
        params: list[inspect.Parameter] = []
        positional = [*a.posonlyargs, *a.args]
        n_nodef = len(positional) - len(helper.defaults)
        for i, p in enumerate(positional):
            kind = (
                inspect.Parameter.POSITIONAL_ONLY
                if i < len(a.posonlyargs)
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
            )
            default = helper.defaults[i - n_nodef] if i >= n_nodef else inspect.Parameter.empty
            params.append(inspect.Parameter(p.arg, kind, default=default))
        if a.vararg:
            params.append(inspect.Parameter(a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
        for p in a.kwonlyargs:
            params.append(
                inspect.Parameter(
                    p.arg,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=helper.kw_defaults.get(p.arg, inspect.Parameter.empty),
                )
            )
        if a.kwarg:
            params.append(inspect.Parameter(a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
        sig = inspect.Signature(params)
        try:
            bound = sig.bind(*helper.bound, *args, **kwargs)
        except TypeError as e:
            self.fail(node, f"wrong arguments to {fn.name}(): {e}")
        bound.apply_defaults()
        scope = Scope(helper.closure)
        for k, v in bound.arguments.items():
            scope.vars[k] = (
                list(v) if isinstance(v, tuple) and a.vararg and k == a.vararg.arg else v
            )
        if helper.pypto_function:
            given = len(args) + len(kwargs)
            expected = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            if given != expected or a.vararg or a.kwarg:
                self.fail(
                    node,
                    f"@pypto.frontend.function `{fn.name}` takes exactly {expected} arguments "
                    f"(PyPTO applies no defaults), got {given}",
                )
        self.frames.append(
            Frame(fn.name, self.region_depth, False, helper.pypto_function, helper.filename)
        )
        try:
            self.exec_body(fn.body, scope)
        except ReturnValue as r:
            return r.value
        except LoopControl as c:
            self.fail(c.node, f"`{c.kind}` outside a loop")
        finally:
            self.frames.pop()
        return None

    def call_method(
        self, m: BoundMethod, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        if is_index(m.receiver):
            if m.name == "as_variable":
                # PyPTO's hint to keep a symbolic scalar as one variable instead of its
                # expression; a tileir index value is one SSA value already
                self.bind(lambda: None, args, kwargs, node, "SymbolicScalar.as_variable")
                return None
            return self.scalar_func(m.name, [m.receiver, *args], kwargs, node)
        if m.name == "set_cache_policy":
            self.set_cache_policy(m.receiver, args, kwargs, node)
            return None
        if m.name == "move":
            bound = self.bind(lambda other: None, args, kwargs, node, "Tensor.move")
            if not is_mem(m.receiver):
                self.fail(node, "Tensor.move needs a tensor in memory as its receiver")
            src = self.tile(bound["other"], node)
            self.move(m.receiver, src, node)
            return None
        # `f = y.f_; f(x)`: no receiver expression; the name `f` holds no tile, so an
        # in-place update through it is a located error rather than a silent copy
        self.method_receiver = (
            node.func.value if isinstance(node.func, ast.Attribute) else node.func
        )
        return self.call_pypto(PyptoRef((m.name,)), [m.receiver, *args], kwargs, node)

    def move(self, dst: SSAValue, src: SSAValue, node: ast.Call) -> None:
        """`dst.move(src)`: PyPTO's `Tensor::Move` moves `src`'s data into `dst`'s memory
        (row-major, element for element), so a source of another shape with the same
        element count (`cache.move(pypto.scatter_update(cache_2d, ...))` on a 2-D inplace
        reshape of a 4-D cache) lands as its reshape: a static source is reshaped to
        `dst`'s shape, a dynamic one is written through an inplace reshape of `dst` to
        its own shape (`pto.reshape_mem`)."""
        dst_shape, src_shape = static_shape(dst.type), static_shape(src.type)
        if list(dst_shape) != list(src_shape):
            static = DYNAMIC_INDEX not in (*dst_shape, *src_shape)
            if static and math.prod(dst_shape) != math.prod(src_shape):
                self.fail(
                    node,
                    f"Tensor.move of {describe(src)} into {describe(dst)}: the element "
                    "counts differ",
                )
            if static:
                src = self.read_call(
                    "reshape",
                    {"input": src, "shape": list(dst_shape), "valid_shape": None, "inplace": False},
                    node,
                )
            elif len(dst_shape) != len(src_shape):
                dst = self.read_call(
                    "reshape",
                    {
                        "input": dst,
                        "shape": self.shape_of(src, node),
                        "valid_shape": None,
                        "inplace": True,
                    },
                    node,
                )
        self.emit(pto.AssembleOp(src, dst, [0] * len(static_shape(dst.type))), node)

    def scalar_func(
        self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        bound = self.bind(_sig_scalar2, args, kwargs, node, f"pypto.{name}")
        a, b = self.resolve(bound["a"], node), self.resolve(bound["b"], node)
        if not is_ssa(a) and not is_ssa(b):
            if name == "ceildiv":
                return self.py_op(lambda: -(-a // b), node=node)
            return self.py_op(
                lambda: builtins.min(a, b) if name == "min" else builtins.max(a, b), node=node
            )
        op_cls = index_ops.BY_FUNCTION[name]
        return self.emit(op_cls(self.index(a, node), self.index(b, node)), node).results[0]
