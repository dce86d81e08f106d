"""A conftest in the PyPTO-Gym style: the device as an int fixture, and cases picked by
the NPU's SoC version (`torch_npu.npu.get_soc_version()`; 950-marked cases need 260)."""

import os

import pytest


@pytest.fixture
def device():
    return int(os.environ.get("TILE_FWK_DEVICE_ID", 0))


def pytest_configure(config):
    config.addinivalue_line("markers", "soc(name): the SoC a case needs")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    import torch_npu

    tag = "950" if torch_npu.npu.get_soc_version() == 260 else "910"
    kept = []
    for item in items:
        marker = item.get_closest_marker("soc")
        if tag in (marker.args if marker else ("910",)):
            kept.append(item)
        else:
            config.hook.pytest_deselected(items=[item])
    items[:] = kept
