"""`t.valid_shape` (PyPTO's valid shape of a tensor, an index value per dim) and
`pypto.tensor(shape, dtype)` with run-time sizes (`pto.tensor` with `sizes`).

The Gym-style kernels of `data/jit/jit_valid_shapes.py` (a chunked decay and a matmul
over a zero-padded chunk that read the last valid row at `valid_shape[0] - 1`, a
workspace of a DYNAMIC dim's row count, a workspace sized by an element read) run on the
numpy back end against goldens written here with Python loops over rows, through the
default pipeline and other passes, and through `-t pypto`; under the `pypto` marker the
real pypto 0.2.0 computes them, as written and as emitted. The propagation rules are
checked by a probe kernel whose expected values are what PyPTO 0.2.0 printed for
`valid_shape` on the same ops (`frontends/pypto/valid_shapes.py`)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import TensorType

from frontends.pypto import load_file, load_source
from tileir import parse_module, print_module
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, run_kernel
from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.passes import apply_pipeline

KERNELS = Path(__file__).parent / "data" / "jit" / "jit_valid_shapes.py"
RNG = np.random.default_rng(47)
ROWS = 10  # chunks of 4 (tail 2) and of 8 (tail 2)


# --------------------------------------------------------------------------- cases


def _decay_case():
    x = RNG.standard_normal((ROWS, 16)).astype(np.float32)
    gate = RNG.standard_normal((ROWS, 1)).astype(np.float32)
    out = np.zeros((ROWS, 16), np.float64)
    last = np.zeros((3, 16), np.float64)
    for ci, c in enumerate(range(0, ROWS, 4)):
        end = min(c + 4, ROWS)
        for r in range(c, end):
            out[r] = x[r] * np.exp(float(gate[end - 1, 0]) - float(gate[r, 0]))
        last[ci] = out[end - 1]
    args = [
        ArgSpec("x", x.shape, "f32", (0,)),
        ArgSpec("gate", gate.shape, "f32", (0,)),
        ArgSpec("out", out.shape, "f32", (0,)),
        ArgSpec("last", last.shape, "f32", (0,)),
    ]
    return {"x": x, "gate": gate}, args, {"out": out, "last": last}


def _mix_case():
    gate = RNG.standard_normal((ROWS, 16)).astype(np.float32)
    mix = RNG.standard_normal((8, 8)).astype(np.float32)
    rest = np.zeros((ROWS, 16), np.float64)
    total = np.zeros((2, 16), np.float64)
    for ci, c in enumerate(range(0, ROWS, 8)):
        rows = min(8, ROWS - c)
        padded = np.zeros((8, 16), np.float64)
        padded[:rows] = gate[c : c + rows]
        mixed = [
            [sum(mix[i, k] * padded[k, j] for k in range(8)) for j in range(16)] for i in range(8)
        ]
        mixed = np.array(mixed)
        total[ci] = mixed[7]  # mix has 8 valid rows even in the tail chunk
        for r in range(rows):
            rest[c + r] = mixed[7] - mixed[r]
    args = [
        ArgSpec("gate", gate.shape, "f32", (0,)),
        ArgSpec("mix", mix.shape, "f32"),
        ArgSpec("rest", rest.shape, "f32", (0,)),
        ArgSpec("total", total.shape, "f32", (0,)),
    ]
    return {"gate": gate, "mix": mix}, args, {"rest": rest, "total": total}


def _staged_case():
    x = RNG.standard_normal((ROWS, 16)).astype(np.float32)
    out = np.array([[2.0 * np.exp(float(v)) + float(v) for v in row] for row in x])
    args = [ArgSpec("x", x.shape, "f32", (0,)), ArgSpec("out", out.shape, "f32", (0,))]
    return {"x": x}, args, {"out": out}


def _segment_case():
    x = RNG.standard_normal((ROWS, 16)).astype(np.float32)
    starts = np.array([0, 3, 4, 10], np.int32)
    out = np.zeros((ROWS, 16), np.float64)
    for b in range(3):
        rows = list(range(int(starts[b]), int(starts[b + 1])))
        for dst, src in zip(rows, reversed(rows)):
            out[dst] = 2.0 * x[src]
    args = [
        ArgSpec("x", x.shape, "f32"),
        ArgSpec("starts", starts.shape, "i32"),
        ArgSpec("out", out.shape, "f32"),
    ]
    return {"x": x, "starts": starts}, args, {"out": out}


CASES = {
    "chunk_decay": _decay_case,
    "chunk_mix": _mix_case,
    "staged_rows": _staged_case,
    "segment_reverse": _segment_case,
}
EXACT = ("segment_reverse",)
"""Kernels that only move and double values: bit-exact against the golden."""


def _call(name: str):
    inputs, args, golden = CASES[name]()
    call = {a.name: inputs.get(a.name, np.zeros(a.shape, np.float32)) for a in args}
    return call, inputs, args, golden


def _check(out: dict[str, np.ndarray], golden: dict[str, np.ndarray], name: str) -> None:
    for k, want in golden.items():
        if name in EXACT:
            np.testing.assert_array_equal(out[k], want.astype(np.float32), err_msg=k)
        else:
            np.testing.assert_allclose(out[k], want, rtol=2e-6, atol=2e-6, err_msg=k)


# --------------------------------------------------------------------------- IR


def test_valid_shape_of_a_view_is_its_valid_operand() -> None:
    """`rows = g.valid_shape[0]` is the view's own `actual`; the last row is read at
    `actual - 1` (the tail chunk's own last row)."""
    call, *_ = _call("chunk_decay")
    module = load_file(KERNELS, "chunk_decay", args=call)
    g = next(
        op for op in module.walk() if isinstance(op, pto.ViewOp) and op.result.name_hint == "g"
    )
    (actual,) = g.valid_shape
    assert actual.name_hint == "actual"
    tile_views = [
        op
        for op in module.walk()
        if isinstance(op, pto.ViewOp) and isinstance(op.source.type, TensorType)
    ]
    assert len(tile_views) == 2  # g[rows - 1:rows, :] and y[n - 1:n, :]
    for view in tile_views:
        (offset,) = view.offsets
        assert isinstance(offset.owner, arith.SubiOp) and offset.owner.lhs is actual


def test_valid_shape_of_a_matmul_is_its_operands() -> None:
    """The matmul's valid rows are `mix`'s (8), whatever the padded chunk's: the row
    read is the constant 7."""
    call, *_ = _call("chunk_mix")
    module = load_file(KERNELS, "chunk_mix", args=call)
    (last_row,) = [
        op
        for op in module.walk()
        if isinstance(op, pto.ViewOp) and op.result.name_hint == "last_row"
    ]
    assert last_row.mixed_offsets == [7, 0]


def test_workspace_sizes_are_run_time_values() -> None:
    call, *_ = _call("staged_rows")
    module = load_file(KERNELS, "staged_rows", args=call)
    (ws,) = [op for op in module.walk() if isinstance(op, pto.TensorOp)]
    assert str(ws.result.type) == "memref<?x16xf32>"
    (size,) = ws.sizes
    assert isinstance(size.owner, memref.DimOp)  # x.shape[0] of the DYNAMIC dim
    mix = next(
        op for op in module.walk() if isinstance(op, pto.LoopOp) and op.loop_name.data == "MIX"
    )
    assert mix.upper_bound is size  # stage.shape[0] is the size it was made with
    call, *_ = _call("segment_reverse")
    module = load_file(KERNELS, "segment_reverse", args=call)
    (ws,) = [op for op in module.walk() if isinstance(op, pto.TensorOp)]
    assert isinstance(ws.sizes[0].owner, pto.GetTensorDataOp)


def test_a_workspace_with_sizes_round_trips_as_text() -> None:
    call, *_ = _call("segment_reverse")
    module = load_file(KERNELS, "segment_reverse", args=call)
    for generic in (False, True):
        text = print_module(module, generic=generic)
        assert print_module(parse_module(text, "ws.mlir")) == print_module(module)
    assert re.search(r'pto\.tensor "buf" sizes\(%\w+\) : memref<\?x16xf32>', print_module(module))


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "pipeline", [None, "default", "loop-fusion,sink-invariants", "coarsen{factor=2}"]
)
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_on_the_numpy_back_end(name: str, pipeline: str | None) -> None:
    call, inputs, _, golden = _call(name)
    module = load_file(KERNELS, name, args=call)
    if pipeline is not None:
        apply_pipeline(module, pipeline)
    _check(run(module, call, name), golden, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_kernels_compute_the_same(name: str) -> None:
    """The valid shapes are written back as the values they are (`cur - 1`), the
    workspace as `pypto.tensor([<size>, 16], ...)`; read back, the kernel computes the
    golden."""
    call, _, _, golden = _call(name)
    source = emit(load_file(KERNELS, name, args=call))
    assert "valid_shape[" not in source
    if name in ("staged_rows", "segment_reverse"):
        assert re.search(r"pypto\.tensor\(\[\w+(\.shape\[0\])?, 16\], pypto\.DT_FP32, ", source), (
            source
        )
    back = load_source(source, f"{name}_emitted.py", args=call)
    _check(run(back, call, name), golden, name)


LOOP_SIZED = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32)):
    for i in pypto.loop(0, 8, 1, name="ROWS", idx_name="i", unroll_list=[4, 1]):
        pypto.set_vec_tile_shapes(1, 16)
        prefix = pypto.tensor([i + 1, 16], pypto.DT_FP32, "prefix")
        prefix[i:i + 1, :] = pypto.view(x, [1, 16], [i, 0]) * 3.0
        out[i:i + 1, :] = pypto.view(prefix, [1, 16], [prefix.shape[0] - 1, 0])
