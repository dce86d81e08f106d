"""What the frontend builds for each PyPTO construct, checked on the IR structure.

Expected values come from the PyPTO semantics of the source (trip counts, normalised
unroll lists, shapes worked out by hand), not from the frontend's own output.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, FileLineColLoc, ModuleOp, TensorType
from xdsl.ir import Operation

from frontends import get_all_frontends
from frontends.pypto import PyptoFrontend, load_file, load_function, load_source
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.dialect.pto import constant_index

DATA = Path(__file__).parent / "data"


def kernel(source: str, name: str | None = None) -> pto.KernelOp:
    module = load_source("import pypto\n" + inspect.cleandoc(source) + "\n", "k.py")
    kernels = [op for op in module.ops if isinstance(op, pto.KernelOp)]
    if name is None:
        assert len(kernels) == 1
        return kernels[0]
    return next(k for k in kernels if k.sym_name.data == name)


def ops(root: Operation, cls: type[Operation]) -> list:
    return [op for op in root.walk() if isinstance(op, cls)]


def shape(value) -> list[int]:
    return list(value.type.get_shape())


def test_loop_forms_and_unroll_normalisation() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([12, 4], pypto.DT_FP32), out: pypto.Tensor([12, 4], pypto.DT_FP32)):
            for i in pypto.loop(6, name="a", idx_name="ia", unroll_list=[2, 4]):
                pypto.assemble(pypto.view(x, [1, 4], [i, 0]), [i, 0], out)
            for j in pypto.loop(2, 12, 3):
                pypto.assemble(pypto.view(x, [1, 4], [j, 0]), [j, 0], out)
        """
    )
    a, b = ops(k, pto.LoopOp)
    assert (constant_index(a.lower_bound), constant_index(a.upper_bound)) == (0, 6)
    assert a.loop_name.data == "a" and a.idx_name.data == "ia"
    assert a.factors == [4, 2, 1]  # PyPTO sorts descending and adds 1
    assert [constant_index(v) for v in (b.lower_bound, b.upper_bound, b.step)] == [2, 12, 3]
    assert b.loop_name is None and b.factors == []


def test_loop_unroll_gives_index_and_length() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([12, 4], pypto.DT_FP32), out: pypto.Tensor([12, 4], pypto.DT_FP32)):
            for i, n in pypto.loop_unroll(0, 12, 1, name="t", unroll_list=[4]):
                pypto.set_vec_tile_shapes(n, 4)
                pypto.assemble(pypto.view(x, [n, 4], [i, 0]), [i, 0], out)
        """
    )
    (loop,) = ops(k, pto.LoopUnrollOp)
    assert loop.factors == [4, 1]
    (view,) = ops(k, pto.ViewOp)
    assert view.offsets[0] is loop.induction_var
    assert list(view.sizes) == [loop.chunk_length]
    assert shape(view.result) == [DYNAMIC_INDEX, 4]
    # a tile shape is static: the chunk length stands in as the largest factor
    (setting,) = ops(k, pto.SetVecTileShapesOp)
    assert setting.shape.get_values() == (4, 4)


def test_trace_time_range_and_constant_if() -> None:
    k = kernel(
        """
        PARTIAL = False
        @pypto.frontend.jit
        def k(x: pypto.Tensor([3, 8], pypto.DT_FP32), out: pypto.Tensor([3, 8], pypto.DT_FP32)):
            for r in range(3):
                t = pypto.view(x, [1, 8], [r, 0])
                if PARTIAL:
                    t = pypto.neg(t)
                elif r == 1:
                    t = pypto.exp(t)
                pypto.assemble(t, [r, 0], out)
        """
    )
    assembles = ops(k, pto.AssembleOp)
    assert [a.static_offsets.get_values() for a in assembles] == [(0, 0), (1, 0), (2, 0)]
    assert len(ops(k, pto.ExpOp)) == 1 and not ops(k, pto.NegOp)
    assert not ops(k, pto.LoopOp) and not ops(k, scf.IfOp)


def test_runtime_if_yields_values_assigned_in_both_branches() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
            acc = pypto.tensor([1, 8], pypto.DT_FP32, "acc")
            for i in pypto.loop(4):
                t = pypto.view(x, [1, 8], [i, 0])
                if pypto.is_loop_begin(i):
                    s = t
                    acc[:] = t
                else:
                    if pypto.is_loop_end(i):
                        s = t * 2.0
                    else:
                        s = acc + t
                    acc[:] = s
                pypto.assemble(s, [i, 0], out)
        """
    )
    outer, inner = ops(k, scf.IfOp)
    assert isinstance(outer.cond.owner, pto.IsLoopBeginOp)
    assert isinstance(inner.cond.owner, pto.IsLoopEndOp)
    assert [shape(r) for r in outer.results] == [[1, 8]]
    assert len(inner.results) == 1
    # the value written to out after the `if` is the `if`'s result
    last = ops(k, pto.AssembleOp)[-1]
    assert last.src is outer.results[0]
    # the workspace and `acc[:] = v` at zero offsets
    (ws,) = ops(k, pto.TensorOp)
    assert ws.buffer_name.data == "acc" and shape(ws.result) == [1, 8]
    writes = [a for a in ops(k, pto.AssembleOp) if a.dst is ws.result]
    assert len(writes) == 2 and all(a.static_offsets.get_values() == (0, 0) for a in writes)


