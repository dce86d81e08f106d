"""vc-split: unit inference, stage structure, transfers, tile shapes, the flow pattern,
the crossing verifier and the platform table."""

from __future__ import annotations

import configparser
import importlib.util
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.utils.exceptions import VerifyException

from tileir.diagnostics import TileirError
from tileir.dialect import pto
from tileir.ir import make_context, parse_module, print_module
from tileir.passes.platform import (
    PLATFORMS,
    cube_tile_aligned,
    cube_tile_fits,
    derive_cube_tile,
    derive_vec_tile,
    get_platform,
    vec_tile_fits,
)
from tileir.passes.stages import flow_pattern, kernels, op_unit, stages
from tileir.passes.vc_split import VCSplitPass, describe_kernel
from tileir.testing import check_pass

SK03 = """
pto.kernel @sk03(%x: memref<21x64xf32>, %w: memref<32x64xf32>, %out: memref<21x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c21 = arith.constant 21 : index
  pto.loop %i = %c0 to %c3 step %c1 {
    %off = arith.muli %i, %c8 : index
    %rest = arith.subi %c21, %off : index
    %rows = arith.minsi %rest, %c8 : index
    pto.set_vec_tile_shapes [4, 64]
    %xt = pto.view %x[%off, 0] valid [%rows, 64] : memref<21x64xf32> -> tensor<8x64xf32>
    %sq = pto.mul %xt, %xt : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
    %ss = pto.sum %sq, -1 keepdim : tensor<8x64xf32> -> tensor<8x1xf32>
    %r = pto.rsqrt %ss : tensor<8x1xf32>
    %y = pto.mul %xt, %r : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
    pto.set_cube_tile_shapes m [16, 32] k [32, 64] n [32, 32]
    %wt = pto.view %w[0, 0] : memref<32x64xf32> -> tensor<32x64xf32>
    %p = pto.matmul %y, %wt b_trans : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    %o = pto.neg %p : tensor<8x32xf32>
    pto.assemble %o into %out[%off, 0] : tensor<8x32xf32>, memref<21x32xf32>
  }
}
"""


def _split(text: str, **options) -> object:
    module = parse_module(text)
    VCSplitPass(**options).apply(make_context(), module)
    module.verify()
    return module


def test_units_of_ops() -> None:
    module = parse_module(SK03)
    units = {op.name: op_unit(op) for op in module.walk() if not op.regions}
    assert units["pto.matmul"] == "cube"
    for name in ("pto.mul", "pto.sum", "pto.rsqrt", "pto.neg", "pto.assemble"):
        assert units[name] == "vector", name
    for name in ("pto.view", "arith.muli", "arith.constant", "pto.set_vec_tile_shapes"):
        assert units[name] is None, name


def test_sk03_stages_transfers_and_user_tile_shapes() -> None:
    module = _split(SK03)
    (kernel,) = kernels(module)
    found = stages(kernel)
    assert [s.unit.data for s in found] == ["vector", "cube", "vector"]
    assert flow_pattern(kernel) == "V1,C1,V1"
    assert kernel.attributes["flow_pattern"].data == "V1,C1,V1"
    # The user's settings, as written in the source: vec [4, 64] for both vector stages
    # (still in effect after the cube stage), cube m [16, 32] k [32, 64] n [32, 32].
    assert list(found[0].tile_shape.get_values()) == [4, 64]
    assert list(found[1].cube_tile.get_values()) == [16, 32, 32, 64, 32, 32]
    assert list(found[2].tile_shape.get_values()) == [4, 64]
    transfers = [op for op in module.walk() if isinstance(op, pto.TransferOp)]
    assert [(t.src_unit.data, t.dst_unit.data) for t in transfers] == [
        ("vector", "cube"),
        ("cube", "vector"),
    ]
    # Each transfer sits in the stage that receives the tile.
    assert [t.parent_op() for t in transfers] == [found[1], found[2]]
    # The index math before the loop is in no stage.
    body = list(kernel.body.block.ops)
    assert all(op.name == "arith.constant" for op in body[:5])


def test_order_of_ops_is_kept() -> None:
    before = [op.name for op in parse_module(SK03).walk() if not op.regions]
    module = _split(SK03)
    after = [
        op.name
        for op in module.walk()
        if not op.regions and op.name not in ("pto.transfer", "pto.yield")
    ]
    assert after == [n for n in before if n != "pto.yield"]


def test_sk03_outputs_unchanged() -> None:
    rng = np.random.default_rng(7)
    inputs = {
        "x": rng.standard_normal((21, 64)).astype(np.float32),
        "w": rng.standard_normal((32, 64)).astype(np.float32),
        "out": np.zeros((21, 32), np.float32),
    }
    after = check_pass(VCSplitPass(), parse_module(SK03), inputs=inputs)
    assert len(stages(next(kernels(after)))) == 3


def test_idempotent_text() -> None:
    once = _split(SK03)
    text = print_module(once)
    VCSplitPass().apply(make_context(), once)
    assert print_module(once) == text


def test_report_goes_to_stderr(capsys) -> None:
    _split(SK03, report=True)
    err = capsys.readouterr().err
    assert "vc-split: @sk03: V1,C1,V1" in err
    assert "2 transfers added" in err


def test_describe_kernel() -> None:
    (kernel,) = kernels(_split(SK03))
    assert describe_kernel(kernel).startswith("@sk03: V1,C1,V1 [vector tile [4, 64]; cube")


def test_unknown_platform() -> None:
    with pytest.raises(ValueError, match="unknown platform 'B9'; known platforms: A2, A3"):
        _split(SK03, platform="B9")


