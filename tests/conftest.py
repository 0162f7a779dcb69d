"""The test tree mirrors the package (tests/sweep/ tests pdrepro.sweep, ...). The helpers every folder shares
(runbuilder, sweephelp, fakebin, recordedrun, ...) live here in tests/ and are imported by name, so tests/ is put
on the import path once for every folder below it. The mirrored folders go on it too: a test may build its inputs
with another folder's builders (the schema tests validate summaries made the way the comparison's and the smoke
summary's tests make them), and test module names are unique across the tree, so no name shadows another."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
for folder in [TESTS, *sorted(p.parent for p in TESTS.glob("*/test_*.py"))]:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

# The adversarial suite (tests/adversarial/) generates hostile inputs with hypothesis. `make test` runs it
# seeded (derandomized, no example database written into the tree), so CI sees the same cases every time;
# `make adversarial-deep` runs many more examples with fresh randomness and prints what it shrank to.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the suite itself fails on the import, naming the missing test extra
    pass
else:
    settings.register_profile("seeded", derandomize=True, database=None, deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("deep", max_examples=1000, deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow])
    import os as _os

    settings.load_profile(_os.environ.get("PDREPRO_HYPOTHESIS", "seeded"))

# `make test` prints its count of finished tests with the time taken so far (tests/elapsed.py).
pytest_plugins = ["elapsed"]
