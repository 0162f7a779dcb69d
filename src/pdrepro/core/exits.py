"""The exit statuses every command shares, and the signals that stop one cleanly.

Exit 0: done and every check passes; 1: a measurement fails a check (or a run is missing); 2: bad input or
environment, named on one line; 128 + N: stopped by signal N, one of ``HANDLED``, after the command cleaned up.
Every layer that runs, resumes or records a command (the sweep, `stack up`, the pipeline, the arms runner and its
state) reads them from here, so a status means the same wherever it is written or read.
"""

from __future__ import annotations

import signal

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# A reader closed our standard output (`pdrepro knobs | head -1`): the status a shell shows for SIGPIPE.
EXIT_CLOSED_OUTPUT = 128 + int(signal.SIGPIPE)
HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# The statuses of a command a handled signal stopped.
STOPPED = frozenset(128 + int(s) for s in HANDLED)
