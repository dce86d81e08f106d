"""On-chip buffer sizes of the NPU targets, and the legal tile shapes they allow.

The numbers come from the `[AICoreSpec]` section of the platform file that the `pypto`
wheel ships (`pypto/lib/configs/A2A3.ini`, NpuArch 2201: Ascend910B, whose AI core
`AIC-C-220` is also the core of the A3 parts). Keeping them in this one table lets a
pass derive tile shapes without importing `pypto`.

A vector tile must fit the Unified Buffer together with the other tiles an op touches;
a cube tile is three [L0, L1] pairs (m, k, n) whose L0 blocks must fit L0A (M x K), L0B
(K x N) and L0C (M x N, FP32 accumulation) and whose L1 blocks must fit L1.

>>> a2 = PLATFORMS["A2"]
>>> derive_vec_tile([8, 4096], 4, a2)
[8, 1024]
>>> derive_cube_tile(8, 4096, 1024, 2, a2)
[16, 16, 128, 512, 128, 128]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DYNAMIC = -1
"""A dim not known at compile time (xDSL's DYNAMIC_INDEX)."""


@dataclass(frozen=True)
class Platform:
    name: str
    ub_size: int
    l1_size: int
    l0a_size: int
    l0b_size: int
    l0c_size: int
    cube_align: int
    """Cube fractal edge (cube_m_size = cube_n_size = cube_k_size)."""
    vec_buffers: int = 4
    """How many tiles of one vector op live in the UB at once: two inputs and one
    output, plus one slack for double buffering of the loads."""
    cube_buffers: int = 2
    """L0 / L1 are double-buffered (ping-pong), so a tile may use half of each."""


_A2A3 = dict(
    ub_size=196608,
    l1_size=524288,
    l0a_size=65536,
    l0b_size=65536,
    l0c_size=131072,
    cube_align=16,
)

PLATFORMS: dict[str, Platform] = {
    "A2": Platform("A2", **_A2A3),  # type: ignore[arg-type]
    "A3": Platform("A3", **_A2A3),  # type: ignore[arg-type]
}


def get_platform(name: str) -> Platform:
    """The platform called `name` (case-insensitive), with an error listing the known ones."""
    platform = PLATFORMS.get(name.upper())
    if platform is None:
        raise ValueError(f"unknown platform {name!r}; known platforms: {', '.join(PLATFORMS)}")
    return platform


def _product(values: Sequence[int]) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def vec_tile_fits(shape: Sequence[int], elem_bytes: int, platform: Platform) -> bool:
    return _product(shape) * elem_bytes * platform.vec_buffers <= platform.ub_size


def derive_vec_tile(shape: Sequence[int], elem_bytes: int, platform: Platform) -> list[int]:
    """A legal vector tile shape for ops on tiles of `shape`: at most 4 dims, each > 0,
    fitting the UB. Dynamic dims count as 1 (one row at a time); the largest dim is
    halved until the tile fits, so the innermost (contiguous) dim stays long."""
    tile = [1 if d == DYNAMIC or d <= 0 else d for d in shape][-4:] or [1]
    while not vec_tile_fits(tile, elem_bytes, platform):
        i = max(range(len(tile)), key=lambda k: (tile[k], -k))
        if tile[i] == 1:
            break
        tile[i] = (tile[i] + 1) // 2
    return tile


def _align_up(n: int, a: int) -> int:
    return (max(n, 1) + a - 1) // a * a


def cube_tile_fits(tile: Sequence[int], in_bytes: int, platform: Platform) -> bool:
    """`tile` is [m0, m1, k0, k1, n0, n1]."""
    m0, m1, k0, k1, n0, n1 = tile
    b = platform.cube_buffers
    return (
        m0 * k0 * in_bytes * b <= platform.l0a_size
        and k0 * n0 * in_bytes * b <= platform.l0b_size
        and m0 * n0 * 4 * b <= platform.l0c_size
        and (m1 * k1 + k1 * n1) * in_bytes * b <= platform.l1_size
    )


def cube_tile_aligned(tile: Sequence[int], platform: Platform) -> bool:
    m0, m1, k0, k1, n0, n1 = tile
    a = platform.cube_align
    return (
        all(v > 0 and v % a == 0 for v in tile) and m1 % m0 == 0 and k1 % k0 == 0 and n1 % n0 == 0
    )


def derive_cube_tile(m: int, k: int, n: int, in_bytes: int, platform: Platform) -> list[int]:
    """Cube tile [m0, m1, k0, k1, n0, n1] for an (M x K) @ (K x N) matmul: every size a
    multiple of the cube fractal (16), L0 blocks start at M <= 128, K <= 256, N <= 128
    and halve until they fit L0A / L0B / L0C; L1 keeps m and n and takes as many K
    blocks as fit (up to the whole, aligned K). Dynamic sizes count as 128."""
    a = platform.cube_align

    def size(v: int) -> int:
        return _align_up(128 if v == DYNAMIC else v, a)

    mm, kk, nn = size(m), size(k), size(n)
    m0, k0, n0 = min(mm, 128), min(kk, 256), min(nn, 128)
    while not cube_tile_fits([m0, m0, k0, k0, n0, n0], in_bytes, platform):
        # Shrink the largest L0 block first, never below one fractal.
        if k0 >= max(m0, n0) and k0 > a:
            k0 = _align_up(k0 // 2, a)
        elif m0 >= n0 and m0 > a:
            m0 = _align_up(m0 // 2, a)
        elif n0 > a:
            n0 = _align_up(n0 // 2, a)
        else:
            break
    k1 = k0
    while k1 * 2 <= kk and cube_tile_fits([m0, m0, k0, k1 * 2, n0, n0], in_bytes, platform):
        k1 *= 2
    return [m0, m0, k0, k1, n0, n0]
