"""Stopping a stack's processes: only those proven ours (proof.py), one by one (never a process
group: a group may hold a member nobody proved), each signal sent through a pidfd opened and then
re-proven, so a pid that ended and was handed to another process in between is never signalled."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from . import ownership, proof
from .record import StackRecord

# How often a stack is surveyed again for marked processes a server forked while it was being stopped.
ROUNDS = 3


def _send(f: proof.Finding, stack_id: str, sig: int) -> bool:
    if f.pid is None or f.start_ticks is None:
        return False
    try:
        fd = os.pidfd_open(f.pid)
    except (OSError, OverflowError):
        return False
    try:
        # The pidfd pins the process: proven after it is opened, the signal reaches this very process.
        st = ownership.stat(f.pid)
        if (st is None or not st.alive or st.start_ticks != f.start_ticks or ownership.marker(f.pid) != stack_id
                or proof.untouchable(f.pid)):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _running(f: proof.Finding) -> bool:
    st = ownership.stat(f.pid) if f.pid is not None else None
    return st is not None and st.alive and st.start_ticks == f.start_ticks


def stop(targets: list[proof.Finding], stack_id: str, grace_s: float, poll_s: float = 0.1) -> dict[int, str]:
    """SIGTERM to each target, SIGKILL to those left after ``grace_s``; pid -> what happened."""
    sent = [f for f in targets if _send(f, stack_id, signal.SIGTERM)]
    outcome = {f.pid: "was not running" for f in targets if f.pid is not None}
    deadline = time.monotonic() + grace_s
    while any(_running(f) for f in sent) and time.monotonic() < deadline:
        time.sleep(poll_s)
    for f in sent:
        assert f.pid is not None
        outcome[f.pid] = "stopped (SIGTERM)"
        if _running(f) and _send(f, stack_id, signal.SIGKILL):
            outcome[f.pid] = f"killed (SIGKILL after {grace_s:g} s)"
    for _ in range(50):
        if not any(_running(f) for f in sent):
            break
        time.sleep(0.1)
    return outcome


def take_down(rec: StackRecord, grace_s: float, say: Callable[[str], None]) -> list[proof.Finding]:
    """Stop every process of ``rec`` proven ours, last started first; say what happened to each.
    Returns the live processes the record names (or that sit in a server's group) which are not ours."""
    survey = proof.survey(rec)
    # A record without a stack id proves nothing ours (no targets); "" is then no process's marker.
    stack_id = rec.stack_id or ""
    outcome = stop(survey.targets[::-1], stack_id, grace_s) if survey.targets else {}
    for f in survey.recorded:
        say(f"{f.name} (pid {f.pid}) {outcome.get(f.pid, f.why) if f.ours and f.pid else f.why}")
    refused = {f.pid: f for f in survey.refused}
    strays, done = [f for f in survey.strays if f.ours], outcome
    for _ in range(ROUNDS):
        if strays:
            say("processes of this stack it does not name, found by its marker: "
                + ", ".join(f"{f.name} (pid {f.pid}) {done.get(f.pid or 0, '?')}" for f in strays))
        again = proof.survey(rec)
        refused.update({f.pid: f for f in again.refused})
        # Only processes still running after the stop above: a server may fork while it is being stopped.
        strays = again.targets
        if not strays:
            break
        done = stop(strays, stack_id, grace_s)
    else:
        if strays:
            say("processes of this stack it does not name, found by its marker: "
                + ", ".join(f"{f.name} (pid {f.pid}) {done.get(f.pid or 0, '?')}" for f in strays))
    return list(refused.values())


def send(f: proof.Finding, stack_id: str, sig: int) -> bool:
    """``sig`` to the proven process ``f`` (pinned by a pidfd and proven again first); whether it was sent.
    `pdrepro fault` signals through this, as `stack down` does."""
    return _send(f, stack_id, sig)
