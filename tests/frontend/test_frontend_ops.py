"""The Gym-style kernels of the ops the JIT frontend added (`data/jit/jit_ops.py`:
scatter_update, scatter / scatter_, index_put_, clone, Element, fillpad, arange, zeros,
logical_not, silu, deinterleave, rms_norm) against numpy goldens written here (Python loops over
rows, not tileir's semantics): on tileir's numpy back end, and (marker `pypto`) on the
real pypto 0.2.0, as written and as tileir's `-t pypto` writes them back. silu,
deinterleave and integer logical_not run on the real pypto only as emitted (0.2.0 lacks
them: the writer's helpers stand in)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from frontends.pypto import load_file
from tileir.backends.numpy import run
from tileir.backends.pypto import emit
from tileir.backends.pypto.harness import ArgSpec, element_type, run_kernel

KERNELS = Path(__file__).parent / "data" / "jit" / "jit_ops.py"
RNG = np.random.default_rng(21)


def _source(source: str, name: str, args: dict, tmp_path: Path) -> Path:
    if source == "as written":
        return KERNELS
    path = tmp_path / f"{name}_emitted.py"
    path.write_text(emit(load_file(KERNELS, name, args=args)))
    return path


def _kv_case():
    kv = RNG.standard_normal((8, 1, 1, 16)).astype(np.float32)
    slots = RNG.permutation(12)[:8].reshape(8, 1).astype(np.int64)
    cache = RNG.standard_normal((3, 4, 1, 16)).astype(np.float32)
    golden = cache.copy()
    for t in range(8):
        block, offset = divmod(int(slots[t, 0]), 4)
        golden[block, offset, 0, :] = kv[t, 0, 0, :]
    args = [
        ArgSpec("kv", kv.shape, "f32"),
        ArgSpec("slots", slots.shape, "i64"),
        ArgSpec("cache", cache.shape, "f32"),
    ]
    return {"kv": kv, "slots": slots, "cache": cache}, args, {"cache": golden}


def _table_case():
    table = RNG.standard_normal((8, 16)).astype(np.float32)
    index = np.array([[6, 2], [0, 5]], dtype=np.int64)
    rows = RNG.standard_normal((4, 16)).astype(np.float32)
    golden = table.copy()
    for i in range(2):
        for j in range(2):
            golden[index[i, j]] = rows[i * 2 + j]
    args = [
        ArgSpec("table", table.shape, "f32"),
        ArgSpec("index", index.shape, "i64"),
        ArgSpec("rows", rows.shape, "f32"),
        ArgSpec("out", table.shape, "f32"),
    ]
    return {"table": table, "index": index, "rows": rows}, args, {"out": golden}


def _masked_max_case():
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    golden = np.array([[max(x[r, :5]) + 0.5] for r in range(4)], dtype=np.float32)
    args = [ArgSpec("x", x.shape, "f32"), ArgSpec("out", (4, 1), "f32")]
    return {"x": x}, args, {"out": golden}


def _clone_case():
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    args = [ArgSpec("x", x.shape, "f32"), ArgSpec("out", x.shape, "f32")]
    return {"x": x}, args, {"out": x * 3}


def _ramp_case():
    args = [ArgSpec("ints", (16,), "i32"), ArgSpec("halves", (6,), "f32")]
    golden = {
        "ints": np.array(list(range(3, 35, 2)), dtype=np.int32),
        "halves": np.array([1.0, 1.5, 2.0, 2.5, 3.0, 3.5], dtype=np.float32),
    }
    return {}, args, golden


def _zeros_case():
    x = (RNG.integers(0, 2, (4, 16)) * RNG.standard_normal((4, 16))).astype(np.float32)
    golden = np.array([[1.0 if v == 0 else v for v in row] for row in x], dtype=np.float32)
    args = [ArgSpec("x", x.shape, "f32"), ArgSpec("out", x.shape, "f32")]
    return {"x": x}, args, {"out": golden}


def _silu_case():
    gate = RNG.standard_normal((10, 16)).astype(np.float32)
    up = RNG.standard_normal((10, 16)).astype(np.float32)
    g = gate.astype(np.float64)
    golden = (g / (1 + np.exp(-g)) * up).astype(np.float32)
    args = [ArgSpec(n, gate.shape, "f32") for n in ("gate", "up", "out")]
    return {"gate": gate, "up": up}, args, {"out": golden}


def _subtract_case():
    target = RNG.standard_normal((8, 16)).astype(np.float32)
    rows = np.array([1, 6, 3], dtype=np.int32)
    updates = RNG.standard_normal((3, 16)).astype(np.float32)
    golden = target.copy()
    for k, r in enumerate(rows):
        golden[r] -= updates[k]
    args = [
        ArgSpec("target", target.shape, "f32"),
        ArgSpec("rows", rows.shape, "i32"),
        ArgSpec("updates", updates.shape, "f32"),
    ]
    return {"target": target, "rows": rows, "updates": updates}, args, {"target": golden}


def _one_hot_case():
    index = np.array([[0, 3], [5, 1], [7, 2]], dtype=np.int64)
    bonus = RNG.standard_normal((3, 2)).astype(np.float32)
    golden = np.zeros((3, 8), dtype=np.float32)
    for i in range(3):
        for j in range(2):
            golden[i, index[i, j]] = 1.0
    for i in range(3):
        for j in range(2):
            golden[i, index[i, j]] += bonus[i, j]
    args = [
        ArgSpec("index", index.shape, "i64"),
        ArgSpec("bonus", bonus.shape, "f32"),
        ArgSpec("out", (3, 8), "f32"),
    ]
    return {"index": index, "bonus": bonus}, args, {"out": golden}


def _pairs_case():
    pairs = RNG.standard_normal((3, 16)).astype(np.float32)
    flags = RNG.integers(0, 2, (3, 8)).astype(np.int32)
    re = np.array(
        [[0.0 if flags[r, k] == 0 else pairs[r, 2 * k] for k in range(8)] for r in range(3)]
    )
    im = np.array([[pairs[r, 2 * k + 1] for k in range(8)] for r in range(3)])
    args = [
        ArgSpec("pairs", pairs.shape, "f32"),
        ArgSpec("flags", flags.shape, "i32"),
        ArgSpec("re", (3, 8), "f32"),
        ArgSpec("im", (3, 8), "f32"),
    ]
    golden = {"re": re.astype(np.float32), "im": im.astype(np.float32)}
    return {"pairs": pairs, "flags": flags}, args, golden


def _rms_case():
    x = RNG.standard_normal((8, 32)).astype(np.float32)
    gamma = RNG.standard_normal(32).astype(np.float32)
    golden = np.zeros_like(x)
    for r in range(8):
        scale = math.sqrt(sum(float(v) ** 2 for v in x[r]) / 32 + 1e-5)
        golden[r] = [float(x[r, c]) / scale * float(gamma[c]) for c in range(32)]
    args = [
        ArgSpec("x", x.shape, "f32"),
        ArgSpec("gamma", (32,), "f32"),
        ArgSpec("out", x.shape, "f32"),
    ]
    return {"x": x, "gamma": gamma}, args, {"out": golden}


CASES = {
    "rms_rows": _rms_case,
    "split_pairs": _pairs_case,
    "kv_cache_write": _kv_case,
    "table_rows": _table_case,
    "masked_row_max": _masked_max_case,
    "clone_twice": _clone_case,
    "ramp": _ramp_case,
    "zeros_to_ones": _zeros_case,
    "silu_gate": _silu_case,
    "subtract_rows": _subtract_case,
    "one_hot_plus": _one_hot_case,
}
SCALARS = {"masked_row_max": {"width": 5}, "rms_rows": {"eps": 1e-5}}


def _call(name: str) -> tuple[dict, list[ArgSpec], dict, dict]:
    inputs, args, golden = CASES[name]()
    call = {
        a.name: inputs.get(a.name, np.zeros(a.shape, element_type(a.dtype).numpy)) for a in args
    }
    return inputs, args, golden, call


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_op_kernels_on_the_numpy_back_end(name: str) -> None:
    inputs, args, golden, call = _call(name)
    module = load_file(KERNELS, name, args={**call, **SCALARS.get(name, {})})
    arrays = {a.name: np.array(call[a.name], dtype=element_type(a.dtype).numpy) for a in args}
    out = run(module, arrays, name)
    for k, want in golden.items():
        np.testing.assert_allclose(out[k], want, rtol=1e-6, atol=1e-6, err_msg=k)


NOT_IN_020 = ("silu_gate", "split_pairs")
"""Kernels whose source uses functions PyPTO 0.2.0 lacks (silu, deinterleave, integer
logical_not): only their emitted form, with tileir's helpers, runs there."""


