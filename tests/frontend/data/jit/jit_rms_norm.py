"""`pypto.rms_norm`, a PyPTO library composite, in a kernel written the Gym's way."""

import pypto


@pypto.frontend.jit
def rms_norm_kernel(
    hidden_states: pypto.Tensor([pypto.STATIC, 64], pypto.DT_BF16),
    weight: pypto.Tensor([64], pypto.DT_BF16),
    output: pypto.Tensor([pypto.STATIC, 64], pypto.DT_BF16),
    eps: float,
):
    tile_shapes = [8 for _ in range(hidden_states.dim)]
    tile_shapes[-1] = 64
    pypto.set_vec_tile_shapes(*tile_shapes)
    output[:] = pypto.rms_norm(hidden_states, weight, eps)
