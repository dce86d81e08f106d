"""Run one PyPTO kernel file with the real `pypto` package, in this process only.

This script is the child side of `tileir.backends.pypto.harness`; do not import it
from tileir. It runs as `python _worker.py SPEC.json` with its working directory in a
scratch folder and with `TILE_FWK_OUTPUT_DIR`, `PYPTO_HOME` and `ASCEND_PROCESS_LOG_PATH`
pointing there. It imports only the standard library, numpy, torch and pypto, never
tileir, so that it also works under an interpreter that has pypto but not tileir.

One kernel call per process: a C++ error (`Errcode: F...`) can abort the process, and
after a compile error later jit calls in the same process fail.

The spec (JSON) holds::

    mode            "compile" (SIM compile + cost model) or "run" (pass-verify interpreter)
    kernel_path     the kernel's .py file, imported as a real module (PyPTO re-parses
                    the function's source with `inspect`)
    kernel_name     a module attribute made by `@pypto.frontend.jit`
    args            [{name, shape, pypto_dtype, storage, dynamic_axes, input, output}]:
                    one per tensor parameter, in order; `input` is an .npy file holding
                    the raw storage (bf16 as uint16 ...), or null for zeros
    scalars         non-tensor keyword arguments of the kernel
    verify_dir      where the interpreter dumps tensors (run mode)
    calculator_root cache root of the interpreter's compiled calculator (run mode)
    result          where to write the result JSON
    markers         folder for the phase marker files the parent watches

Three PyPTO 0.2.0 behaviours are patched here, each on one method, before the kernel
file is imported:

* `JitCallableWrapper.__init__` forces `run_mode=SIM` and this harness's verify options
  on every jit kernel made in the process, whatever the file says (an emitted file may
  say `runtime_options={"run_mode": pypto.RunMode.NPU}`).
* `JitCallableWrapper._setup_verify_data` is replaced: the 0.2.0 version copies the
  inputs into temporary host buffers that it drops, so the interpreter reads freed
  memory (zeros) and the caller's inputs get zeroed. The replacement hands the caller's
  own CPU tensors to `pypto_impl.SetVerifyData`.
* In run mode `JitCallableWrapper._run_with_cpu` (the cost model) is skipped: the
  interpreter has already dumped every tensor during compilation, and the cost model
  rejects some ops the interpreter handles (gathermask: `F92001`).
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

CALCULATOR_SO = "libtile_fwk_calculator.so"

# pypto.DT_* name -> torch dtype attribute; the harness only sends names from this table.
TORCH_DTYPES = {
    "DT_BF16": "bfloat16",
    "DT_FP16": "float16",
    "DT_FP32": "float32",
    "DT_DOUBLE": "float64",
    "DT_INT8": "int8",
    "DT_UINT8": "uint8",
    "DT_INT16": "int16",
    "DT_INT32": "int32",
    "DT_INT64": "int64",
    "DT_BOOL": "bool",
    "DT_FP8E4M3": "float8_e4m3fn",
    "DT_FP8E5M2": "float8_e5m2",
    "DT_FP8E8M0": "float8_e8m0fnu",
}


class KernelSetupError(Exception):
    """The kernel file or the arguments do not fit together (reported, not a crash)."""


def _touch(markers: Path, name: str) -> None:
    (markers / name).write_text(f"{time.time()}\n")


def _torch_dtype(torch: Any, pypto_name: str) -> Any:
    return getattr(torch, TORCH_DTYPES[pypto_name])


# -- the calculator cache --------------------------------------------------------------


def _build_calculator(manager_cls: Any, dest: Path) -> None:
    """Build PyPTO's calculator with its own cmake helper, installed at `dest` atomically.

    `dest` appears in one `rename`, complete or not at all, so readers need no lock.
    """
    torch_ctx = manager_cls._TorchContext()
    cmake_ctx = manager_cls._CMakeContext()
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    try:
        ctx = manager_cls._CMakeContext.CompileContext(
            src_dir=Path(manager_cls().pkg_lib_dir, "calculator"), tmp_dir=staging
        )
        ctx.cfg_cmd_ext = (
            f"-DPY3_MOD_TORCH_VERSION={torch_ctx.torch_version}"
            f" -DPY3_MOD_TORCH_ROOT_PATH={torch_ctx.torch_root_dir}"
            f" -DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={torch_ctx.torch_c_use_cxx11_abi}"
        )
        ctx.build_job_num = os.cpu_count() or 4
        try:
            install = Path(cmake_ctx.compile(ctx))
        except subprocess.CalledProcessError as exc:  # its output is captured: show the end
            output = ((exc.stdout or "") + (exc.stderr or "")).strip().splitlines()
            raise RuntimeError(
                f"building PyPTO's calculator failed: {' '.join(map(str, exc.cmd))}\n"
                + "\n".join(output[-30:])
            ) from None
        if not (install / "lib" / CALCULATOR_SO).exists():
            raise RuntimeError(f"calculator build produced no {CALCULATOR_SO} in {install}")
        os.rename(install, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_calculator(root: Path, markers: Path) -> dict[str, Any]:
    """Load the pass-verify calculator from the cache, building it once if missing.

    PyPTO rebuilds it with cmake in every new process (about a minute); a cached copy is
    keyed by the torch version (the library links against torch) and the pypto version.
    Concurrent first builds are serialised with a file lock; the losers wait and reuse.
    """
    import torch
    from pypto._utils import BuildOnlineManager

    t0 = time.perf_counter()
    dest = root / str(torch.__version__) / f"pypto-{metadata.version('pypto')}"
    so = dest / "lib" / CALCULATOR_SO
    built = False
    if not so.exists():
        _touch(markers, "phase-build")
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest.parent / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not so.exists():
                for stale in dest.parent.glob(".build-*"):
                    shutil.rmtree(stale, ignore_errors=True)
                _build_calculator(BuildOnlineManager, dest)
                built = True
    ctypes.CDLL(str(so), mode=ctypes.RTLD_GLOBAL)
    BuildOnlineManager().calculator_loaded = True
    _touch(markers, "phase-ready")
    return {
        "calculator": str(so),
        "calculator_built": built,
        "calculator_s": time.perf_counter() - t0,
    }


# -- patches -----------------------------------------------------------------------------


def patch_pypto(verify_options: dict[str, Any], skip_cost_model: bool) -> None:
    import pypto
    from pypto import pypto_impl
    from pypto.frontend.parser.entry import JitCallableWrapper
    from pypto.runtime import _pto_verify_datas

    original_init = JitCallableWrapper.__init__

    def init_forcing_sim(self: Any, *args: Any, **kwargs: Any) -> None:
        runtime = dict(kwargs.get("runtime_options") or {})
        runtime["run_mode"] = pypto.RunMode.SIM
        kwargs["runtime_options"] = runtime
        kwargs["verify_options"] = dict(verify_options)
        original_init(self, *args, **kwargs)

    def setup_verify_data_from_caller(pto_tensors: list[Any]) -> None:
        if not pypto.get_verify_options().get("enable_pass_verify"):
            return
        # The tensors wrap the caller's CPU torch tensors, which outlive the call.
        datas = [
            pypto_impl.DeviceTensorData(t.dtype, t.data_ptr, list(t.ori_shape)) for t in pto_tensors
        ]
        pypto_impl.SetVerifyData(datas, [], _pto_verify_datas.get_data())

    JitCallableWrapper.__init__ = init_forcing_sim
    JitCallableWrapper._setup_verify_data = staticmethod(setup_verify_data_from_caller)
    if skip_cost_model:
        JitCallableWrapper._run_with_cpu = lambda self, inputs, outputs: None


# -- the kernel --------------------------------------------------------------------------


def import_kernel(path: Path, name: str) -> Any:
    from pypto.frontend.parser.entry import JitCallableWrapper

    module_name = "_tileir_kernel_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise KernelSetupError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.append(str(path.parent))  # for helpers next to the kernel; never shadowing
    spec.loader.exec_module(module)
    kernel = getattr(module, name, None)
    if not isinstance(kernel, JitCallableWrapper):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, JitCallableWrapper))
        what = "not defined" if kernel is None else f"a {type(kernel).__name__}"
        raise KernelSetupError(
            f"{path.name}: `{name}` is {what}, not a @pypto.frontend.jit kernel "
            f"(jit kernels in the file: {', '.join(found) or 'none'})"
        )
    return kernel


def _dynamic_axes(shape: Any) -> list[int] | None:
    """Which axes of a parameter annotation are dynamic; None if it has no shape."""
    import pypto

    if not shape:
        return None
    return [
        i
        for i, d in enumerate(shape)
        if isinstance(d, pypto.SymbolicScalar)
        or d in (pypto.StatusType.DYN, pypto.StatusType.DYNAMIC)
    ]


def check_args(kernel: Any, args: list[dict[str, Any]]) -> None:
    """Compare the harness's ArgSpecs with the kernel's annotations, naming any mismatch.

    PyPTO itself would often fail later with only a C++ error code.
    """
    import pypto

    tensor_defs, _ = kernel._cached_signature
    names = [t.name for t in tensor_defs]
    given = [a["name"] for a in args]
    if names != given:
        raise KernelSetupError(f"kernel tensor parameters are {names}, but the args are {given}")
    for spec, tdef in zip(args, tensor_defs, strict=True):
        where = f"argument `{spec['name']}`"
        if tdef.status_dtype is not None and tdef.dtype != getattr(pypto, spec["pypto_dtype"]):
            raise KernelSetupError(
                f"{where}: the kernel declares {tdef.dtype}, the arg spec {spec['pypto_dtype']}"
            )
        dyn = _dynamic_axes(tdef.shape)
        if dyn is None:
            continue
        shape = list(tdef.shape)
        # PyPTO's own rule (`_check_input_defs_match_tensors`): an annotation of
        # pypto.DYNAMIC / STATIC marks (`status_shape`) takes a call of at least its rank,
        # the extra trailing dims the call's; any other annotation the exact rank
        marks = getattr(tdef, "status_shape", None) is not None
        if len(spec["shape"]) < len(shape) or (not marks and len(spec["shape"]) != len(shape)):
            raise KernelSetupError(
                f"{where}: the kernel declares rank {len(shape)}, the arg spec shape "
                f"{spec['shape']} has rank {len(spec['shape'])}"
            )
        for axis, (want, got) in enumerate(zip(shape, spec["shape"])):
            if axis not in dyn and isinstance(want, int) and want != got:
                raise KernelSetupError(
                    f"{where}: dim {axis} is {want} in the kernel, {got} in the arg spec"
                )
        if spec["dynamic_axes"] and sorted(spec["dynamic_axes"]) != dyn:
            raise KernelSetupError(
                f"{where}: the arg spec marks axes {sorted(spec['dynamic_axes'])} dynamic, "
                f"the kernel annotation marks {dyn}"
            )


def make_tensors(torch: Any, args: list[dict[str, Any]]) -> list[Any]:
    tensors = []
    for spec in args:
        dtype = _torch_dtype(torch, spec["pypto_dtype"])
        if spec.get("input"):
            raw = np.ascontiguousarray(np.load(spec["input"], allow_pickle=False))
            if list(raw.shape) != list(spec["shape"]):
                raise KernelSetupError(
                    f"input `{spec['name']}` has shape {list(raw.shape)}, "
                    f"the arg spec says {spec['shape']}"
                )
            t = torch.from_numpy(raw)
            tensors.append(t if t.dtype == dtype else t.view(dtype))
        else:
            tensors.append(torch.zeros(spec["shape"], dtype=dtype))
    return tensors


def read_dumps(verify_dir: Path, args: list[dict[str, Any]], out_dir: Path) -> dict[str, Any]:
    """Save each output parameter's final tensor-graph dump as raw .npy storage.

    The interpreter writes parameter i as `tensor_graph~<i>~<timestamp>.data` (raw, C
    order, no header); when a parameter is dumped more than once, the newest is final.
    """
    outputs: dict[str, Any] = {}
    pattern = re.compile(r"tensor_graph~(\d+)~(\d+)\.data$")
    latest: dict[int, tuple[int, Path]] = {}
    for f in verify_dir.glob("verify_*/tensor_graph/tensor_graph~*.data"):
        m = pattern.search(f.name)
        if m:
            i, stamp = int(m.group(1)), int(m.group(2))
            if i not in latest or stamp > latest[i][0]:
                latest[i] = (stamp, f)
    for i, spec in enumerate(args):
        if not spec["output"]:
            continue
        if i not in latest:
            raise KernelSetupError(
                f"the interpreter dumped no result for output `{spec['name']}` "
                f"(parameter {i}): does the kernel write it?"
            )
        storage = np.dtype(spec["storage"])
        data = np.fromfile(latest[i][1], dtype=storage)
        count = int(np.prod(spec["shape"], dtype=np.int64))
        if data.size != count:
            raise KernelSetupError(
                f"dump of `{spec['name']}` holds {data.size} elements, "
                f"expected {count} for shape {spec['shape']}"
            )
        path = out_dir / f"out_{i}.npy"
        np.save(path, data.reshape(spec["shape"]), allow_pickle=False)
        outputs[spec["name"]] = {"file": str(path), "dump": str(latest[i][1])}
    return outputs


def _error(exc: BaseException, kernel_path: Path) -> dict[str, Any]:
    frames = [
        f"{Path(fs.filename).name}:{fs.lineno}: {fs.line}"
        for fs in traceback.extract_tb(exc.__traceback__)
        if Path(fs.filename) == kernel_path
    ]
    return {
        "type": type(exc).__name__,
        "message": str(exc).strip(),
        "kernel_frames": frames,
        "traceback": "".join(traceback.format_exception(exc))[-6000:],
    }


def run(spec: dict[str, Any]) -> dict[str, Any]:
    markers = Path(spec["markers"])
    kernel_path = Path(spec["kernel_path"]).resolve()
    result: dict[str, Any] = {"ok": False, "timings": {}}
    timings = result["timings"]
    t0 = time.perf_counter()
    import pypto
    import torch

    timings["import_s"] = time.perf_counter() - t0
    result["versions"] = {"pypto": metadata.version("pypto"), "torch": str(torch.__version__)}
    run_mode = spec["mode"] == "run"
    if run_mode:
        verify = {
            "enable_pass_verify": True,
            "pass_verify_save_tensor": True,
            "pass_verify_save_tensor_dir": spec["verify_dir"],
            "pass_verify_pass_filter": [],
        }
    else:
        verify = {"enable_pass_verify": False}
    try:
        patch_pypto(verify, skip_cost_model=run_mode)
        if run_mode:
            timings.update(load_calculator(Path(spec["calculator_root"]), markers))
        kernel = import_kernel(kernel_path, spec["kernel_name"])
        check_args(kernel, spec["args"])
        tensors = make_tensors(torch, spec["args"])
        if run_mode:
            # Goldens only gate the verify report; zeros make every output get dumped.
            goldens = [
                torch.zeros_like(t) if a["output"] else None
                for a, t in zip(spec["args"], tensors, strict=True)
            ]
            pypto.set_verify_golden_data(goldens=goldens)
        _touch(markers, "phase-call")
        t1 = time.perf_counter()
        kernel(*tensors, **spec.get("scalars", {}))
        timings["call_s"] = time.perf_counter() - t1
        if run_mode:
            result["outputs"] = read_dumps(Path(spec["verify_dir"]), spec["args"], markers)
        result["ok"] = True
        timings["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except KernelSetupError as exc:
        result["error"] = {"type": "setup", "message": str(exc), "kernel_frames": []}
    except Exception as exc:  # noqa: BLE001 - every kernel failure is reported, not raised
        result["error"] = _error(exc, kernel_path)
    return result


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    try:
        result = run(spec)
    except Exception as exc:  # noqa: BLE001 - a broken environment, reported like a kernel error
        result = {"ok": False, "error": _error(exc, Path(spec["kernel_path"]))}
    tmp = Path(spec["result"] + ".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, spec["result"])
    sys.stdout.flush()
    sys.stderr.flush()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
