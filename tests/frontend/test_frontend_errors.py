"""Malformed or unsupported kernels: each gives one located `TileirError`
(`file:line:col: error: ...`) naming what is wrong, never a Python traceback."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from frontends.pypto import load_source
from tileir.diagnostics import TileirError

PRELUDE = """\
import pypto
import torch

N = 8
D = 16
TABLE = torch.ones(4)


@pypto.frontend.function
def _f(t):
    return t


"""

HEADER = """\
@pypto.frontend.jit
def k(x: pypto.Tensor([N, D], pypto.DT_FP32), out: pypto.Tensor([N, D], pypto.DT_FP32)):
"""

# (id, kernel body or whole kernel, the source text the error must point at, message part)
CASES = [
    (
        "unknown pypto function",
        "    y = pypto.frobnicate(x)\n",
        "pypto.frobnicate(x)",
        "pypto.frobnicate() is not supported",
    ),
    (
        "wrong argument count",
        "    t = pypto.view(x, [N, D], [0, 0])\n    y = pypto.neg(t, t)\n",
        "pypto.neg(t, t)",
        "wrong arguments to pypto.neg(input): too many positional arguments",
    ),
    (
        "shape mismatch",
        "    a = pypto.view(x, [4, D], [0, 0])\n    b = pypto.view(x, [8, D], [0, 0])\n"
        "    y = a + b\n",
        "a + b",
        "pypto.add: cannot broadcast shapes [4, 16] and [8, 16]",
    ),
    (
        "range over a runtime bound",
        "    for i in pypto.loop(N):\n        for j in range(i):\n            pass\n",
        "i",
        "range() is unrolled when the kernel is traced",
    ),
    (
        "while on a runtime value",
        "    for i in pypto.loop(N):\n        while i < 3:\n            pass\n",
        "i < 3",
        "`while` runs when the kernel is traced, so its condition must be known then",
    ),
    (
        "while that never ends",
        "    while True:\n        pass\n",
        "while True:",
        "translation-time Python loops ran more than",
    ),
    (
        "tensor used before definition",
        "    y = pypto.exp(t)\n    t = pypto.view(x, [N, D], [0, 0])\n",
        "t",
        "name `t` is not defined",
    ),
    (
        "unsupported extend_params key",
        "    a = pypto.view(x, [N, D], [0, 0])\n"
        '    y = pypto.matmul(a, a, pypto.DT_FP32, b_trans=True, extend_params={"scale_tensor": a})\n',
        "pypto.matmul(",
        "extend_params key 'scale_tensor' is not supported",
    ),
    (
        "bad dtype",
        "    y = pypto.cast(pypto.view(x, [N, D], [0, 0]), pypto.DT_INT4)\n",
        "pypto.DT_INT4",
        "pypto.DT_INT4 has no tileir element type",
    ),
    (
        "return of a value",
        "    return pypto.view(x, [N, D], [0, 0])\n",
        "return",
        "a kernel cannot return a value",
    ),
    (
        "undefined name",
        "    pypto.assemble(pypto.exp(x) * SCALE, [0, 0], out)\n",
        "SCALE",
        "name `SCALE` is not defined",
    ),
    (
        "module-level torch used by a kernel",
        "    y = pypto.mul(x, TABLE)\n",
        "pypto.mul(x, TABLE)",
        "got a torch.Tensor object",
    ),
    (
        "imported module used by a kernel",
        "    y = torch.exp(x)\n",
        "torch",
        "torch.exp() is library code: it runs as Python when the kernel is traced",
    ),
    (
        "loop value used after the loop",
        "    for i in pypto.loop(N):\n        t = pypto.view(x, [1, D], [i, 0])\n"
        "    pypto.assemble(t, [0, 0], out)\n",
        "t",
        "`t` is assigned inside the pypto.loop at line 16",
    ),
    (
        "bad unroll_list",
        "    for i in pypto.loop(N, unroll_list=[4, 0]):\n        pass\n",
        "pypto.loop(N, unroll_list=[4, 0])",
        "unroll_list factors must be positive, got 0",
    ),
    (
        "value assigned in one branch only",
        "    for i in pypto.loop(N):\n        t = pypto.view(x, [1, D], [i, 0])\n"
        "        if pypto.is_loop_begin(i):\n            y = t\n"
        "        pypto.assemble(y, [i, 0], out)\n",
        "y",
        "`y` is assigned in only one branch of the runtime `if` at line 18",
    ),
    (
        "assemble into a tile",
        "    t = pypto.view(x, [N, D], [0, 0])\n    pypto.assemble(t, [0, 0], t)\n",
        "pypto.assemble(t, [0, 0], t)",
        "pypto.assemble destination must be a tensor in memory",
    ),
    (
        "matmul contraction mismatch",
        "    a = pypto.view(x, [N, D], [0, 0])\n    y = pypto.matmul(a, a, pypto.DT_FP32)\n",
        "pypto.matmul(a, a, pypto.DT_FP32)",
        "matmul contraction dims differ",
    ),
    (
        "is_loop_begin of a non-loop value",
        "    if pypto.is_loop_begin(3):\n        pass\n",
        "pypto.is_loop_begin(3)",
        "takes the index of an enclosing pypto.loop",
    ),
    (
        "unknown cast mode",
        "    y = pypto.cast(x, pypto.DT_BF16, pypto.CastMode.CAST_SIDEWAYS)\n",
        "pypto.cast(",
        "cast mode must be one of",
    ),
    (
        "scalar kernel parameter without a default",
        None,
        "n, D]",
        "kernel parameter `n` has no value: the kernel is built for the scalars of a call; "
        "give it with --arg n=VALUE",
    ),
    (
        "tensor slice with a step",
        "    y = x[::2, :]\n",
        "2",
        "tensor slices with a step are not supported",
    ),
    (
        "dynamic reshape of a tensor in memory without inplace",
        None,
        "pypto.reshape(",
        "a reshape of a tensor in memory with a dynamic shape must be inplace=True",
    ),
    (
        "shape taken from the call",
        None,
        "x.shape[0])",
        "give them with --arg x=AxBx<dtype>",
    ),
    (
        "break in a pypto.loop",
        "    for i in pypto.loop(N):\n        break\n",
        "break",
        "`break` inside pypto.loop or a runtime `if` is not supported",
    ),
    (
        "continue outside a loop",
        "    continue\n",
        "continue",
        "invalid Python: 'continue' not properly in loop",
    ),
    (
        "return from a pypto.frontend.function",
        "    y = _f(x)\n",
        "return",
        "@pypto.frontend.function `_f` cannot return a value",
    ),
    (
        "reading one element of a float tensor",
        "    y = x[0, 1]\n",
        "x[0, 1]",
        "reading one element (`x[i, j]`) gives an index value (PyPTO's SymbolicScalar), so "
        "it needs an integer tensor, got a tensor in memory of shape",
    ),
]


WHOLE_KERNELS = {
    "scalar kernel parameter without a default": """\
