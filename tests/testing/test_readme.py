"""The README's examples run as written."""

import re
from pathlib import Path

import pytest
from hypothesis import Phase, settings

import tileir.testing

README = Path(tileir.testing.__file__).with_name("README.md")
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.fixture
def small_budget():
    """The examples inherit the active profile; a doc test needs only a few examples
    and no shrinking to show that they run."""
    settings.register_profile(
        "readme", settings.default, max_examples=8, phases=[Phase.explicit, Phase.generate]
    )
    previous = settings.default
    settings.load_profile("readme")
    yield
    settings.register_profile("readme-restore", previous)
    settings.load_profile("readme-restore")


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys, small_budget):
    namespace: dict[str, object] = {"__name__": f"readme_example_{index}"}
    exec(compile(BLOCKS[index], f"{README}:block{index}", "exec"), namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value) and index > 0:
            value()
    if index == 0:
        assert "pass 'swap-sub' changed the meaning of @k0" in capsys.readouterr().out
