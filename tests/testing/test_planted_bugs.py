"""The checker catches wrong passes on generated programs, within the example budget
of the active hypothesis profile (`ci`: 40), deterministically (`derandomize`)."""

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from planted_passes import PLANTED

from tileir.testing import SemanticsMismatch, check_pass, modules


def _budget() -> settings:
    return settings(
        settings.default,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )


@pytest.mark.parametrize("planted", PLANTED, ids=lambda p: p.name)
def test_checker_catches_planted_bug_within_budget(planted):
    tried = []

    @_budget()
    @given(modules())
    def hunt(module):
        tried.append(module)
        check_pass(planted(), module, n_inputs=2)

    with pytest.raises(SemanticsMismatch) as info:
        hunt()
    assert info.value.pass_name == planted.name
    assert f"pass '{planted.name}'" in str(info.value)
    print(f"{planted.name}: caught after {len(tried)} programs")