@pypto.frontend.jit
def k(x: pypto.Tensor([N, D], pypto.DT_FP32), n: int):
    y = pypto.view(x, [n, D], [0, 0])
""",
    "shape taken from the call": """\
@pypto.frontend.jit
def k(x: pypto.Tensor([pypto.STATIC, D], pypto.DT_FP32)):
    for i in range(x.shape[0]):
        pass
""",
    "dynamic reshape of a tensor in memory without inplace": """\
S = pypto.frontend.dynamic("S")
@pypto.frontend.jit
def k(x: pypto.Tensor([S, D], pypto.DT_FP32)):
    y = pypto.reshape(x, [D, S])
""",
}


def _source(body: str | None, name: str = "") -> str:
    return PRELUDE + (HEADER + body if body is not None else WHOLE_KERNELS[name])


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_located_error(case: tuple[str, str | None, str, str]) -> None:
    name, body, anchor, message = case
    source = _source(body, name)
    with pytest.raises(TileirError) as info:
        load_source(source, "bad_kernel.py")
    first = str(info.value).splitlines()[0]
    m = re.match(r"bad_kernel\.py:(\d+):(\d+): error: (.*)", first)
    assert m, first
    line, col = int(m.group(1)), int(m.group(2))
    assert message in m.group(3)
    # The location points at the offending source text.
    src_line = source.splitlines()[line - 1]
    assert src_line[col - 1 :].startswith(anchor), (src_line, col, anchor)


def test_syntax_error_is_located() -> None:
    with pytest.raises(TileirError, match=r"^bad\.py:2:\d+: error: invalid Python"):
        load_source("import pypto\ndef k(:\n", "bad.py")


def test_file_without_kernels() -> None:
    with pytest.raises(TileirError, match="no @pypto.frontend.jit kernel"):
        load_source("import pypto\nX = 1\n", "empty.py")


def test_verifier_error_points_into_the_kernel(tmp_path) -> None:
    """A rule only the dialect's verifier checks still names the kernel file's line."""
    body = "    t = pypto.view(x, [N // 2, D], [N // 2, 0])\n    pypto.assemble(t, [N, 0], out)\n"
    with pytest.raises(TileirError) as info:
        load_source(_source(body), "v.py")
    first = str(info.value).splitlines()[0]
    assert first.startswith("v.py:17:5:")
    assert "'pto.assemble' offset 8 in dim 0 is outside the destination of size 8" in first


def test_cli_reports_without_traceback(tmp_path) -> None:
    path = tmp_path / "bad.py"
    path.write_text(_source("    with open('f'):\n        pass\n"))
    proc = subprocess.run(
        [sys.executable, "-m", "tileir.tools.opt", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert re.match(rf"{re.escape(str(path))}:16:5: error: `with` blocks", proc.stderr)
    assert textwrap.dedent(proc.stdout) == ""
