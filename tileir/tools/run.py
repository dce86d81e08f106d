"""`tileir-run`: run a kernel on the numpy back end from the command line.

    tileir-run kernel.mlir --input x=x.npy --output-dir out/
    tileir-run kernel.mlir --kernel rope --random-inputs --seed 3 --output-dir out/

FILE is `.mlir` text or a PyPTO kernel file (`.py`, through tileir's PyPTO frontend).
Each output (and in-out) tensor is written to `DIR/<name>.npy`; bf16 / fp8 arrays are
written as `np.save` writes `ml_dtypes` arrays (raw void), and inputs saved that way are
read back by the argument's declared element type. Every problem is one located line on
stderr and exit code 1; outputs are written only when the whole run succeeded, all of them
or none (`tileir.tools.outputs`). Ctrl-C, SIGTERM and SIGHUP end it with 128 + the signal
number, no traceback and no temporary file left behind; the module imports little at the
top so that even an interrupt during start-up is handled.
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp

    from tileir.backends.numpy.runtime import Plan


def _load_module(
    path: Path,
    call: dict[str, object] | None = None,
    kernel: str | None = None,
    data: bytes | None = None,
) -> ModuleOp:
    from tileir.diagnostics import TileirError

    if path.suffix == ".py":
        try:
            from frontends.pypto import load_file  # type: ignore[attr-defined]
        except ImportError:
            raise TileirError(
                f"error: {path}: reading PyPTO kernel files needs tileir's PyPTO frontend "
                "(frontends.pypto.load_file), which is not available"
            ) from None
        return load_file(str(path), kernel, args=call)
    from tileir.diagnostics import decode_source
    from tileir.ir import parse_module

    if data is None:
        data = path.read_bytes()  # an OSError is reported by `main`
    return parse_module(decode_source(data, str(path)), str(path))


def _plan(
    args: argparse.Namespace, call: dict[str, object] | None, data: bytes | None = None
) -> Plan:
    """Read the kernel file and lower the kernel (`data`: the `.mlir` file's bytes)."""
    from tileir.backends.numpy import compile_kernel
    from tileir.errors import TileirError

    py = Path(args.file).suffix == ".py"
    module = _load_module(Path(args.file), call, args.kernel if py else None, data)
    try:
        # a .py file was read for that kernel only (named by function or module-level name)
        return compile_kernel(module, None if py else args.kernel)
    except TileirError as e:  # which kernel: name the file when the error has no place
        raise TileirError(f"{args.file}: {e}" if str(e).startswith("error:") else str(e)) from None


def _cached_plan(args: argparse.Namespace) -> Plan:
    """The plan of a `.mlir` kernel from the plan cache, else lowered and stored there:
    a hit imports no xDSL (`tileir.backends.numpy.plan_cache`)."""
    from tileir.backends.numpy import plan_cache

    data = Path(args.file).read_bytes()  # an OSError is reported by `main`
    key = None
    if not args.no_cache:
        try:
            key = plan_cache.plan_key(data, args.file, args.kernel)
        except ImportError:  # cloudpickle (a dependency) is missing: run without the cache
            pass
    plan = plan_cache.load(key) if key is not None else None
    if plan is None:
        plan = _plan(args, None, data)
        if key is not None:
            plan_cache.store(key, plan)
    return plan


def _parse_inputs(specs: Sequence[str]) -> dict[str, Path]:
    from tileir.errors import TileirError

    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise TileirError(f"error: --input {spec!r}: expected NAME=FILE.npy")
        if name in out:
            raise TileirError(f"error: --input {name!r} is given twice")
        out[name] = Path(file)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tileir-run", description="Run a pto kernel on the numpy back end."
    )
    p.add_argument("file", help="a .mlir module or a PyPTO kernel file (.py)")
    p.add_argument("--kernel", help="the kernel to run (needed when the file has several)")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input tensor by argument name (repeatable)",
    )
    p.add_argument(
        "--random-inputs",
        action="store_true",
        help="generate the inputs not given with --input (floats: standard normal; "
        "integers: [0, 4); see --seed)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --random-inputs")
    p.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=SIZE",
        help="the size of a dynamic dim for --random-inputs (default 16, or the size the "
        "given inputs set)",
    )
    p.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="for a .py kernel: a parameter of the call it is built for, a tensor shape "
        "(13x64xbf16) or a scalar (1e-5); --input arrays give their shapes too",
    )
    p.add_argument("--output-dir", required=True, type=Path, help="where <name>.npy go")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="lower a .mlir kernel again instead of reading its plan from the cache "
        "(~/.cache/tileir/plans; TILEIR_CACHE_DIR moves it, TILEIR_NO_CACHE=1 turns it off)",
    )
    return p


