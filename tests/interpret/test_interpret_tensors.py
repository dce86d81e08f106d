"""Tensors cross the torch <-> numpy boundary bit for bit, sharing memory, for every
PyPTO element type; a kernel that copies its input gives back the same bits."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tileir.dialect.dtypes import ELEMENT_TYPES  # noqa: E402
from tileir.interpret.tensors import to_numpy  # noqa: E402

TORCH_NAMES = {t.short: t.numpy.name for t in ELEMENT_TYPES}


def _random_bits(dtype, shape, seed):
    """A tensor of `dtype` holding arbitrary bit patterns (NaN payloads, subnormals, ...)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    width = torch.empty(0, dtype=dtype).element_size() * 8
    ints = torch.randint(-(2 ** (width - 1)), 2 ** (width - 1) - 1, shape, generator=g)
    return ints.to(getattr(torch, f"int{width}")).view(dtype)


def _torch_bits(t):
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy()
    return t.view(getattr(torch, f"int{t.element_size() * 8}")).numpy()


def _numpy_bits(a):
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(f"i{a.dtype.itemsize}")


@pytest.mark.parametrize("short", sorted(TORCH_NAMES))
def test_every_dtype_keeps_its_bits_and_memory(short):
    dtype = getattr(torch, TORCH_NAMES[short])
    t = _random_bits(dtype, (5, 7), seed=len(short))
    a = to_numpy(t, "x")
    assert a.dtype == next(e.numpy for e in ELEMENT_TYPES if e.short == short)
    assert np.array_equal(_numpy_bits(a), _torch_bits(t))
    # the same memory: a write through the numpy view is a write to the tensor
    a[0, 0] = a[1, 1]
    assert _torch_bits(t)[0, 0] == _torch_bits(t)[1, 1]
    # strided (transposed) tensors too
    tt = t.t()
    assert np.array_equal(_numpy_bits(to_numpy(tt, "x")), _torch_bits(t).T)


def test_unsupported_dtype_is_named():
    with pytest.raises(TypeError, match="torch.complex64 is not a PyPTO element type"):
        to_numpy(torch.zeros(2, dtype=torch.complex64), "argument 'x'")


COPY_KERNEL = """
import pypto

@pypto.frontend.jit
def copy_kernel(x: pypto.Tensor([6, 32], pypto.{dt}), out: pypto.Tensor([6, 32], pypto.{dt})):
    pypto.set_vec_tile_shapes(2, 32)
    for i in pypto.loop(3, name="rows", idx_name="i"):
        pypto.assemble(pypto.view(x, [2, 32], [i * 2, 0]), [i * 2, 0], out)
"""


@pytest.mark.parametrize("element", ELEMENT_TYPES, ids=lambda e: e.short)
def test_kernel_output_bits_equal_input_bits(tmp_path, interpret, import_file, element):
    path = tmp_path / f"copy_{element.short}.py"
    path.write_text(COPY_KERNEL.format(dt=element.pypto))
    module = import_file(path, f"copy_{element.short}")
    dtype = getattr(torch, TORCH_NAMES[element.short])
    x = _random_bits(dtype, (6, 32), seed=3)
    out = torch.zeros(6, 32, dtype=dtype)
    ptr = out.data_ptr()
    module.copy_kernel(x, out)
    assert out.data_ptr() == ptr  # written in place
    assert np.array_equal(_torch_bits(out), _torch_bits(x))
