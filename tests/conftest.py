"""Loaded by pytest before it reads its options (the tests folder's own conftest)."""

import tests.fuzz.profiles  # noqa: F401  (registers --hypothesis-profile=long and fuzz-ci)