def run_cli(args: argparse.Namespace) -> None:
    import numpy as np

    from tileir.errors import TileirError, describe_runtime_error
    from tileir.npyio import load_npy
    from tileir.tools.outputs import pause_for_test, staged_outputs

    py = Path(args.file).suffix == ".py"
    call = _kernel_call(args)
    plan = _plan(args, call) if py else _cached_plan(args)
    files = _parse_inputs(args.input)
    unknown = sorted(set(files) - set(plan.arg_names))
    if unknown:
        raise TileirError(
            f"error: --input {unknown[0]!r}: kernel @{plan.name} has no such argument "
            f"(its arguments: {', '.join(plan.arg_names)})"
        )
    inputs = {
        name: load_npy(path, plan.dtype(name), f"argument {name!r}") for name, path in files.items()
    }
    if args.random_inputs:
        dims = _parse_dims(args.dim)
        for sym, size in _dims_of_call(plan, call or {}, py).items():
            dims.setdefault(sym, size)
        dims.update(_dims_of(plan, inputs))
        try:
            generated = plan.random_inputs(args.seed, dims)
        except (ValueError, MemoryError) as e:
            raise plan.error(
                f"cannot make random inputs for @{plan.name}: {describe_runtime_error(e)}"
            ) from None
        for name, array in generated.items():
            inputs.setdefault(name, array)
    _size_outputs(plan, inputs, call or {}, py)
    try:
        outputs = plan(inputs)
    except (ValueError, MemoryError) as e:  # allocating the outputs; ops report their own
        raise plan.error(f"kernel @{plan.name}: {describe_runtime_error(e)}") from None
    out_dir: Path = args.output_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TileirError(f"error: cannot create {out_dir}: {e.strerror or e}") from None
    with staged_outputs() as stage:
        for i, (name, array) in enumerate(outputs.items()):
            if i == 1:
                pause_for_test("write")
            with open(stage.path_for(out_dir / f"{name}.npy"), "wb") as f:
                np.save(f, array, allow_pickle=False)


def _kernel_call(args: argparse.Namespace) -> dict[str, object] | None:
    """For a `.py` kernel: the call it is specialised to (`--arg`, and `--input` shapes)."""
    from tileir.errors import TileirError

    if Path(args.file).suffix != ".py":
        if args.arg:
            raise TileirError("error: --arg is for .py kernel files (an .mlir kernel is built)")
        return None
    from frontends.pypto.specialise import parse_cli_args

    return parse_cli_args(args.arg, args.input)


def _parse_dims(specs: Sequence[str]) -> dict[str, int]:
    from tileir.errors import TileirError

    dims: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep or not name or not size.isdigit() or int(size) <= 0:
            raise TileirError(f"error: --dim {spec!r}: expected NAME=SIZE with SIZE > 0")
        dims[name] = int(size)
    return dims


def _size_outputs(plan, inputs: dict[str, np.ndarray], call: dict[str, object], py: bool) -> None:  # type: ignore[no-untyped-def]
    """Outputs whose dynamic dims no input sets: sized by the call's `--arg out=AxB...`
    (a zero array of that shape, as a given output starts), else a located error that
    names the flag to give."""
    import numpy as np

    dims = _dims_of(plan, inputs)
    for name in plan.outputs:
        if name in inputs:
            continue
        syms = plan.dynamic_names(name)
        if all(s in dims for s in syms):
            continue
        given = call.get(name)
        if py and given is not None:
            from frontends.pypto.specialise import ArgShape  # a .py call: the frontend is in

            if not isinstance(given, ArgShape):
                given = None
        if given is not None:
            inputs[name] = np.zeros(given.shape, plan.dtype(name))
            continue
        missing = next(s for s in syms if s not in dims)
        flag = f"--arg {name}=AxBx<dtype>" if py else f"--input {name}=FILE.npy"
        raise plan.error(
            f"kernel @{plan.name}: cannot size output {name!r}: its dynamic dim {missing} is "
            f"not set by any input; give its shape with {flag}",
        )


def _dims_of(plan, inputs: dict[str, np.ndarray]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Dynamic dim sizes set by the given inputs, so that generated ones agree."""
    dims: dict[str, int] = {}
    for name, array in inputs.items():
        syms = iter(plan.dynamic_names(name))
        for d, s in zip(plan.shape(name), array.shape):
            if d == -1:
                dims.setdefault(next(syms), s)
    return dims


def _dims_of_call(plan, call: dict[str, object], py: bool) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Dynamic dim sizes the call's `--arg NAME=AxBx<dtype>` shapes give: a
    `pypto.DYNAMIC` dim stays `?` in the kernel, but the call still says its size, so
    that random inputs agree with the scalars of the same call (`NUM_ROWS=4096`)."""
    if not py:
        return {}
    from frontends.pypto.specialise import ArgShape  # a .py call: the frontend is in

    dims: dict[str, int] = {}
    for name in plan.arg_names:
        given = call.get(name)
        if not isinstance(given, ArgShape) or len(given.shape) != len(plan.shape(name)):
            continue
        syms = iter(plan.dynamic_names(name))
        for d, s in zip(plan.shape(name), given.shape):
            if d == -1:
                dims.setdefault(next(syms), s)
    return dims


def main(argv: Sequence[str] | None = None) -> int:
    # The cyclic garbage collector is paused for the whole tool, as the plan pauses it
    # for a run: what the tool allocates (xDSL's dialects, the module, the plan, the
    # arrays) lives until it ends, and the collector's passes over those objects cost
    # about a tenth of a `.mlir` run's start-up (a full pass alone takes some 30 ms).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    try:
        from tileir.errors import TileirError, format_exception
        from tileir.tools.outputs import exit_on_signals, pause_for_test, plain_warnings

        exit_on_signals()
        plain_warnings()
        pause_for_test("startup")
        args = _parser().parse_args(argv)
        run_cli(args)
    except KeyboardInterrupt as e:  # also SIGTERM / SIGHUP (`Terminated`)
        return 128 + getattr(e, "signum", signal.SIGINT)
    except Exception as e:  # a tool reports, it never shows a traceback
        print(
            format_exception(e).splitlines()[0]
            if isinstance(e, TileirError)
            else format_exception(e),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
