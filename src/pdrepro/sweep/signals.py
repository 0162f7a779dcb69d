"""SIGTERM (scancel, docker stop, kill), SIGHUP (a closed terminal or ssh session) and SIGINT end a sweep
the way Ctrl-C always did, as a KeyboardInterrupt (``Stopped``) in the main thread, so every ``finally`` on
the way out runs (the bench client is stopped, the length is marked unfinished) and the process exits
128 + the first signal's number, as a shell reports a process the signal ended.

The handler never raises. An exception raised from a handler lands between any two bytecodes of the main
thread: inside ``subprocess.Popen.wait`` after it took its waitpid lock (the clean-up's own wait then blocks
on that lock forever), inside a logging handler holding its lock while the client's output pump logs, or
inside an import while the provenance thread imports: the sweep then hangs in its clean-up (the SIGTERM test
that timed out about once in seven runs). So the handler only notes the signal and stops what the sweep
registered with ``stopping`` (the bench client's process group: a kill, no lock taken); the main thread
raises ``Stopped`` at the next safe point: ``checkpoint`` between steps, ``sleep`` and the launcher's own
wait loops. A repeated signal (docker stop's grace, a second Ctrl-C) changes nothing: the process still
ends with the first signal's status, and never by the signal itself, even once the sweep has returned.

``raise_on_signals`` keeps the old raise-at-once behaviour for single-threaded commands (offline-model),
whose only clean-up is removing their own temporary files.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterator

from ..core.exits import HANDLED

# How often a wait looks at the flag: the latency of a stop, against the cost of waking up.
POLL_S = 0.1


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


class _Flag:
    """The first signal of this process's sweep, and what the handler stops at once. One per process: the
    handlers are the process's, and one sweep runs in it at a time (the run lock)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.stoppers: list[Callable[[], None]] = []


_flag = _Flag()


def _handler(signum: int, _frame) -> None:
    if _flag.signum is not None:
        return  # a repeat: the first signal decides how the sweep ends
    _flag.signum = signum
    for stop in list(_flag.stoppers):
        try:
            stop()
        except Exception:  # noqa: BLE001 - whatever failed, the safe point still stops the client
            pass


def requested() -> int | None:
    """The signal that asked the sweep to stop, None while none has."""
    return _flag.signum


def checkpoint() -> None:
    """A safe point: raises ``Stopped`` if a signal has come."""
    if _flag.signum is not None:
        raise Stopped(_flag.signum)


def sleep(seconds: float) -> None:
    """``time.sleep`` that ends early, with ``Stopped``, when a signal comes."""
    end = time.monotonic() + max(0.0, seconds)
    while True:
        checkpoint()
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(POLL_S, left))


@contextlib.contextmanager
def stopping(stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, the first signal also calls ``stop`` from the handler (it must take no lock:
    a kill of a process group is right, a logging call or a Docker API call is not)."""
    _flag.stoppers.append(stop)
    try:
        if _flag.signum is not None:
            stop()  # the signal came before the thing to stop existed
        yield
    finally:
        _flag.stoppers.remove(stop)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """The sweep's handlers (see the module text); ``Stopped`` at the end of the block if a signal came
    after the last safe point."""
    previous = {s: signal.getsignal(s) for s in HANDLED}
    _flag.signum = None
    for s in HANDLED:
        signal.signal(s, _handler)
    try:
        yield
        checkpoint()
    finally:
        for s, old in previous.items():
            # After a stop the signals are ignored by the kernel itself: a repeat arriving while the process
            # exits must not end it by the signal (Python's own finalization puts a Python-level handler
            # back to the default action, which would).
            signal.signal(s, old if _flag.signum is None else signal.SIG_IGN)


@contextlib.contextmanager
def raise_on_signals() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP raise ``Stopped`` at once, for a single-threaded command whose clean-up is
    its own ``finally`` blocks; repeats are ignored so they cannot cut that clean-up short."""
    previous = {s: signal.getsignal(s) for s in HANDLED}
    stopped: list[int] = []

    def handler(signum, _frame):
        if stopped:
            return
        stopped.append(signum)
        raise Stopped(signum)

    for s in HANDLED:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, signal.SIG_IGN if stopped else old)  # see stop_on_signals
