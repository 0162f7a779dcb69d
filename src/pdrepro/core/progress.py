"""The whole-job line of a run of several members (an A/B's arms, a tune's settings and repeats, a comparison's
configurations, a load's steps): "member N of M (NAME), elapsed ..., ETA ... (from the members done)".

The ETA is the mean time of the members this invocation ran to their end, times the members still to start
(this one included). Members skipped as done by an earlier invocation took no time here and are not averaged:
they would pull the mean to zero. Reported only; nothing is decided on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


def fmt_s(seconds: float) -> str:
    """Seconds as people read a duration: 0m07s, 12m30s, 1h05m (never negative)."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def eta_s(durations: list[float], remaining: int) -> float | None:
    """Seconds left for ``remaining`` members at the mean of ``durations`` (the members run to their end so far);
    None while none has ended. Never negative: a clock that stepped back gives a member no negative time."""
    if remaining < 0:
        raise ValueError(f"remaining members: {remaining}, not a count")
    if not durations:
        return None
    mean = sum(max(0.0, d) for d in durations) / len(durations)
    return mean * remaining


@dataclass
class JobClock:
    """The clock of one job of ``total`` members. ``begin(name)`` starts the next member and returns its line;
    ``end()`` closes it (its time then counts toward the ETA); ``skip()`` counts a member done before."""

    total: int
    what: str = "member"
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    position: int = field(init=False, default=0)
    durations: list[float] = field(init=False, default_factory=list)
    _member_start: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.total < 0:
            raise ValueError(f"a job of {self.total} members")
        self.started = self.clock()

    def skip(self) -> None:
        self.position += 1

    def begin(self, name: str) -> str:
        self.position += 1
        self._member_start = self.clock()
        return self.line(name)

    def end(self) -> None:
        if self._member_start is not None:
            self.durations.append(max(0.0, self.clock() - self._member_start))
            self._member_start = None

    def line(self, name: str) -> str:
        elapsed = max(0.0, self.clock() - self.started)
        # This member and every one after it are still to run.
        left = eta_s(self.durations, max(0, self.total - self.position + 1))
        done = len(self.durations)
        eta = ("ETA unknown until the first ends" if left is None
               else f"ETA {fmt_s(left)} (from the {done} {self.what}{'s' if done != 1 else ''} done)")
        return f"{self.what} {self.position} of {self.total} ({name}), elapsed {fmt_s(elapsed)}, {eta}"
