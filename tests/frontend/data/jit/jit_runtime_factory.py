"""Kernels made only when the host wrapper runs: a cached factory with parameters (one
defaulted), and a factory taking a config object; the module itself makes no kernel."""

from dataclasses import dataclass

import pypto

_cache = {}


@dataclass(frozen=True)
class ScaleConfig:
    scale: float = 2.0
    rows: int = 8


def _make_rows_kernel(cols, shift=0.5):
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def scaled_rows(
        x: pypto.Tensor([pypto.STATIC, cols], pypto.DT_FP32),
        out: pypto.Tensor([pypto.STATIC, cols], pypto.DT_FP32),
    ):
        pypto.set_vec_tile_shapes(x.shape[0], cols)
        out[:] = x * 2.0 + shift

    return scaled_rows


def _get_rows_kernel(cols, shift=0.5):
    if (cols, shift) not in _cache:
        _cache[cols, shift] = _make_rows_kernel(cols, shift)
    return _cache[cols, shift]


def make_config_kernel(cfg: ScaleConfig):
    @pypto.frontend.jit
    def config_scaled(
        x: pypto.Tensor([cfg.rows, 4], pypto.DT_FP32),
        out: pypto.Tensor([cfg.rows, 4], pypto.DT_FP32),
    ):
        pypto.set_vec_tile_shapes(cfg.rows, 4)
        out[:] = x * cfg.scale

    return config_scaled


def scaled_rows_wrapper(x, out):
    _get_rows_kernel(x.shape[1])(x, out)
