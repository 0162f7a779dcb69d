"""RUN/compare.json: which arms (configurations) of a `pdrepro compare` run are done, so that a rerun with
the same --out starts at the first one not done. A claim about the run, read as hostile: a file that is not
one, or that belongs to another scenario, is refused with one line, never trusted or overwritten."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from ..core import runfile
from ..core.errors import UserError
from ..core.strictmodel import Record, load
from .contract import write_json_atomic

FILE_NAME = "compare.json"
ArmState = Literal["pending", "running", "done", "failed"]


class Arm(Record):
    configuration: str
    state: ArmState = "pending"
    exit_status: int | None = None
    started_at: str | None = None      # UTC, ISO 8601
    seconds: float | None = None       # wall time of its last attempt: stack up, sweep, stack down


class CompareState(Record):
    schema_version: Literal[1] = 1
    scenario: str
    scenario_fingerprint: str
    arms: tuple[Arm, ...]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Book:
    """The state file of one run, rewritten whole (atomically) at every change."""

    def __init__(self, run: Path, state: CompareState):
        self.path = run / FILE_NAME
        self.state = state
        self._t0: dict[str, float] = {}

    def _arm(self, name: str) -> Arm:
        return next(a for a in self.state.arms if a.configuration == name)

    def _put(self, arm: Arm) -> None:
        arms = tuple(arm if a.configuration == arm.configuration else a for a in self.state.arms)
        self.state = self.state.model_copy(update={"arms": arms})
        write_json_atomic(self.path, self.state.model_dump(mode="json"), indent=2)

    def done(self, name: str) -> bool:
        return self._arm(name).state == "done"

    def seconds(self, name: str) -> float:
        return self._arm(name).seconds or 0.0

    def start(self, name: str) -> None:
        self._t0[name] = time.monotonic()
        self._put(self._arm(name).model_copy(update={"state": "running", "started_at": _now(), "exit_status": None,
                                                     "seconds": None}))

    def end(self, name: str, status: int) -> None:
        took = round(time.monotonic() - self._t0.pop(name, time.monotonic()), 1)
        self._put(self._arm(name).model_copy(update={"state": "done" if status == 0 else "failed",
                                                     "exit_status": status, "seconds": took}))


def open_state(run: Path, scenario: str, fingerprint: str, names: list[str]) -> Book:
    """The run's state, new or as an earlier run left it (same scenario and fingerprint, same configurations)."""
    path = run / FILE_NAME
    fresh = CompareState(scenario=scenario, scenario_fingerprint=fingerprint,
                         arms=tuple(Arm(configuration=n) for n in names))
    if not path.exists() and not path.is_symlink():
        book = Book(run, fresh)
        write_json_atomic(path, fresh.model_dump(mode="json"), indent=2)
        return book
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError, RecursionError, UserError) as exc:
        raise UserError(f"{path}: not a readable compare state ({exc}); move it away or choose another --out") from None
    old = load(CompareState, data, str(path), fix="it is written by `pdrepro compare`; move it away or choose another --out")
    if old.scenario_fingerprint != fingerprint or [a.configuration for a in old.arms] != names:
        raise UserError(f"{path}: a compare run of another scenario ({old.scenario}, other settings) is in {run}; "
                        "pass a new --out, or the same scenario to resume")
    return Book(run, old)
