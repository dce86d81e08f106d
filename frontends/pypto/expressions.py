"""The evaluator's expressions: names, constants, operators on Python values, index
values and tiles, subscripts, attributes, containers and comprehensions."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IntegerAttr,
    i1,
)
from xdsl.ir import SSAValue

from frontends.pypto.composites import COMPOSITES
from frontends.pypto.kinds import (
    describe,
    element_of,
    is_cond,
    is_index,
    is_mem,
    is_ssa,
    is_tile,
    static_shape,
)
from frontends.pypto.scope import (
    _BINOPS,
    _CMPOPS,
    _METHODS,
    _PY_BINOPS,
    _PY_CMPOPS,
    _SAFE_BUILTINS,
    Scope,
    _lambda_def,
    _Rank,
)
from frontends.pypto.standin import pypto_name
from frontends.pypto.values import BoundMethod, Dynamic, Helper, Poison, PyptoRef, TensorSpec
from tileir import bindings
from tileir.bindings import index as index_ops
from tileir.bindings.elementwise import elementwise
from tileir.dialect import dtypes, pto


class Expressions:
    """Evaluates a kernel's expressions (a mixin of `Evaluator`)."""

    # ----------------------------------------------------------------------- expressions

    def eval(self, node: ast.expr, scope: Scope) -> Any:
        self.current = node
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            self.fail(node, f"{type(node).__name__} expressions are not supported")
        return method(node, scope)

    def expr_Constant(self, node: ast.Constant, scope: Scope) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name, scope: Scope) -> Any:
        try:
            value = scope.lookup(node.id)
        except KeyError:
            if node.id in _SAFE_BUILTINS:
                return getattr(builtins, node.id)
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            if hasattr(builtins, node.id):
                self.fail(node, f"the builtin `{node.id}` is not supported in kernels")
            self.fail(node, f"name `{node.id}` is not defined")
        if isinstance(value, Poison):
            self.fail(node, value.reason)
        return self.live(value)

    def expr_List(self, node: ast.List, scope: Scope) -> list[Any]:
        return self.eval_elts(node.elts, scope)

    def expr_Tuple(self, node: ast.Tuple, scope: Scope) -> tuple[Any, ...]:
        return tuple(self.eval_elts(node.elts, scope))

    def expr_Set(self, node: ast.Set, scope: Scope) -> set[Any]:
        """`{8, 4, 2, 1}`: a set of Python constants (`unroll_list` takes one)."""
        return self.python_set(self.eval_elts(node.elts, scope), node)

    def python_set(self, values: list[Any], node: ast.AST) -> set[Any]:
        for v in values:
            if is_ssa(v) or isinstance(v, Dynamic):
                self.fail(node, f"a set holds Python constants, got {describe(v)}")
        try:
            return set(values)
        except TypeError as e:
            self.fail(node, f"cannot build a set: {e}")

    def eval_elts(self, elts: Sequence[ast.expr], scope: Scope) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.resolve(self.eval(e.value, scope), e)
                if is_ssa(v) or not isinstance(v, list | tuple | range | str):
                    self.fail(e, f"cannot unpack {describe(v)} with *")
                out.extend(v)
            else:
                out.append(self.eval(e, scope))
        return out

    def expr_Dict(self, node: ast.Dict, scope: Scope) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                d = self.eval(v, scope)
                if not isinstance(d, dict):
                    self.fail(v, "** in a dict literal needs a dict")
                out.update(d)
            else:
                key = self.eval(k, scope)
                try:
                    out[key] = self.eval(v, scope)
                except TypeError as e:
                    self.fail(k, f"{describe(key)} cannot be a dict key ({e})")
        return out

    def expr_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> str:
        parts: list[str] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                x = self.resolve(self.eval(v.value, scope), v)
                if is_ssa(x):
                    self.fail(v, f"cannot format {describe(x)} into a string")
                spec = self.eval(v.format_spec, scope) if v.format_spec is not None else ""
                if v.conversion == ord("r"):
                    x = repr(x)
                elif v.conversion == ord("s"):
                    x = str(x)
                parts.append(format(x, spec))
        return "".join(parts)

    def expr_IfExp(self, node: ast.IfExp, scope: Scope) -> Any:
        cond = self.resolve(self.eval(node.test, scope), node.test)
        if is_ssa(cond):
            self.fail(node.test, "a conditional expression needs a condition known at trace time")
        return self.eval(node.body if cond else node.orelse, scope)

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp, scope: Scope
    ) -> list[Any]:
        """The values of a comprehension's element (a `(key, value)` pair for a dict), in
        Python's order: its `for`s nest left to right, each with its `if`s."""
        out: list[Any] = []

        def run(i: int, inner: Scope) -> None:
            if i == len(node.generators):
                if isinstance(node, ast.DictComp):
                    out.append((self.eval(node.key, inner), self.eval(node.value, inner)))
                else:
                    out.append(self.eval(node.elt, inner))
                return
            gen = node.generators[i]
            if gen.is_async:
                self.fail(node, "async comprehensions are not supported")
            it = self.resolve(self.eval(gen.iter, inner), gen.iter)
            if is_ssa(it):
                self.fail(gen.iter, f"cannot iterate over {describe(it)}")
            for v in it:
                self.trace_step(node)
                self.assign(gen.target, v, inner, gen.iter)
                if all(self.resolve(self.eval(c, inner), c) for c in gen.ifs):
                    run(i + 1, inner)

        run(0, Scope(scope))
        return out

    def expr_ListComp(self, node: ast.ListComp, scope: Scope) -> list[Any]:
        return self.comprehension(node, scope)

    def expr_GeneratorExp(self, node: ast.GeneratorExp, scope: Scope) -> list[Any]:
        """`sum(x for x in ...)`: evaluated eagerly, as a list (trace-time values)."""
        return self.comprehension(node, scope)

    def expr_SetComp(self, node: ast.SetComp, scope: Scope) -> set[Any]:
        return self.python_set(self.comprehension(node, scope), node)

    def expr_DictComp(self, node: ast.DictComp, scope: Scope) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in self.comprehension(node, scope):
            k = self.resolve(k, node.key)
            if is_ssa(k):
                self.fail(node.key, f"a dict key must be a Python value, got {describe(k)}")
            out[k] = v
        return out

    def expr_Lambda(self, node: ast.Lambda, scope: Scope) -> Helper:
        helper = Helper(_lambda_def(node), scope, self.filename)
        helper.defaults = [self.eval(d, scope) for d in node.args.defaults]
        return helper

    def expr_Starred(self, node: ast.Starred, scope: Scope) -> Any:
        self.fail(node, "* is only supported in calls and list literals")

    def expr_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        return self.attribute(base, node.attr, node)

    def pypto_attr(self, ref: PyptoRef, node: ast.AST) -> Any:
        """`pypto.DT_BF16` and `pypto.DataType.DT_BF16` are element types; any other
        name inside pypto stays a name until it is called or used."""
        last = ref.path[-1] if ref.path else ""
        if last.startswith("DT_") and (len(ref.path) == 1 or ref.path[-2] == "DataType"):
            if last not in dtypes.BY_PYPTO:
                known = ", ".join(f"pypto.{t.pypto}" for t in dtypes.ELEMENT_TYPES)
                self.fail(node, f"pypto.{last} has no tileir element type (supported: {known})")
            return dtypes.BY_PYPTO[last]
        return pypto_name(ref.path)

    def attribute(self, base: Any, attr: str, node: ast.AST) -> Any:
        if isinstance(base, PyptoRef):
            return self.pypto_attr(PyptoRef((*base.path, attr)), node)
        if is_index(base) and attr in ("min", "max", "as_variable"):
            # `(S - i * T).min(T)`: PyPTO's SymbolicScalar methods
            return BoundMethod(base, attr)
        if is_tile(base) or is_mem(base):
            if attr == "shape":
                return self.shape_of(base, node)
            if attr == "valid_shape":
                return self.valid_shape_of(base, node)
            if attr == "dtype":
                return dtypes.element_type(element_of(base.type))
            if attr == "dim":
                # An int in newer PyPTO (`rank = x.dim`), a method in 0.2.0 (`x.dim()`).
                return _Rank(len(static_shape(base.type)))
            if attr in bindings.BY_PYPTO or attr in COMPOSITES or attr in _METHODS:
                return BoundMethod(base, attr)
            self.fail(node, f"tensors have no supported attribute `{attr}`")
        if isinstance(base, dtypes.ElementType):
            if attr == "name":
                return base.pypto
            self.fail(node, f"data types have no attribute `{attr}`")
        if isinstance(base, Poison):
            self.fail(node, base.reason)
        if is_ssa(base) or isinstance(base, Helper | BoundMethod | TensorSpec | Dynamic):
            self.fail(node, f"{describe(base)} has no supported attribute `{attr}`")
        if attr.startswith("__"):
            self.fail(node, f"the attribute `{attr}` is not supported in kernels")
        # Any other Python object (a config object, a NamedTuple, a module, a list):
        # its attribute, as Python reads it at trace time.
        try:
            return self.live(getattr(base, attr))
        except AttributeError:
            self.fail(node, f"{describe(base)} has no attribute `{attr}`")
        except Exception as e:
            self.fail(node, f"reading `{attr}` of {describe(base)} raised {type(e).__name__}: {e}")

    def expr_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        base = self.resolve(self.eval(node.value, scope), node.value)
        if is_tile(base) or is_mem(base):
            return self.tensor_subscript(base, node, scope)
        key = self.eval(node.slice, scope)
        key = self.resolve(key, node.slice)
        if is_ssa(key):
            self.fail(node.slice, f"cannot index a Python value with {describe(key)}")
        if not isinstance(base, list | tuple | dict | str | range):
            self.fail(node, f"cannot index {describe(base)}")
        try:
            return base[key]
        except (TypeError, IndexError, KeyError) as e:
            self.fail(node, f"cannot index {describe(base)} with {describe(key)} ({e})")

    def expr_Slice(self, node: ast.Slice, scope: Scope) -> slice:
        parts = [
            None if p is None else self.resolve(self.eval(p, scope), p)
            for p in (node.lower, node.upper, node.step)
        ]
        if any(is_ssa(p) for p in parts):
            self.fail(node, "slices of Python lists need constant bounds")
        return slice(*parts)

    def expr_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        values = [self.resolve(self.eval(v, scope), v) for v in node.values]
        if not any(is_ssa(v) for v in values):
            if isinstance(node.op, ast.And):
                result = values[0]
                for v in values:
                    result = v
                    if not v:
                        break
                return result
            result = values[0]
            for v in values:
                result = v
                if v:
                    break
            return result
        conds = [self.cond(v, n) for v, n in zip(values, node.values)]
        op_cls = arith.AndIOp if isinstance(node.op, ast.And) else arith.OrIOp
        acc = conds[0]
        for c in conds[1:]:
            acc = self.emit(op_cls(acc, c), node).results[0]
        return acc

    def cond(self, v: Any, node: ast.AST) -> SSAValue:
        if is_cond(v):
            return v
        if isinstance(v, bool | int):
            return self.emit(arith.ConstantOp(IntegerAttr(int(bool(v)), i1)), node).results[0]
        self.fail(node, f"expected a condition, got {describe(v)}")

    def expr_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        v = self.resolve(self.eval(node.operand, scope), node.operand)
        if isinstance(node.op, ast.Not):
            if is_ssa(v):
                c = self.cond(v, node)
                true = self.cond(True, node)
                return self.emit(arith.XOrIOp(c, true), node).results[0]
            return not v
        if isinstance(node.op, ast.USub):
            if is_tile(v) or is_mem(v):
                return self.emit(pto.NegOp(self.tile(v, node)), node).results[0]
            if is_index(v):
                return self.binop("-", 0, v, node)
            if not isinstance(v, int | float):
                self.fail(node, f"unary - is not supported on {describe(v)}")
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(v, int):
            self.fail(node, f"unary ~ is not supported on {describe(v)}")
        return ~v

    def py_op(self, fn: Callable[..., Any], *args: Any, node: ast.AST) -> Any:
        try:
            return fn(*args)
        except Exception as e:
            self.fail(node, f"{type(e).__name__}: {e}")

    def expr_BinOp(self, node: ast.BinOp, scope: Scope) -> Any:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        return self.binop(_BINOPS[type(node.op)], left, right, node)

    def binop(self, sym: str, left: Any, right: Any, node: ast.AST) -> Any:
        left, right = self.resolve(left, node), self.resolve(right, node)
        if sym == "@" and all(is_tile(v) or is_mem(v) for v in (left, right)):
            return self.matmul_operator(left, right, node)
        if any(is_tile(v) or is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"operator {sym} is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if is_index(left) or is_index(right) or (is_cond(left) and is_cond(right)):
            # two comparisons are numbers 0 / 1 too (PyPTO's `(n > 4) * (i > 0)`)
            op_cls = index_ops.BY_OPERATOR.get(sym)
            if op_cls is None:
                hint = " (use // for index division)" if sym == "/" else ""
                self.fail(node, f"operator {sym} is not supported on runtime index values{hint}")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(op_cls(a, b), node).results[0]
        if is_ssa(left) or is_ssa(right):
            self.fail(
                node, f"operator {sym} is not supported on {describe(left)} and {describe(right)}"
            )
        try:
            return _PY_BINOPS[sym](left, right)
        except TypeError:
            self.fail(
                node, f"operator {sym} is not supported on {describe(left)} and {describe(right)}"
            )
        except Exception as e:
            self.fail(node, f"{type(e).__name__}: {e}")

    def matmul_operator(self, left: SSAValue, right: SSAValue, node: ast.AST) -> Any:
        """`a @ b`: PyPTO 0.2.0's `Tensor.__matmul__` is `pypto.matmul(a, b, out_dtype)`
        with `out_dtype` the dtype of `b` for FP16 / BF16 / FP32 and INT32 for INT8
        (other dtypes: its RuntimeError, here a located error)."""
        elem = dtypes.element_type(self.tile(right, node).type.get_element_type())
        if elem.pypto not in ("DT_FP16", "DT_BF16", "DT_FP32", "DT_INT8"):
            self.fail(node, f"`@` is not supported on a {elem.pypto} right operand (PyPTO's)")
        out = dtypes.BY_PYPTO["DT_INT32" if elem.pypto == "DT_INT8" else elem.pypto]
        args = {"input": left, "mat2": right, "out_dtype": out}
        extra = {"a_trans": False, "b_trans": False, "c_matrix_nz": False, "extend_params": None}
        return bindings.BY_PYPTO["matmul"].read(self, {**args, **extra}, node)

    def expr_Compare(self, node: ast.Compare, scope: Scope) -> Any:
        left = self.resolve(self.eval(node.left, scope), node.left)
        rights = [self.resolve(self.eval(c, scope), c) for c in node.comparators]
        results: list[Any] = []
        for op, right in zip(node.ops, rights):
            sym = _CMPOPS[type(op)]
            results.append(self.compare(sym, left, right, node))
            left = right
        if len(results) == 1:
            return results[0]
        if not any(is_ssa(r) for r in results):
            return all(results)
        acc = self.cond(results[0], node)
        for r in results[1:]:
            acc = self.emit(arith.AndIOp(acc, self.cond(r, node)), node).results[0]
        return acc

    def compare(self, sym: str, left: Any, right: Any, node: ast.AST) -> Any:
        if sym in ("is", "is not"):  # identity, as Python: `gamma is not None` on a tensor
            return _PY_CMPOPS[sym](left, right)
        if any(is_tile(v) or is_mem(v) for v in (left, right)):
            binding = bindings.BY_OPERATOR.get(sym)
            if binding is None:
                self.fail(node, f"`{sym}` is not supported on tensors")
            return elementwise(self, binding, [left, right], node)
        if is_index(left) or is_index(right):
            if sym not in index_ops.COMPARISONS:
                self.fail(node, f"`{sym}` is not supported on runtime index values")
            a, b = self.index(left, node), self.index(right, node)
            return self.emit(arith.CmpiOp(a, b, index_ops.COMPARISONS[sym]), node).results[0]
        if is_ssa(left) or is_ssa(right):
            self.fail(node, f"`{sym}` is not supported on {describe(left)} and {describe(right)}")
        try:
            return _PY_CMPOPS[sym](left, right)
        except TypeError:
            self.fail(node, f"`{sym}` is not supported on {describe(left)} and {describe(right)}")
