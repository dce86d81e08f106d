"""Shared pytest configuration: hypothesis profiles.

Select one with the environment variable HYPOTHESIS_PROFILE (default `dev`):

- `ci`: few examples, no deadline, so the whole suite runs in minutes on 2 cores;
- `dev`: hypothesis' usual 100 examples, for working locally;
- `deep`: 2000 examples, for long runs hunting rare bugs.

Tests derive their own budgets from the active profile (`settings.default`) rather than
hard-coding `max_examples`, so that one variable scales the whole suite.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("ci", max_examples=40, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("deep", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
