"""SIGTERM (scancel, docker stop, kill), SIGHUP (a closed terminal or ssh session) and SIGINT end a sweep
the way Ctrl-C always did: as a KeyboardInterrupt raised in the main thread, so every ``finally`` on the
way out runs (the bench client's child or container is killed, the length is marked unfinished) and the
process exits 128 + the signal's number, as a shell reports a process the signal ended."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The sweep was told to stop by ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def exit_status(exc: KeyboardInterrupt) -> int:
    return 128 + getattr(exc, "signum", signal.SIGINT)


def signal_name(exc: KeyboardInterrupt) -> str:
    return signal.Signals(getattr(exc, "signum", signal.SIGINT)).name


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    previous = {s: signal.getsignal(s) for s in HANDLED}

    def handler(signum, _frame):
        # The first signal stops the sweep; repeats (docker stop's grace, a second Ctrl-C) would only cut
        # short the clean-up that stops the client, so they wait until it is done.
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    for s in HANDLED:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