def test_memref_used_as_a_tile_is_viewed_whole() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(b: pypto.Tensor([1, 8], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
            pypto.assemble(pypto.sigmoid(b), [0, 0], out)
        """
    )
    (view,) = ops(k, pto.ViewOp)
    assert view.source is k.body.block.args[0]
    assert view.static_offsets.get_values() == (0, 0) and shape(view.result) == [1, 8]
    assert ops(k, pto.SigmoidOp)[0].input is view.result


def test_index_arithmetic_folds_python_and_emits_arith() -> None:
    k = kernel(
        """
        S = 20
        T = 8
        @pypto.frontend.jit
        def k(x: pypto.Tensor([20, 4], pypto.DT_FP32), out: pypto.Tensor([20, 4], pypto.DT_FP32)):
            for i in pypto.loop((S + T - 1) // T):
                cur = pypto.min(S - i * T, T)
                t = pypto.view(x, [T, 4], [i * T] + [0] * 1, valid_shape=[cur, 4])
                pypto.assemble(t, [i * T, 0], out)
        """
    )
    (loop,) = ops(k, pto.LoopOp)
    assert constant_index(loop.upper_bound) == 3  # (20 + 7) // 8, folded
    assert len(ops(k, arith.MinSIOp)) == 1 and len(ops(k, arith.SubiOp)) == 1
    (view,) = ops(k, pto.ViewOp)
    off = view.offsets[0].owner
    assert isinstance(off, arith.MuliOp) and off.lhs is loop.induction_var
    assert constant_index(off.rhs) == 8
    assert view.valid_shape[0].owner.__class__ is arith.MinSIOp


def test_dynamic_dims_shape_and_ceildiv() -> None:
    k = kernel(
        """
        S = pypto.frontend.dynamic("Skv")
        @pypto.frontend.jit
        def k(x: pypto.Tensor([S, 64], pypto.DT_BF16), out: pypto.Tensor([S, 64], pypto.DT_BF16)):
            n = x.shape[0]
            d = x.shape[1]
            for i in pypto.loop(pypto.ceildiv(n, 16)):
                t = pypto.view(x, [16, d], [i * 16, 0], valid_shape=[pypto.min(n - i * 16, 16), d])
                pypto.assemble(t, [i * 16, 0], out)
        """
    )
    assert k.dynamic_names("x") == ["Skv"] and k.dynamic_names("out") == ["Skv"]
    assert shape(k.body.block.args[0]) == [DYNAMIC_INDEX, 64]
    (dim,) = ops(k, memref.DimOp)  # read once, at kernel entry
    assert dim.parent_block() is k.body.block
    (loop,) = ops(k, pto.LoopOp)
    ub = loop.upper_bound.owner
    assert isinstance(ub, arith.CeilDivSIOp) and ub.lhs is dim.result
    (view,) = ops(k, pto.ViewOp)
    assert shape(view.result) == [16, 64]  # `d` is the static 64


def test_python_operators_on_tensors() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([2, 8], pypto.DT_FP32), out: pypto.Tensor([2, 8], pypto.DT_FP32)):
            a = pypto.view(x, [2, 8], [0, 0])
            y = 1.0 - (a + a) * 0.5 / a
            z = -y
            pypto.assemble(z, [0, 0], out)
        """
    )
    (sub,) = ops(k, pto.SubOp)
    assert isinstance(sub.lhs.owner, arith.ConstantOp) and sub.lhs.owner.value.value.data == 1.0
    (mul,) = ops(k, pto.MulOp)
    assert mul.rhs.owner.value.value.data == 0.5
    assert len(ops(k, pto.AddOp)) == 1 and len(ops(k, pto.DivOp)) == 1
    assert ops(k, pto.NegOp)[0].input is sub.result


def test_matmul_shapes_bias_and_trans() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(
            a: pypto.Tensor([2, 16, 32], pypto.DT_BF16),
            b: pypto.Tensor([1, 64, 32], pypto.DT_BF16),
            bias: pypto.Tensor([64], pypto.DT_FP32),
            c: pypto.Tensor([32, 16], pypto.DT_BF16),
            out: pypto.Tensor([2, 16, 64], pypto.DT_FP32),
            out2: pypto.Tensor([16, 16], pypto.DT_FP32),
        ):
            pypto.set_cube_tile_shapes([16, 16], [32, 32], [64, 64], True)
            y = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias})
            pypto.assemble(y, [0, 0, 0], out)
            z = pypto.matmul(c, c, pypto.DT_FP32, a_trans=True)
            pypto.assemble(z, [0, 0], out2)
        """
    )
    y, z = ops(k, pto.MatmulOp)
    assert shape(y.result) == [2, 16, 64] and y.bias is not None and y.b_trans is not None
    assert shape(z.result) == [16, 16] and z.a_trans is not None and z.bias is None
    (cube,) = ops(k, pto.SetCubeTileShapesOp)
    assert cube.enable_split_k is not None and cube.n.get_values() == (64, 64)


def test_cast_modes_topk_reshape_and_settings() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 16], pypto.DT_FP32), v: pypto.Tensor([4, 2], pypto.DT_BF16),
              i: pypto.Tensor([4, 2], pypto.DT_INT32), r: pypto.Tensor([1, 64], pypto.DT_INT8)):
            pypto.set_semantic_label("route")
            t = pypto.view(x, [4, 16], [0, 0])
            vals, idx = pypto.topk(t, 2, -1, True)
            pypto.assemble(pypto.cast(vals, pypto.DT_BF16, pypto.CastMode.CAST_RINT), [0, 0], v)
            pypto.assemble(idx, [0, 0], i)
            q = pypto.reshape(t * 1.0, [1, 64], inplace=True)
            c = pypto.cast(q, pypto.DT_INT8, mode=pypto.CastMode.CAST_TRUNC,
                           satmode=pypto.SaturationMode.ON)
            pypto.assemble(c, [0, 0], r)
        """
    )
    (topk,) = ops(k, pto.TopkOp)
    assert shape(topk.values) == [4, 2] and shape(topk.indices) == [4, 2]
    c1, c2 = ops(k, pto.CastOp)
    assert c1.mode.data == "rint" and c1.satmode is None
    assert c2.mode.data == "trunc" and c2.satmode is not None
    (reshape,) = ops(k, pto.ReshapeOp)
    assert reshape.inplace is not None and shape(reshape.result) == [1, 64]
    assert ops(k, pto.SetSemanticLabelOp)[0].label.data == "route"