"""


@pytest.mark.parametrize(
    "pipeline", [None, "default", "loop-unroll,stitch{max-functions=2}", "emit"]
)
def test_a_workspace_sized_by_the_loop_index(pipeline: str | None) -> None:
    """A workspace made in each iteration with the loop index in its shape (PyPTO 0.2.0's
    own interpreter keeps the first iteration's size: numpy only); its last row is the
    one written, so out = 3 * x row by row. The unrolled copies each size their own."""
    module = load_source(LOOP_SIZED, "rows.py")
    if pipeline == "emit":
        source = emit(module)
        assert re.search(r"pypto\.tensor\(\[\w+, 16\], pypto\.DT_FP32, \"prefix\"\)", source), (
            source
        )
        module = load_source(source, "rows_emitted.py")
    elif pipeline is not None:
        apply_pipeline(module, pipeline)
        workspaces = [op for op in module.walk() if isinstance(op, pto.TensorOp)]
        assert len(workspaces) == 4  # unrolled by 4 (8 iterations: no tail loop)
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    out = run(module, {"x": x})["out"]
    np.testing.assert_array_equal(out, x * np.float32(3.0))


# --------------------------------------------------------------------------- rules

PROBE = """\
import pypto

PROBES = [
    ("x", lambda t: t["x"].valid_shape[0]),
    ("ws", lambda t: t["ws"].valid_shape[0]),
    ("v", lambda t: t["v"].valid_shape[0]),
    ("exp", lambda t: t["v"].exp().valid_shape[0]),
    ("cast", lambda t: pypto.cast(t["u"], pypto.DT_BF16).valid_shape[1]),
    ("v+u 0", lambda t: (t["v"] + t["u"]).valid_shape[0]),
    ("v+u 1", lambda t: (t["v"] + t["u"]).valid_shape[1]),
    ("u+v 0", lambda t: (t["u"] + t["v"]).valid_shape[0]),
    ("u*v 1", lambda t: (t["u"] * t["v"]).valid_shape[1]),
    ("col+u 0", lambda t: (t["col"] + t["u"]).valid_shape[0]),
    ("col+u 1", lambda t: (t["col"] + t["u"]).valid_shape[1]),
    ("v+row 1", lambda t: (t["v"] + t["row"]).valid_shape[1]),
    ("full+v", lambda t: (pypto.full([4, 16], 1.0, pypto.DT_FP32) + t["v"]).valid_shape[0]),
    ("full valid", lambda t: pypto.full([4, 16], 1.0, pypto.DT_FP32, valid_shape=[t["b"], 16]).valid_shape[0]),
    ("v*2", lambda t: (t["v"] * 2.0).valid_shape[0]),
    ("where", lambda t: pypto.where(t["u"] < t["v"], t["v"], t["u"]).valid_shape[0]),
    ("sum keep 0", lambda t: pypto.sum(t["v"], -1, keepdim=True).valid_shape[0]),
    ("sum keep 1", lambda t: pypto.sum(t["v"], -1, keepdim=True).valid_shape[1]),
    ("sum dim0", lambda t: pypto.sum(t["u"], 0).valid_shape[0]),
    ("transpose", lambda t: pypto.transpose(t["u"], 0, 1).valid_shape[1]),
    ("unsqueeze", lambda t: pypto.unsqueeze(t["v"], 0).valid_shape[1]),
    ("matmul m", lambda t: pypto.matmul(t["v"], t["w"], pypto.DT_FP32).valid_shape[0]),
    ("matmul n", lambda t: pypto.matmul(t["v"], t["w"], pypto.DT_FP32).valid_shape[1]),
    ("matmul b_trans", lambda t: pypto.matmul(t["u"], t["u"], pypto.DT_FP32, b_trans=True).valid_shape[1]),
    ("matmul a_trans", lambda t: pypto.matmul(t["u"], t["u"], pypto.DT_FP32, a_trans=True).valid_shape[0]),
    ("slice", lambda t: t["v"][1:3, :].valid_shape[0]),
    ("slice cols", lambda t: t["v"][2:4, 4:12].valid_shape[1]),
    ("reshape", lambda t: pypto.reshape(t["v"], [2, 2, 16]).valid_shape[0]),
    ("reshape valid", lambda t: pypto.reshape(t["v"], [2, 2, 16], valid_shape=[t["b"], 2, 16]).valid_shape[0]),
    ("fillpad", lambda t: pypto.fillpad(t["u"], "constant", 0.0).valid_shape[0]),
    ("concat", lambda t: pypto.concat([t["v"], t["u"]], 1).valid_shape[1]),
    ("expand", lambda t: pypto.expand_clone(t["col"], [4, 16]).valid_shape[0]),
    ("topk k", lambda t: pypto.topk(t["v"], 2, -1)[0].valid_shape[1]),
    ("topk rows", lambda t: pypto.topk(t["v"], 2, -1)[1].valid_shape[0]),
    ("gather", lambda t: pypto.gather(t["v"], 1, t["ix"]).valid_shape[0]),
    ("scatter", lambda t: pypto.scatter(t["u"], 1, t["ix"], t["v"]).valid_shape[1]),
    ("gathermask 1", lambda t: pypto.gathermask(t["u7"], 1).valid_shape[1]),
    ("gathermask 2", lambda t: pypto.gathermask(t["u7"], 2).valid_shape[1]),
    ("gathermask 7", lambda t: pypto.gathermask(t["u7"], 7).valid_shape[1]),
    ("where scalars", lambda t: pypto.where(t["u"] < t["v"], 0.0, 1.0).valid_shape[1]),
    ("logical_not", lambda t: pypto.logical_not(t["u"] < t["v"]).valid_shape[0]),
    ("div", lambda t: (t["u"] / t["v"]).valid_shape[1]),
    ("view of view", lambda t: pypto.view(pypto.view(t["u"], [2, 16], [1, 0]), [1, 16], [1, 0]).valid_shape[0]),
]


@pypto.frontend.jit()
def probe(
    x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
    w: pypto.Tensor([16, 8], pypto.DT_FP32),
    idx: pypto.Tensor([4, 16], pypto.DT_INT32),
    ramp: pypto.Tensor([64, 1], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, len(PROBES)], pypto.DT_FP32),
):
    n = x.shape[0]
    for i in pypto.loop(0, n, 4, name="L", idx_name="i"):
        a = (n - i).min(4)
        b = (n - i).min(3)
        pypto.set_vec_tile_shapes(4, 16)
        t = {
            "x": x, "i": i, "b": b, "w": w,
            "ws": pypto.tensor([a, 16], pypto.DT_FP32, "ws"),
            "v": pypto.view(x, [4, 16], [i, 0], valid_shape=[a, 16]),
            "u": pypto.view(x, [4, 16], [i, 0], valid_shape=[b, 8]),
            "col": pypto.view(x, [4, 1], [i, 0], valid_shape=[b, 1]),
            "row": pypto.view(x, [1, 16], [i, 0], valid_shape=[1, 8]),
            "u7": pypto.view(x, [4, 16], [i, 0], valid_shape=[b, 7]),
            "ix": pypto.view(idx, [4, 16], [0, 0], valid_shape=[b, 8]),
        }
        for k, (_, read) in enumerate(PROBES):
            out[i // 4 : i // 4 + 1, k : k + 1] = pypto.view(ramp, [1, 1], [read(t), 0])
"""

EXPECTED = {
    # what PyPTO 0.2.0 printed for the same expressions (a = min(n - i, 4), b = min(n - i, 3))
    "x": lambda n, a, b: n,
    "ws": lambda n, a, b: a,
    "v": lambda n, a, b: a,
    "exp": lambda n, a, b: a,
    "cast": lambda n, a, b: 8,
    "v+u 0": lambda n, a, b: a,
    "v+u 1": lambda n, a, b: 16,
    "u+v 0": lambda n, a, b: b,
    "u*v 1": lambda n, a, b: 8,
    "col+u 0": lambda n, a, b: b,
    "col+u 1": lambda n, a, b: 8,
    "v+row 1": lambda n, a, b: 16,
    "full+v": lambda n, a, b: 4,
    "full valid": lambda n, a, b: b,
    "v*2": lambda n, a, b: a,
    "where": lambda n, a, b: b,
    "sum keep 0": lambda n, a, b: a,
    "sum keep 1": lambda n, a, b: 1,
    "sum dim0": lambda n, a, b: 8,
    "transpose": lambda n, a, b: b,
    "unsqueeze": lambda n, a, b: a,
    "matmul m": lambda n, a, b: a,
    "matmul n": lambda n, a, b: 8,
    "matmul b_trans": lambda n, a, b: b,
    "matmul a_trans": lambda n, a, b: 8,
    "slice": lambda n, a, b: max(0, min(2, a - 1)),
    "slice cols": lambda n, a, b: 8,
    "reshape": lambda n, a, b: 2,
    "reshape valid": lambda n, a, b: b,
    "fillpad": lambda n, a, b: 4,
    "concat": lambda n, a, b: 32,
    "expand": lambda n, a, b: 4,
    "topk k": lambda n, a, b: 2,
    "topk rows": lambda n, a, b: a,
    "gather": lambda n, a, b: b,
    "scatter": lambda n, a, b: 8,
    "gathermask 1": lambda n, a, b: 3,
    "gathermask 2": lambda n, a, b: 3,
    "gathermask 7": lambda n, a, b: 7,
    "where scalars": lambda n, a, b: 8,
    "logical_not": lambda n, a, b: b,
    "div": lambda n, a, b: 8,
    "view of view": lambda n, a, b: max(0, min(1, max(0, min(2, b - 1)) - 1)),
}


@pytest.mark.parametrize("n", [10, 5])
def test_valid_shape_follows_pypto_through_the_ops(n: int) -> None:
    module = load_source(PROBE, "probe.py")
    x = RNG.standard_normal((n, 16)).astype(np.float32)
    blocks = -(-n // 4)
    inputs = {
        "x": x,
        "w": np.zeros((16, 8), np.float32),
        "idx": np.zeros((4, 16), np.int32),
        "ramp": np.arange(64, dtype=np.float32).reshape(64, 1),
        "out": np.zeros((blocks, len(EXPECTED)), np.float32),
    }
    out = run(module, inputs)["out"]
    names = list(EXPECTED)
    for blk in range(blocks):
        i = 4 * blk
        a, b = min(n - i, 4), min(n - i, 3)
        got = {name: int(out[blk, k]) for k, name in enumerate(names)}
        want = {name: rule(n, a, b) for name, rule in EXPECTED.items()}
        assert got == want, (i, {k: (got[k], want[k]) for k in names if got[k] != want[k]})


def test_a_window_of_an_argument_is_clamped_to_it() -> None:
    """`x[i:i + 4, :]` of a DYNAMIC dim, without `valid_shape`: PyPTO's valid rows are
    `GetViewValidShapeDim(n, i, 4)`, `max(0, min(4, n - i))`, built from `arith`."""
    source = (
        HEADER
        + "        rows = x[i:i + 4, :].valid_shape[0]\n        out[i:, 0:] = v[0:1, :] * 0.0 + rows\n"
    )
    module = load_source(source, "window.py")
    top = next(op for op in module.walk() if isinstance(op, arith.MaxSIOp))
    low = top.lhs.owner
    assert isinstance(low, arith.MinSIOp) and top.rhs.owner.value.value.data == 0
    assert isinstance(low.lhs.owner, arith.SubiOp) and low.rhs.owner.value.value.data == 4
    loop = next(op for op in module.walk() if isinstance(op, pto.LoopOp))
    assert low.lhs.owner.rhs is loop.body.block.args[0]


# --------------------------------------------------------------------------- errors

HEADER = """\
import pypto


@pypto.frontend.jit()
def k(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    n = x.shape[0]
    for i in pypto.loop(0, n, 4, name="L", idx_name="i"):
        pypto.set_vec_tile_shapes(4, 16)
        v = pypto.view(x, [4, 16], [i, 0], valid_shape=[(n - i).min(4), 16])
"""

ERRORS = [
    (
        "if pypto.is_loop_begin(i):\n    t = v.exp()\nelse:\n    t = v\nr = t.valid_shape[0]\n",
        "14:13: error: tileir does not know the valid shape PyPTO gives the result of 'scf.if'",
    ),
    (
        "ws = pypto.tensor([n, 0], pypto.DT_FP32)\n",
        "10:14: error: pypto.tensor shape needs sizes > 0, got 0",
    ),
    (
        "ws = pypto.tensor([n, 1.5], pypto.DT_FP32)\n",
        "10:14: error: pypto.tensor shape must hold integers or index values, got float 1.5",
    ),
    (
        "r = v.valid_shape[2]\n",
        "10:13: error: cannot index list [<index>, 16] with int 2 (list index out of range)",
    ),
]


@pytest.mark.parametrize(("body", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_misuse_is_a_located_error(body: str, message: str) -> None:
    source = HEADER + textwrap.indent(body, "        ")
    with pytest.raises(TileirError) as info:
        load_source(source, "bad.py")
    text = str(info.value)
    assert f"bad.py:{message}" in text, text


def test_a_negative_run_time_size_is_a_located_error() -> None:
    source = (
        HEADER
        + "        ws = pypto.tensor([n - 20, 16], pypto.DT_FP32, 'tmp')\n        ws[:] = v\n"
    )
    module = load_source(source, "neg.py")
    x = np.zeros((10, 16), np.float32)
    with pytest.raises(
        TileirError, match=r"neg\.py:10:14: error: .*'tmp' of shape \[-10, 16\]: a size is negative"
    ):
        run(module, {"x": x, "out": x.copy()})


# --------------------------------------------------------------------------- real pypto


@pytest.mark.pypto
@pytest.mark.parametrize(
    ("name", "source"),
    [(name, source) for name in sorted(CASES) for source in ("as written", "emitted")],
)
def test_kernels_on_real_pypto(name: str, source: str, tmp_path: Path) -> None:
    call, inputs, args, golden = _call(name)
    path = KERNELS
    if source == "emitted":
        path = tmp_path / f"{name}_emitted.py"
        path.write_text(emit(load_file(KERNELS, name, args=call)))
    out = run_kernel(path, name, args, inputs, outputs=sorted(golden), workdir=tmp_path / "w")
    _check(out, golden, name)
