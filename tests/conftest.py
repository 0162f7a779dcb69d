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


# A test that runs a command in-process may leave a signal ignored or blocked: the sweep and `stack up` ignore
# the signals after the first, on purpose, until they exit, and hold them blocked while they write a record. In a
# test worker that outlives the command, that state is inherited by every process a later test starts, so a later
# `stack up` would never hear its SIGINT. Each test gets back the dispositions and the mask it started with.
import signal as _signal  # noqa: E402

import pytest as _pytest  # noqa: E402

_KEPT = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
# A suite started as a background job of a script (`make test &`) or under nohup inherits SIGINT and SIGHUP
# ignored, and every process a test starts would too: `stack up` and the sweep then rightly leave an ignored
# signal alone, and a test that sends one waits in vain (a stack up's SIGINT masks read SigIgn 0x81001007:
# HUP, INT and QUIT ignored). The tests speak for a user at a terminal, so the suite hears them as one does.
if _signal.getsignal(_signal.SIGINT) is _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
if _signal.getsignal(_signal.SIGHUP) is _signal.SIG_IGN:
    _signal.signal(_signal.SIGHUP, _signal.SIG_DFL)
# As the test process started (conftest is read before any test or fixture runs): what a module-scoped fixture
# running a command in-process leaves is undone too.
_AT_START = ({s: _signal.getsignal(s) for s in _KEPT}, _signal.pthread_sigmask(_signal.SIG_BLOCK, []))


@_pytest.fixture(autouse=True)
def _signals_as_they_were():
    yield
    handlers, mask = _AT_START
    _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
    for s, handler in handlers.items():
        if _signal.getsignal(s) is not handler and handler is not None:
            _signal.signal(s, handler)