def test_families_come_from_the_op_table() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 16], pypto.DT_FP32), out: pypto.Tensor([4, 1], pypto.DT_FP32),
              m: pypto.Tensor([4, 16], pypto.DT_BOOL)):
            t = pypto.view(x, [4, 16], [0, 0])
            u = pypto.relu(pypto.erf(pypto.abs(t)))
            s = pypto.amin(pypto.maximum(u, 0.5), dim=1, keepdim=True)
            pypto.assemble(s, [0, 0], out)
            pypto.assemble(pypto.ge(t, u), [0, 0], m)
        """
    )
    assert [len(ops(k, c)) for c in (pto.ReluOp, pto.ErfOp, pto.AbsOp, pto.MaximumOp)] == [1] * 4
    (amin,) = ops(k, pto.AminOp)
    assert shape(amin.result) == [4, 1]
    (ge,) = ops(k, pto.GeOp)
    assert str(ge.result.type.get_element_type()) == "i1"


def test_helpers_are_inlined_recursively_with_their_settings() -> None:
    k = kernel(
        """
        def _inner(t):
            pypto.set_vec_tile_shapes(2, 8)
            return pypto.exp(t)

        def _outer(t, times=2):
            for _ in range(times):
                t = _inner(t)
            return t

        @pypto.frontend.function
        def _wrapped(t, out):
            out.move(_outer(t, times=3))

        @pypto.frontend.jit
        def k(x: pypto.Tensor([2, 8], pypto.DT_FP32), out: pypto.Tensor([2, 8], pypto.DT_FP32)):
            _wrapped(pypto.view(x, [2, 8], [0, 0]), out)
        """
    )
    assert len(ops(k, pto.ExpOp)) == 3
    assert len(ops(k, pto.SetVecTileShapesOp)) == 3
    (move,) = ops(k, pto.AssembleOp)
    assert isinstance(move.src.owner, pto.ExpOp) and move.dst is k.body.block.args[1]


def test_several_kernels_and_jit_options() -> None:
    source = """
        @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU, "n": 2},
                            pass_options={"vec_nbuffer_setting": {0: 2}})
        def first(x: pypto.Tensor([1, 8], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
            out[:] = x
        @pypto.frontend.jit()
        def second(x: pypto.Tensor([1, 8], pypto.DT_FP32), out: pypto.Tensor([1, 8], pypto.DT_FP32)):
            out[:] = pypto.exp(x)
        """
    first = kernel(source, "first")
    second = kernel(source, "second")
    opts = first.jit_options
    assert opts is not None
    runtime = opts.data["runtime_options"].data
    assert runtime["run_mode"].data == "pypto.RunMode.NPU"
    assert runtime["n"].value.data == 2
    assert opts.data["pass_options"].data["vec_nbuffer_setting"].data["0"].value.data == 2
    assert second.jit_options is None
    assert len(ops(second, pto.ExpOp)) == 1


def test_every_op_has_its_source_location() -> None:
    source = inspect.cleandoc(
        """
        import pypto
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
            for i in pypto.loop(4):
                t = pypto.view(x, [1, 8], [i, 0])
                pypto.assemble(pypto.exp(t), [i, 0], out)
        """
    )
    module = load_source(source, "loc.py")
    lines = source.splitlines()
    for op in module.walk():
        if isinstance(op, ModuleOp | pto.YieldOp):
            continue
        loc = op.location
        assert isinstance(loc, FileLineColLoc), op.name
        assert loc.filename.data == "loc.py"
        text = lines[loc.line.data - 1][loc.column.data - 1 :]
        expected = {
            "pto.kernel": "def k",
            "pto.loop": "pypto.loop(4)",
            "pto.view": "pypto.view(",
            "pto.exp": "pypto.exp(t)",
            "pto.assemble": "pypto.assemble(",
        }.get(op.name)
        if expected is not None:
            assert text.startswith(expected), (op.name, text)


def test_unused_module_level_code_is_harmless() -> None:
    """Module-level torch / os code is an error only if a kernel uses it."""
    module = load_file(DATA / "tail_scale.py")
    assert [k.sym_name.data for k in module.ops] == ["tail_scale"]


def test_load_function_reads_the_module_source() -> None:
    """Only the function's source file is read; its module is never imported (the
    stand-in function here merely claims to live in the kernel file)."""
    namespace: dict = {}
    exec(
        compile("def tail_scale(x, out):\n    pass\n", str(DATA / "tail_scale.py"), "exec"),
        namespace,
    )
    module = load_function(namespace["tail_scale"])
    (k,) = module.ops
    assert isinstance(k, pto.KernelOp) and k.sym_name.data == "tail_scale"
    assert len(ops(k, pto.LoopOp)) == 1


def test_registered_as_the_py_frontend() -> None:
    assert get_all_frontends()["py"]() is PyptoFrontend
    assert PyptoFrontend.name == "py"


@pytest.mark.parametrize("tool", ["tileir-opt", "xdsl-opt"])
def test_opt_tools_read_kernel_files(tool: str) -> None:
    exe = Path(sys.executable).parent / tool
    proc = subprocess.run(
        [str(exe), str(DATA / "online_softmax.py")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "pto.kernel @online_softmax_sum" in proc.stdout
    assert "scf.if" in proc.stdout


def test_tile_results_have_inferred_types() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(w: pypto.Tensor([64, 32], pypto.DT_FP32), ids: pypto.Tensor([3, 8, 32], pypto.DT_INT32),
              x: pypto.Tensor([2, 8, 16], pypto.DT_FP32), out: pypto.Tensor([3, 8, 32], pypto.DT_FP32),
              out2: pypto.Tensor([2, 16, 16], pypto.DT_FP32), sel: pypto.Tensor([8], pypto.DT_INT32)):
            wb = pypto.expand_clone(pypto.unsqueeze(w, 0), [3, 64, 32])
            g = pypto.gather(wb, 1, ids)
            pypto.assemble(g, [0, 0, 0], out)
            s = pypto.index_select(w, 0, sel)
            t = pypto.view(x, [2, 8, 16], [0, 0, 0])
            c = pypto.concat([t, t], dim=1)
            e = pypto.expand_clone(pypto.unsqueeze(pypto.sum(c, 1), 1), [2, 16, 16])
            pypto.assemble(pypto.transpose(e, 1, 2), [0, 0, 0], out2)
            h = pypto.gathermask(t, 1)
        """
    )
    assert shape(ops(k, pto.GatherOp)[0].result) == [3, 8, 32]  # the index's shape
    assert shape(ops(k, pto.IndexSelectOp)[0].result) == [8, 32]
    assert shape(ops(k, pto.ConcatOp)[0].result) == [2, 16, 16]
    assert shape(ops(k, pto.SumOp)[0].result) == [2, 16]
    assert shape(ops(k, pto.UnsqueezeOp)[-1].result) == [2, 1, 16]
    assert shape(ops(k, pto.TransposeOp)[0].result) == [2, 16, 16]
    assert shape(ops(k, pto.GathermaskOp)[0].result) == [2, 8, 8]
    assert all(isinstance(op.results[0].type, TensorType) for op in ops(k, pto.ExpandCloneOp))


