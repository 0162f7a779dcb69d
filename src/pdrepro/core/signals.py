"""Every command's signal handling, in one module: nothing else in the bundle installs a handler or masks a
signal (tests/core/test_signals_one_module.py holds that). SIGTERM (scancel, docker stop, kill), SIGHUP (a
closed terminal or ssh session) and SIGINT (Ctrl-C) end a command the way Ctrl-C always did, as a
KeyboardInterrupt (``Stopped``), so every ``finally`` on the way out runs, and the CLI exits 128 + the first
signal's number (130, 143, 129), as a shell reports a process the signal ended. Three ways, one per kind of
command, share the flag below and ``Stopped``:

- ``stop_on_signals`` (the sweep, `load`): the handler never raises. An exception raised from a handler lands
  between any two bytecodes of the main thread: inside ``subprocess.Popen.wait`` after it took its waitpid
  lock, inside a logging handler holding its lock, or inside an import of another thread: the command then
  hangs in its clean-up. So the handler only notes the signal and stops what was registered with
  ``stopping`` (a process group: a kill, no lock taken); the main thread raises ``Stopped`` at the next safe
  point: ``checkpoint``, ``sleep``, ``wait_for`` and the wait loops built on them.
- ``unwinding`` (`stack up`): the first signal raises at once, so the start unwinds and stops what it
  started; ``ignore_more`` then keeps further ones from cutting that clean-up short, and ``deferred`` holds
  signals back while a record and a spawn are written, so the record never lags a child.
- ``noting`` (the arms runner, between its stages): the signal is only noted, as the stages' own handlers
  take the ones during them; the runner acts on it at its next step.
- ``rearmed`` (`pdrepro fault` undoing its fault after a stop): inside ``stop_on_signals``, a second signal
  ends the undo's waits, never the undo's own signals.

``raise_on_signals`` raises at once, for single-threaded commands whose clean-up is their own ``finally``
blocks (offline-model, the smoke, the reproduction pipeline). In every way a repeated signal (docker stop's
grace, a second Ctrl-C) changes nothing: the command ends with the first signal's status, and never by the
signal itself. A signal the process inherited as ignored (nohup) stays ignored where a way says so.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from .exits import HANDLED

# How often a wait looks at the flag: the latency of a stop, against the cost of waking up.
POLL_S = 0.1

T = TypeVar("T")


class Stopped(KeyboardInterrupt):
    """The command was told to stop by ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number; a plain KeyboardInterrupt is SIGINT's."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def signal_name(exc: KeyboardInterrupt) -> str:
    return name_of(getattr(exc, "signum", signal.SIGINT))


