"""Kernels made by a factory and bound to module-level names; a helper module next to it."""

import pypto
from jit_helpers import ROW_TILE, affine, row_tiles


def _make_affine_kernel(cols: int, shift: float):
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def kernel(
        x: pypto.Tensor([pypto.DYNAMIC, cols], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, cols], pypto.DT_FP32),
        scale: float = 2.0,
    ):
        rows = x.shape[0]
        pypto.set_vec_tile_shapes(ROW_TILE, cols)
        for i in pypto.loop(row_tiles(rows), name=f"ROWS_{cols}", idx_name="i"):
            valid = (rows - i * ROW_TILE).min(ROW_TILE)
            t = pypto.view(x, [ROW_TILE, cols], [i * ROW_TILE, 0], valid_shape=[valid, cols])
            pypto.assemble(affine(t, scale, shift), [i * ROW_TILE, 0], out)

    return kernel


affine_16 = _make_affine_kernel(16, 1.0)
affine_32 = _make_affine_kernel(32, -0.5)
