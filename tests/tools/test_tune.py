"""`tileir-tune` / `tileir.tuning`: the search space, the errors, and (marker `pypto`,
the real cost model) that the tuned file is a drop-in, bit-identical replacement that
is never slower, and that a rerun is served from the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontends.pypto import load_file
from tileir.testing.check import equal_mask, run_kernel
from tileir.testing.inputs import random_inputs
from tileir.tools.tune import main
from tileir.tuning import STEPS, Settings, step_candidates

GELU = Path(__file__).resolve().parents[2] / "frontends" / "kernels" / "gelu.py"


def test_search_steps_of_the_gelu_seed() -> None:
    # 10 rows in tiles of 4: 3 iterations, so unroll factors 1 and 2 (<= 3), coarsen
    # factors 3 (one block) and 2; the loop has an unroll list [2, 1].
    module = load_file(GELU, kernel="gelu_tanh_kernel")
    cur = Settings()
    assert step_candidates("unroll", module, module, cur) == [
        Settings(unroll=1),
        Settings(unroll=2),
    ]
    assert step_candidates("sink", module, module, cur) == [Settings(sink=True)]
    assert [c.label() for c in step_candidates("coarsen", module, module, cur)] == [
        "coarsen=3",
        "coarsen=3 tiles=T",
        "coarsen=2",
    ]
    assert step_candidates("tiles", module, module, cur) == []
    two = Settings(coarsen=2)
    assert step_candidates("tiles", module, module, two) == [Settings(coarsen=2, tiles_t=True)]
    assert [c.tail for c in step_candidates("tail", module, module, two)] == [
        "stitch2",
        "stitch4",
        "default",
    ]
    every = Settings(sink=True, coarsen=2, unroll=4, tail="stitch4")
    assert every.pipeline() == (
        "sink-invariants,coarsen{factor=2},set-unroll-list{factors=4},default{max-functions=4}"
    )
    assert every.label() == "sink coarsen=2 unroll=[4,2,1] stitch max-functions=4"
    assert Settings().label() == "as written" and Settings().pipeline() == ""
    assert STEPS[0] == "unroll"


def test_several_kernels_need_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(GELU), "--budget", "0"]) == 1
    err = capsys.readouterr().err
    assert "several kernels" in err and "gelu_tanh_kernel" in err and "Traceback" not in err


def test_unknown_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(GELU), "--kernel", "nope"]) == 1
    assert "no kernel nope" in capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "none.py")]) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.pypto
def test_tuned_file_is_a_faster_drop_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TILEIR_TUNE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "tuned.py"
    args = [str(GELU), "--kernel", "gelu_tanh_kernel", "--budget", "2", "-o", str(out)]
    assert main(args) == 0
    first = capsys.readouterr().out
    # as written + unroll=[1] + coarsen=3 (unroll=[2,1] and sink leave the IR as it
    # is: not compiled); the cost model rewards the single block.
    assert "unroll=[1]" in first and "coarsen=3" in first and "best:" in first
    best = float(first.split("best:")[1].split("(")[1].split("x")[0])
    assert best <= 1.0
    # Same kernels, same parameters, same numbers (bit for bit) on the numpy back end.
    written, tuned = load_file(GELU), load_file(out)
    for kernel in ("gelu_tanh_kernel", "gelu_erf_kernel"):
        a, b = (
            next(k for k in m.walk() if getattr(k, "sym_name", None) and k.sym_name.data == kernel)
            for m in (written, tuned)
        )
        assert a.arg_names == b.arg_names and [x.type for x in a.body.block.args] == [
            x.type for x in b.body.block.args
        ]
        inputs = random_inputs(written, kernel, 7)
        x, y = run_kernel(written, kernel, inputs), run_kernel(tuned, kernel, inputs)
        assert all(equal_mask(x[n], y[n], None).all() for n in x)
    # A rerun compiles nothing.
    assert main(args) == 0
    second = capsys.readouterr().out
    assert second.count("(cached)") == 3


MEAN = GELU.with_name("mean.py")


@pytest.mark.pypto
def test_opt_cost_prints_the_cost_models_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tileir.backends.pypto import emit
    from tileir.backends.pypto.harness import ArgSpec, compile_kernel
    from tileir.tools.opt import main as opt_main

    monkeypatch.setenv("TILEIR_TUNE_CACHE", str(tmp_path / "cache"))
    assert opt_main([str(MEAN), "-p", "coarsen{factor=3}", "--cost"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("mean_kernel: ") and line.endswith(" tasks)")
    # The harness on the same emitted kernel, directly (no cache).
    module = load_file(MEAN)
    from tileir.passes import apply_pipeline

    apply_pipeline(module, "coarsen{factor=3}")
    path = tmp_path / "mean.py"
    path.write_text(emit(module))
    direct = compile_kernel(
        path, "mean_kernel", [ArgSpec("x", (10, 64), "bf16"), ArgSpec("out", (10, 1), "bf16")]
    )
    assert line == f"mean_kernel: {direct.time_us:.3f} us ({direct.tasks} tasks)"
