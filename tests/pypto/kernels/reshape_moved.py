"""An inplace reshape whose result is moved into a kernel output: PyPTO's documentation
forbids it ("cannot be the function's final output"), 0.2.0 drops the `inplace` itself."""

import pypto


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def column_sums(
    x: pypto.Tensor([64, 8], pypto.DT_FP32),
    out: pypto.Tensor([1, 8, 1, 1], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(64, 8)
    s = pypto.sum(x, dim=0, keepdim=True)
    pypto.set_vec_tile_shapes(1, 8, 1, 8)
    out.move(pypto.reshape(s, [1, 8, 1, 1], inplace=True))


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def squares_flat(
    x: pypto.Tensor([4, 8], pypto.DT_FP32),
    out: pypto.Tensor([32], pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(4, 8)
    y = x * x
    pypto.set_vec_tile_shapes(32)
    out.move(pypto.reshape(y, [32], inplace=True))


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def window_reshaped(
    x: pypto.Tensor([4, 4, 8], pypto.DT_FP32),
    out: pypto.Tensor([4, 8, 1], pypto.DT_FP32),
):
    """An inplace reshape of a view (PyPTO-Gym's mhc_post): the newer docs allow only
    `inplace=False` on a view, 0.2.0 compiles it and reshapes the window's values."""
    pypto.set_vec_tile_shapes(4, 8, 8)
    for _ in pypto.loop(1, name="once", idx_name="u"):
        row = pypto.view(x, [4, 1, 8], [0, 2, 0])
        col = pypto.reshape(row, [4, 8, 1], inplace=True)
        out[:] = pypto.mul(col, 2.0)