@pytest.mark.pypto
def test_load_function_of_a_real_pypto_jit_kernel() -> None:
    """With the real pypto installed, `@pypto.frontend.jit` wraps the function; the
    frontend finds the original and reads its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("online_softmax", DATA / "online_softmax.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module = load_function(mod.online_softmax_sum)
    assert [k.sym_name.data for k in module.ops] == ["online_softmax_sum"]


def test_tensor_slices_are_views() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 24], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32),
              row: pypto.Tensor([24], pypto.DT_FP32)):
            for i in pypto.loop(3):
                t = x[:, i * 8 : (i + 1) * 8]
                out[:] = t[..., -4:] + x[1:3, :4][0]
            row[:] = x[-1]
        """
    )
    views = ops(k, pto.ViewOp)
    first = views[0]
    assert shape(first.result) == [4, 8]  # (i + 1) * 8 - i * 8 folds to 8
    assert first.static_offsets.get_values()[0] == 0 and len(first.offsets) == 1
    assert views[1].static_offsets.get_values() == (0, 4) and shape(views[1].result) == [4, 4]
    assert shape(views[2].result) == [2, 4] and views[2].static_offsets.get_values() == (1, 0)
    # an integer index is a size-1 view and a reshape that drops the dim
    reshapes = ops(k, pto.ReshapeOp)
    assert [shape(r.result) for r in reshapes] == [[4], [24]]
    assert views[-1].static_offsets.get_values() == (3, 0)


