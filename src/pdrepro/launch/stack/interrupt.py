"""Signals during `stack up`: the first SIGINT, SIGTERM or SIGHUP unwinds the start like Ctrl-C, so what
was started is stopped; the ones after it are ignored, so they cannot cut that clean-up short. While the
record and a spawn are being written the signals wait (``deferred``), so the record never lags a child."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

from ...core.exits import HANDLED


class Interrupted(KeyboardInterrupt):
    """`stack up` was told to stop by ``signum`` (the CLI exits 128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def unwinding() -> Iterator[None]:
    previous = {s: signal.getsignal(s) for s in HANDLED}

    def handler(signum, _frame):
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    for s in HANDLED:
        if previous[s] is not signal.SIG_IGN:  # under nohup a closed terminal is no reason to stop
            signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def ignore_more() -> None:
    """From here on (the clean-up) further signals are ignored."""
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Signals arriving inside wait until it ends, and are then handled."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def unblock_in_child() -> None:
    """A child spawned inside ``deferred`` would inherit the blocked signals: it gets them back."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