@pytest.mark.pypto
@pytest.mark.parametrize(
    ("name", "source"),
    [
        (name, source)
        for name in sorted(CASES)
        for source in ("as written", "emitted")
        if not (name in NOT_IN_020 and source == "as written")
    ],
)
def test_jit_op_kernels_on_real_pypto(name: str, source: str, tmp_path: Path) -> None:
    inputs, args, golden, call = _call(name)
    scalars = SCALARS.get(name)
    if source == "emitted":
        call.update(scalars or {})
        scalars = None
    path = _source(source, name, call, tmp_path)
    out = run_kernel(
        path, name, args, inputs, outputs=sorted(golden), scalars=scalars, workdir=tmp_path / "w"
    )
    for k, want in golden.items():
        np.testing.assert_allclose(out[k], want, rtol=1e-5, atol=1e-6, err_msg=k)


ERRORS_HEADER = """\
import pypto


@pypto.frontend.jit
def k(
    x: pypto.Tensor([8, 16], pypto.DT_FP32),
    i: pypto.Tensor([2, 16], pypto.DT_INT64),
    out: pypto.Tensor([8, 16], pypto.DT_FP32),
):
    t = pypto.view(x, [8, 16], [0, 0])
    j = pypto.view(i, [2, 16], [0, 0])
"""