def test_loop_unroll_body_traced_per_factor_when_needed() -> None:
    """PyPTO traces a loop_unroll body once per factor with the length a Python int; a
    body that needs it as one becomes one copy per factor."""
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([21, 64], pypto.DT_FP32), out: pypto.Tensor([21, 64], pypto.DT_FP32)):
            for i, n in pypto.loop_unroll(0, 21, 1, unroll_list=[8, 2]):
                if n > 4:
                    rows = 4
                else:
                    rows = 1
                pypto.set_vec_tile_shapes(rows, 64)
                out[i:, :] = pypto.view(x, [n, 64], [i, 0])
        """
    )
    (loop,) = ops(k, pto.LoopUnrollOp)
    tests = ops(k, arith.CmpiOp)
    assert [constant_index(t.rhs) for t in tests] == [8, 2]
    assert all(t.lhs is loop.chunk_length for t in tests)
    assert [shape(v.result) for v in ops(k, pto.ViewOp)] == [[8, 64], [2, 64], [1, 64]]
    tiles = [op.shape.get_values() for op in ops(k, pto.SetVecTileShapesOp)]
    assert tiles == [(4, 64), (1, 64), (1, 64)]


def test_scalar_parameters_take_their_defaults() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32),
              times: int = 3, scale: float = 0.5):
            y = pypto.view(x, [4], [0])
            for _ in range(times):
                y = y * scale
            out[:] = y
        """
    )
    assert k.names == ["x", "out"]
    muls = ops(k, pto.MulOp)
    assert len(muls) == 3 and all(m.rhs.owner.value.value.data == 0.5 for m in muls)


