"""A config object as a defaulted parameter, STATIC dims, a scalar without a default."""

from dataclasses import dataclass

import pypto


@dataclass(frozen=True)
class NormConfig:
    row_tile: int
    use_gamma: bool


DEFAULT = NormConfig(row_tile=2, use_gamma=True)


@pypto.frontend.jit
def rms_norm(
    x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    gamma: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
    out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
    eps: float,
    config: NormConfig = DEFAULT,
):
    rows, cols = x.shape
    assert rows % config.row_tile == 0, f"rows {rows} must divide by {config.row_tile}"
    tiles = {"rows": config.row_tile, "cols": cols}
    pypto.set_vec_tile_shapes(tiles["rows"], tiles["cols"])
    g = pypto.reshape(gamma, [1, cols], inplace=True)
    for i in range(rows // config.row_tile):
        t = pypto.view(x, [config.row_tile, cols], [i * config.row_tile, 0])
        ms = pypto.mul(pypto.sum(pypto.mul(t, t), -1, keepdim=True), 1.0 / cols)
        y = pypto.mul(t, pypto.rsqrt(pypto.add(ms, eps)))
        if config.use_gamma:
            y = pypto.mul(y, g)
        pypto.assemble(y, [i * config.row_tile, 0], out)
