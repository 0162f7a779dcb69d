"""Waits until the router and both workers answer, or says why they do not."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

from ..core.errors import UserError

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Endpoint:
    role: str  # router | prefill | decode | worker
    url: str
    # The engine's health paths for this role, tried in order (a 404 moves to the next).
    paths: tuple[str, ...]


def probe(endpoint: Endpoint, timeout: float = 10.0) -> str | None:
    """None when healthy, else what was seen (for the final message)."""
    last = "no answer"
    for path in endpoint.paths:
        url = endpoint.url.rstrip("/") + path
        try:
            resp = requests.get(url, timeout=timeout)
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
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Polls every endpoint until all are healthy; returns the seconds waited. ``sleep`` waits between
    rounds (the sweep's ends early on a signal: sweep.signals.sleep)."""
    start = clock()
    pending = {e.role: e for e in endpoints}
    seen: dict[str, str] = {}
    announced = 0.0
    while True:
        for role, endpoint in list(pending.items()):
            result = probe(endpoint, timeout=min(10.0, max(1.0, timeout_s)))
            if result is None:
                log.info(f"  {role} {endpoint.url} is healthy")
                del pending[role]
            else:
                seen[role] = result
        waited = clock() - start
        if not pending:
            return waited
        if waited >= timeout_s:
            raise UserError(_not_up_message(pending, seen, timeout_s, log_tail))
        if waited - announced >= 30:
            announced = waited
            log.info(f"  still waiting for {', '.join(pending)} ({waited:.0f} s of {timeout_s:.0f} s)")
        sleep(min(interval_s, max(0.0, timeout_s - waited)))


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