ERRORS = [
    ("[t][0].scatter_(0, j, 1.0)\n", "pypto.scatter_ updates a computed tile in place"),
    ("u = t; t.scatter_(0, j, 1.0)\n", "but `u` names the same tile"),
    ("pypto.view(x, [1, 16], [0, 0]).axpy_(t)\n", "has another shape"),
    ("t.axpy_(j)\n", "pypto.axpy_ takes y and x both DT_FP32"),
    ("pypto.index_put_(t, (j,), t)\n", "index tensors must be 1-D"),
    (
        'out[:] = pypto.fillpad(t, "constant", 1.0)\n',
        "pypto.fillpad value must be 0.0, inf or -inf",
    ),
    ('out[:] = pypto.fillpad(t, "reflect")\n', "supports only mode 'constant'"),
    ("r = pypto.arange(4, 0)\n", "empty or runs the wrong way"),
    ("r = pypto.scatter(t, 2, j, 1.0)\n", "dim 2 is out of range"),
    ("r = pypto.scatter_update(t, 1, j, t)\n", "supports only dim=-2"),
    (
        "r = pypto.full([8, 16], pypto.Element(pypto.DT_INT32, 0.5), pypto.DT_INT32)\n",
        "needs an integer",
    ),
]


@pytest.mark.parametrize(("line", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_jit_op_misuse_is_a_located_error(line: str, message: str) -> None:
    from frontends.pypto import load_source
    from tileir.diagnostics import TileirError

    with pytest.raises(TileirError) as e:
        load_source(ERRORS_HEADER + "    " + line, "bad.py")
    text = str(e.value)
    assert text.startswith("bad.py:12:"), text
    assert message in text, text


def test_element_values_read_as_pypto_does() -> None:
    from frontends.pypto import load_source

    source = ERRORS_HEADER + (
        "    e = pypto.Element(pypto.DT_BF16, 1.00390625)\n"
        "    assert e.dtype == pypto.DT_BF16 and e.value == 1.0\n"
        "    out[:] = pypto.add(t, e)\n"
    )
    module = load_source(source, "element.py")
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    out = run(module, {"x": x, "i": np.zeros((2, 16), np.int64), "out": np.zeros_like(x)}, "k")
    np.testing.assert_array_equal(out["out"], x + 1)
