"""A kernel in a package importing a sibling module by its package's name."""

import pypto

from gymmodel.gym_scales import SCALE


@pypto.frontend.jit
def scaled(x: pypto.Tensor([4, 16], pypto.DT_FP32), out: pypto.Tensor([4, 16], pypto.DT_FP32)):
    out[:] = x * SCALE
