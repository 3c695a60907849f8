"""The fuzz suite's hypothesis profiles, ``fuzz-ci`` and ``long`` (tests/fuzz/conftest.py says
what each runs).

They are registered from tests/conftest.py, which pytest loads before it reads
``--hypothesis-profile``, so that ``pytest --hypothesis-profile=long`` works from the top of
the repository and on ``tests`` as well as on ``tests/fuzz``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                              HealthCheck.large_base_example, HealthCheck.function_scoped_fixture,
                              HealthCheck.nested_given],
}
settings.register_profile("fuzz-ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=900, derandomize=False, **_COMMON)