def test_tensor_methods_call_the_pypto_functions() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([8, 4], pypto.DT_FP32)):
            t = pypto.view(x, [4, 8], [0, 0])
            s = t.sum(-1, keepdim=True).expand_clone([4, 8])
            u = (t.exp() - s).reshape([8, 4])
            out.move(u.transpose(0, 1).transpose(0, 1))
        """
    )
    (sum_op,) = ops(k, pto.SumOp)
    assert shape(sum_op.result) == [4, 1] and sum_op.keepdim is not None
    assert shape(ops(k, pto.ExpandCloneOp)[0].result) == [4, 8]
    assert shape(ops(k, pto.ReshapeOp)[0].result) == [8, 4]
    assert len(ops(k, pto.TransposeOp)) == 2
    (move,) = ops(k, pto.AssembleOp)
    assert move.dst is k.body.block.args[1]


def test_augmented_assignment_into_memory() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
            out[:] = x
            for i in pypto.loop(3):
                out[:, 4:] *= 2.0
        """
    )
    (loop,) = ops(k, pto.LoopOp)
    read, mul, write = [op for op in loop.body.block.ops if not isinstance(op, arith.ConstantOp)][
        :3
    ]
    assert isinstance(read, pto.ViewOp) and read.static_offsets.get_values() == (0, 4)
    assert isinstance(mul, pto.MulOp) and mul.lhs is read.result
    assert isinstance(write, pto.AssembleOp) and write.static_offsets.get_values() == (0, 4)


def test_one_kernel_of_a_file() -> None:
    module = load_file(DATA / "dynamic_rows.py", kernel="chunked_copy")
    assert [k.sym_name.data for k in module.ops] == ["chunked_copy"]
    with pytest.raises(TileirError, match="no @pypto.frontend.jit kernel named 'nope'"):
        load_file(DATA / "dynamic_rows.py", kernel="nope")
    with pytest.raises(TileirError, match="error: cannot read"):
        load_file(DATA / "missing.py")


def test_anonymous_dynamic_dims_are_named_after_their_argument() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
              out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
            out[:] = x
        """
    )
    assert k.dynamic_names("x") == ["x_0"] and k.dynamic_names("out") == ["out_0"]
    (view,) = ops(k, pto.ViewOp)
    assert isinstance(view.sizes[0].owner, memref.DimOp)


def test_runtime_if_merges_python_ints_and_index_values() -> None:
    k = kernel(
        """
        @pypto.frontend.jit
        def k(x: pypto.Tensor([16, 8], pypto.DT_FP32), out: pypto.Tensor([16, 8], pypto.DT_FP32)):
            for i in pypto.loop(4):
                if pypto.is_loop_begin(i):
                    start = 0
                    rows = 4
                else:
                    start = i * 4
                    rows = 4
                out[start:, :] = pypto.view(x, [rows, 8], [start, 0])
        """
    )
    (if_op,) = ops(k, scf.IfOp)
    assert [str(r.type) for r in if_op.results] == ["index"]  # `rows` stays the Python 4
    (view,) = ops(k, pto.ViewOp)
    assert view.offsets[0] is if_op.results[0] and shape(view.result) == [4, 8]
    then_yield = if_op.true_region.block.last_op
    assert constant_index(then_yield.operands[0]) == 0
