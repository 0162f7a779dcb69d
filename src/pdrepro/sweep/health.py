"""Waits until the router and both workers answer, or says why they do not."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

from ..core import signals
from ..core.errors import UserError

log = logging.getLogger(__name__)

# The shortest a request is given, near the deadline: long enough for a local server's answer.
MIN_REQUEST_S = 0.2
# How often a wait says what it still waits for: a stack loading a large model is silent for minutes otherwise.
ANNOUNCE_S = 10.0

@dataclass(frozen=True)
class Endpoint:
    role: str  # router | prefill | decode | worker
    url: str
    # The engine's health paths for this role, tried in order (a 404 moves to the next).
    paths: tuple[str, ...]


def probe(endpoint: Endpoint, timeout: float = 10.0, deadline: float | None = None,
          clock: Callable[[], float] = time.monotonic) -> str | None:
    """None when healthy, else what was seen (for the final message). ``deadline`` (on ``clock``) bounds
    every request, so a server that never answers cannot stretch the wait past it."""
    last = "no answer"
    for path in endpoint.paths:
        url = endpoint.url.rstrip("/") + path
        left = timeout if deadline is None else min(timeout, deadline - clock())
        try:
            resp = requests.get(url, timeout=max(MIN_REQUEST_S, left))
        except requests.RequestException as exc:
            last = f"{url}: {type(exc).__name__}"
            continue
        if resp.status_code == 200:
            return None
        last = f"{url}: HTTP {resp.status_code}"
        if resp.status_code != 404:
            break
    return last


def wait_healthy(
    endpoints: list[Endpoint],
    timeout_s: float,
    log_tail: Callable[[str], list[str]] | None = None,
    interval_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = signals.sleep,
    call: Callable[[Callable[[], str | None]], str | None] = signals.wait_for,
) -> float:
    """Polls every endpoint until all are healthy; returns the seconds waited. ``timeout_s`` bounds the whole
    wait, every request in it included (not each URL or round). A signal ends it within ``signals.POLL_S``,
    as ``Stopped``, wherever it is: each request is made through ``call`` (``signals.wait_for``: the request
    in a thread of its own while this one looks at the flag) and ``sleep`` waits between rounds."""
    start = clock()
    deadline = start + timeout_s
    pending = {e.role: e for e in endpoints}
    seen: dict[str, str] = {}
    announced = 0.0
    rounds = 0
    while True:
        rounds += 1
        for role, endpoint in list(pending.items()):
            if rounds > 1 and clock() >= deadline:
                break  # every endpoint was asked at least once
            result = call(functools.partial(probe, endpoint, timeout=min(10.0, max(1.0, timeout_s)),
                                            deadline=deadline, clock=clock))
            if result is None:
                log.info(f"  {role} {endpoint.url} is healthy")
                del pending[role]
            else:
                seen[role] = result
        signals.checkpoint()  # a signal that came in the last request ends the wait as the signal, not as a timeout
        waited = clock() - start
        if not pending:
            return waited
        if waited >= timeout_s:
            raise UserError(_not_up_message(pending, seen, timeout_s, log_tail))
        if waited - announced >= ANNOUNCE_S:
            announced = waited
            log.info(waiting_line(pending, seen, waited, timeout_s))
        sleep(min(interval_s, max(0.0, timeout_s - waited)))


def waiting_line(pending: dict[str, Endpoint], seen: dict[str, str], waited: float, timeout_s: float) -> str:
    """What the wait still waits for, what each last answered, and how long of its bound it has waited."""
    what = ", ".join(f"{role} at {e.url} ({seen.get(role, 'not asked yet')})" for role, e in pending.items())
    return f"  waiting for the stack: {what}; {waited:.0f} s of at most {timeout_s:.0f} s (--wait-timeout)"


def _not_up_message(pending, seen, timeout_s, log_tail) -> str:
    parts = [f"{role} at {e.url} not healthy after {timeout_s:.0f} s ({seen.get(role, 'no answer')})"
             for role, e in pending.items()]
    msg = "; ".join(parts)
    tails = []
    if log_tail is not None:
        for role in pending:
            if role == "router":
                continue
            lines = log_tail(role)
            if lines:
                tails.append(f"last {role} log lines: " + " | ".join(line.strip() for line in lines))
    hint = ("check that the stack is up (compose ps / docker logs), that the URLs are right, "
            "or raise --wait-timeout for a large model still loading")
    return msg + "; " + hint + (("; " + "; ".join(tails)) if tails else "")
