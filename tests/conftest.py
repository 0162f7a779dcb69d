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