def test_cli_bad_platform_has_no_traceback(tmp_path) -> None:
    import subprocess

    path = tmp_path / "k.mlir"
    path.write_text(SK03)
    done = subprocess.run(
        ["tileir-opt", str(path), "-p", 'vc-split{platform="Q"}'],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "unknown platform 'Q'" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- verifiers

CROSSING = """
pto.kernel @k(%x: memref<16x16xf32>, %out: memref<16x16xf32>) {
  %a = pto.stage cube {
    %t = pto.view %x[0, 0] : memref<16x16xf32> -> tensor<16x16xf32>
    %m = pto.matmul %t, %t : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
    pto.yield %m : tensor<16x16xf32>
  } -> tensor<16x16xf32>
  pto.stage vector {
    BODY
    pto.yield
  }
}
"""


def test_verifier_rejects_direct_cube_to_vector_flow() -> None:
    text = CROSSING.replace(
        "BODY", "pto.assemble %a into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>"
    )
    with pytest.raises(TileirError, match="uses a tile computed on the cube unit; pass it"):
        parse_module(text)


def test_verifier_accepts_transfer_and_rejects_wrong_direction() -> None:
    good = CROSSING.replace(
        "BODY",
        "%b = pto.transfer %a from cube to vector : tensor<16x16xf32>\n"
        "pto.assemble %b into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>",
    )
    parse_module(good)
    wrong = good.replace("from cube to vector", "from vector to cube")
    with pytest.raises(TileirError, match="'pto.transfer'"):
        parse_module(wrong)


def test_transfer_verifier_direct() -> None:
    module = parse_module(
        CROSSING.replace(
            "BODY",
            "%b = pto.transfer %a from cube to vector : tensor<16x16xf32>\n"
            "pto.assemble %b into %out[0, 0] : tensor<16x16xf32>, memref<16x16xf32>",
        )
    )
    transfer = next(op for op in module.walk() if isinstance(op, pto.TransferOp))
    transfer.src_unit = pto.StageUnitAttr(pto.StageUnit.VECTOR)
    transfer.dst_unit = pto.StageUnitAttr(pto.StageUnit.CUBE)
    with pytest.raises(VerifyException):
        transfer.verify()


# --------------------------------------------------------------------------- platform


def _pypto_ini() -> str | None:
    spec = importlib.util.find_spec("pypto")
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "lib", "configs", "A2A3.ini")
    return path if os.path.exists(path) else None


@pytest.mark.skipif(_pypto_ini() is None, reason="needs the pypto wheel's platform file")
def test_platform_table_matches_pypto_platform_file() -> None:
    ini = configparser.ConfigParser()
    ini.read(_pypto_ini())
    core = ini["AICoreSpec"]
    for name in ("A2", "A3"):
        p = PLATFORMS[name]
        assert p.ub_size == int(core["ub_size"])
        assert p.l1_size == int(core["l1_size"])
        assert p.l0a_size == int(core["l0_a_size"])
        assert p.l0b_size == int(core["l0_b_size"])
        assert p.l0c_size == int(core["l0_c_size"])
        assert p.cube_align == int(core["cube_m_size"]) == int(core["cube_k_size"])


def test_derived_vector_tiles_by_hand() -> None:
    a2 = get_platform("a2")
    # 8*64*4 bytes * 4 tiles = 8 KiB: fits as is.
    assert derive_vec_tile([8, 64], 4, a2) == [8, 64]
    # 8*4096*4*4 = 512 KiB > 192 KiB; 8*2048*4*4 = 256 KiB > 192; 8*1024*4*4 = 128 KiB.
    assert derive_vec_tile([8, 4096], 4, a2) == [8, 1024]
    # A dynamic dim counts as one row; more than 4 dims keep the innermost 4.
    assert derive_vec_tile([-1, 64], 2, a2) == [1, 64]
    assert derive_vec_tile([2, 3, 4, 5, 6], 4, a2) == [3, 4, 5, 6]


def test_derived_cube_tile_by_hand() -> None:
    a2 = get_platform("A2")
    # (M, K, N) = (8, 64, 32) f32: m 16 (aligned), k 64, n 32, all fit at once:
    # L0A 16*64*4*2 = 8 KiB, L0B 64*32*4*2 = 16 KiB, L0C 16*32*4*2 = 4 KiB.
    assert derive_cube_tile(8, 64, 32, 4, a2) == [16, 16, 64, 64, 32, 32]


@given(
    m=st.sampled_from([-1, 1, 7, 16, 100, 4096]),
    k=st.sampled_from([-1, 1, 16, 33, 512, 28672]),
    n=st.sampled_from([-1, 1, 24, 128, 1000, 8192]),
    elem=st.sampled_from([1, 2, 4]),
)
def test_derived_cube_tiles_are_legal(m: int, k: int, n: int, elem: int) -> None:
    a2 = PLATFORMS["A2"]
    tile = derive_cube_tile(m, k, n, elem, a2)
    assert cube_tile_aligned(tile, a2)
    assert cube_tile_fits(tile, elem, a2)


@given(
    shape=st.lists(st.sampled_from([-1, 1, 3, 8, 64, 1000, 65536]), min_size=1, max_size=5),
    elem=st.sampled_from([1, 2, 4]),
)
def test_derived_vector_tiles_are_legal(shape: list[int], elem: int) -> None:
    a2 = PLATFORMS["A2"]
    tile = derive_vec_tile(shape, elem, a2)
    assert 1 <= len(tile) <= 4 and all(d > 0 for d in tile)
    assert vec_tile_fits(tile, elem, a2)
