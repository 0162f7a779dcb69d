"""How many hostile examples a property test runs: the count its author seeded for `make test`, and ten times it
(or the deeper count the test asks for) under the deep profile (`make adversarial-deep`, PDREPRO_HYPOTHESIS=deep).

Every ``@settings(max_examples=...)`` in the tests goes through ``examples`` (tests/adversarial/test_depth.py holds
that): a bare number would run the same count in both profiles, and the deep profile would deepen nothing."""

from __future__ import annotations

import os

DEEP_FACTOR = 10


def deep() -> bool:
    """Whether this run is the deep profile (tests/conftest.py loads the profile from the same variable)."""
    return os.environ.get("PDREPRO_HYPOTHESIS") == "deep"


def examples(seeded: int, deep_count: int | None = None) -> int:
    """SEEDED examples normally; under the deep profile DEEP_COUNT (never fewer than ten times SEEDED)."""
    if seeded < 1:
        raise ValueError(f"a property test runs at least one example, not {seeded}")
    if not deep():
        return seeded
    return max(DEEP_FACTOR * seeded, deep_count or 0)