def name_of(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _Flag:
    """The first signal the noting handler took, and what it stops at once. One per process: the handlers
    are the process's, and one command runs in it at a time (the run lock)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.stoppers: list[Callable[[], None]] = []


_flag = _Flag()


def _handler(signum: int, _frame) -> None:
    if _flag.signum is not None:
        return  # a repeat: the first signal decides how the command ends
    _flag.signum = signum
    for stop in list(_flag.stoppers):
        try:
            stop()
        except Exception:  # noqa: BLE001 - whatever failed, the safe point still stops the command
            pass


def requested() -> int | None:
    """The signal that asked the command to stop, None while none has."""
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


def wait_for(call: Callable[[], T]) -> T:
    """``call()``, a blocking call (an HTTP request, a file read) that cannot look at the flag itself, made in
    a thread of its own while this one looks at the flag every ``POLL_S``: a signal ends the wait with
    ``Stopped`` at once, and the call is left to end on its own timeout (its thread holds nothing the
    command's clean-up needs). Without a noting handler in place it is just ``call()`` in another thread."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it came
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="pdrepro-wait")
    worker.start()
    while worker.is_alive():
        checkpoint()
        worker.join(POLL_S)
    checkpoint()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


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
    """The noting handlers (see the module text); ``Stopped`` at the end of the block if a signal came
    after the last safe point."""
    previous = {s: signal.getsignal(s) for s in HANDLED}
    outer, _flag.signum = _flag.signum, None
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
        # The flag is the block's: a stop it saw has become its exception or its command's status, and
        # must not stop a later wait of the same process (the next stage, the next test).
        _flag.signum = outer


@contextlib.contextmanager
def rearmed() -> Iterator[None]:
    """Inside ``stop_on_signals``, after a stop: an undo that must wait (`pdrepro fault` restarting the server it
    killed) runs with the flag cleared, so its waits end with ``Stopped`` on a second signal and the caller gives
    up that wait only; the first signal still decides how the command ends."""
    first, _flag.signum = _flag.signum, None
    try:
        yield
    finally:
        _flag.signum = first if first is not None else _flag.signum


@contextlib.contextmanager
def raise_on_signals() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP raise ``Stopped`` at once, for a single-threaded command whose clean-up is
    its own ``finally`` blocks; repeats are ignored so they cannot cut that clean-up short."""
    previous = {s: signal.getsignal(s) for s in HANDLED}
    stopped: list[int] = []
    outer, _flag.signum = _flag.signum, None

    def handler(signum, _frame):
        if stopped:
            return
        stopped.append(signum)
        _flag.signum = signum  # the waits built on the flag (wait_for, sleep) end too
        raise Stopped(signum)

    for s in HANDLED:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, signal.SIG_IGN if stopped else old)  # see stop_on_signals
        _flag.signum = outer


@contextlib.contextmanager
def unwinding() -> Iterator[None]:
    """`stack up`: the first signal raises ``Stopped`` at once, and the ones after it are ignored, so they
    cannot cut the unwinding short. A signal inherited as ignored (nohup) stays ignored: a closed terminal is
    then no reason to stop."""
    previous = {s: signal.getsignal(s) for s in HANDLED}

    def handler(signum, _frame):
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    for s in HANDLED:
        if previous[s] is not signal.SIG_IGN:
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
def ignoring() -> Iterator[None]:
    """Signals are ignored while the block runs (a clean-up after a stop), then handled as before."""
    previous = {s: signal.getsignal(s) for s in HANDLED}
    ignore_more()
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


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


class Noted:
    """The first signal that came while ``noting`` (None while none has)."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum: int, _frame) -> None:
        if self.signum is None:
            self.signum = signum


@contextlib.contextmanager
def noting() -> Iterator[Noted]:
    """The arms runner between its stages: a signal is only noted (a handler that raises could land inside a
    state write), for the runner to act on at its next step; after one, the signals stay ignored."""
    noted = Noted()
    previous = {s: signal.getsignal(s) for s in HANDLED}
    for s in HANDLED:
        if previous[s] is not signal.SIG_IGN:  # under nohup a closed terminal is no reason to stop
            signal.signal(s, noted)
    try:
        yield noted
    finally:
        for s, old in previous.items():
            signal.signal(s, signal.SIG_IGN if noted.signum is not None else old)


def die_with_parent() -> None:
    """In a child before exec: Linux sends it SIGKILL when the command that started it dies, so a command
    killed outright (SIGKILL, the machine's OOM killer) leaves no child still running or writing."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the command's own clean-up is what stops the child


def run_child(argv: list[str], grace_s: float = 5.0) -> int:
    """Runs ``argv`` (the gates' pytest) to its end and returns its status; a signal to the command stops
    it too. The child has a session of its own, so a terminal's Ctrl-C or hang-up reaches only the bundle,
    which gives the child SIGTERM (its whole group: pytest's workers too), then SIGKILL after ``grace_s``:
    the child dies quietly, and the user sees the bundle's one line, not the child's own KeyboardInterrupt
    traceback above it. The wait looks at the flag every ``POLL_S``, whichever way signals are taken."""
    import os
    import subprocess

    proc = subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent)
    try:
        while True:
            checkpoint()
            try:
                return proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                continue
    finally:
        if proc.returncode is None:
            with ignoring():  # a second Ctrl-C does not leave the child running
                for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
                    try:
                        os.killpg(proc.pid, signum)
                    except (ProcessLookupError, PermissionError):
                        pass
                    try:
                        proc.wait(timeout=wait_s)
                        break
                    except subprocess.TimeoutExpired:
                        continue
