"""`tileir-run`: run a kernel on the numpy back end from the command line.

    tileir-run kernel.mlir --input x=x.npy --output-dir out/
    tileir-run kernel.mlir --kernel rope --random-inputs --seed 3 --output-dir out/

FILE is `.mlir` text or a PyPTO kernel file (`.py`, through tileir's PyPTO frontend).
Each output (and in-out) tensor is written to `DIR/<name>.npy`; bf16 / fp8 arrays are
written as `np.save` writes `ml_dtypes` arrays (raw void), and inputs saved that way are
read back by the argument's declared element type. Every problem is one located line on
stderr and exit code 1; outputs are written only when the whole run succeeded, each to a
temporary file renamed into place.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tileir.diagnostics import TileirError, format_exception


def _load_module(path: Path, call: dict[str, object] | None = None) -> ModuleOp:
    if path.suffix == ".py":
        try:
            from frontends.pypto import load_file  # type: ignore[attr-defined]
        except ImportError:
            raise TileirError(
                f"error: {path}: reading PyPTO kernel files needs tileir's PyPTO frontend "
                "(frontends.pypto.load_file), which is not available"
            ) from None
        return load_file(str(path), args=call)
    from tileir.ir import parse_module

    return parse_module(path.read_text(encoding="utf-8"), str(path))


def _parse_inputs(specs: Sequence[str]) -> dict[str, Path]:
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
    return p


def run_cli(args: argparse.Namespace) -> None:
    from tileir.backends.numpy import compile_kernel, random_inputs
    from tileir.npyio import load_npy, save_npy_files

    module = _load_module(Path(args.file), _kernel_call(args))
    plan = compile_kernel(module, args.kernel)
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
        dims.update(_dims_of(plan, inputs))
        generated = random_inputs(plan.kernel, seed=args.seed, dims=dims)
        for name, array in generated.items():
            inputs.setdefault(name, array)
    outputs = plan(inputs)
    out_dir: Path = args.output_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    save_npy_files({out_dir / f"{name}.npy": array for name, array in outputs.items()})


def _kernel_call(args: argparse.Namespace) -> dict[str, object] | None:
    """For a `.py` kernel: the call it is specialised to (`--arg`, and `--input` shapes)."""
    if Path(args.file).suffix != ".py":
        if args.arg:
            raise TileirError("error: --arg is for .py kernel files (an .mlir kernel is built)")
        return None
    from frontends.pypto.specialise import parse_cli_args

    return parse_cli_args(args.arg, args.input)


def _parse_dims(specs: Sequence[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        if not sep or not name or not size.isdigit() or int(size) <= 0:
            raise TileirError(f"error: --dim {spec!r}: expected NAME=SIZE with SIZE > 0")
        dims[name] = int(size)
    return dims


def _dims_of(plan, inputs: dict[str, np.ndarray]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Dynamic dim sizes set by the given inputs, so that generated ones agree."""
    dims: dict[str, int] = {}
    for name, array in inputs.items():
        syms = iter(plan.kernel.dynamic_names(name))
        for d, s in zip(plan.shape(name), array.shape):
            if d == -1:
                dims.setdefault(next(syms), s)
    return dims


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        run_cli(args)
    except KeyboardInterrupt:
        return 130
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
