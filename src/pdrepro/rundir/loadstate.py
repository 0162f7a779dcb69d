"""RUN/load-state.json as a model: a load sweep's plan (its prompt length, its requests per step, its steps of
concurrency and request rate) and how far each step got.

`pdrepro load` writes it before and after every step and resumes from it; the load analysis reads each step's
window (when its bench client started and ended, seconds since the epoch) to pick the step's requests out of
the servers' logs. Like every file in a run it is a claim: read through the one reader, validated here
(unknown keys, a status out of range, a window that ends before it starts, two steps of one name), and held
to the plan the command was asked for (``check_same``), so a resume never continues another load sweep.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import UserError
from ..core.strictmodel import IntBounds, NumberBounds, Record
from .layout import RunDir
from .memberrecord import RUN_ID
from .statefile import read_state, write_state

FILE = "load-state.json"
# A step's name is its folder in RUN/steps/: c<concurrency>, r<rate> or both joined by '-'.
STEP_NAME = r"^(c[1-9][0-9]{0,5})?(-?r[0-9]+(\.[0-9]+)?|-?rinf)?$"
_STEP_NAME = re.compile(STEP_NAME)
StepStatus = Literal["pending", "done", "failed", "unfinished"]
# Far more steps than any load sweep needs; a longer list is a typo (or a hostile file).
MAX_STEPS = 64
# Requests per second a step may ask for: below one a minute is no load, above 100 000 no box serves.
MIN_RATE, MAX_RATE = 0.001, 100_000.0


class LoadStep(Record):
    """One step of load: at most ``concurrency`` requests in flight, sent at ``request_rate`` per second (None:
    all at once, the bench client's inf)."""

    concurrency: Annotated[int, IntBounds(1, 100_000)] | None = Field(
        default=None, description="requests in flight at most (the bench client's --max-concurrency); null: no cap")
    request_rate: Annotated[float, NumberBounds(MIN_RATE, MAX_RATE)] | None = Field(
        default=None, description="requests per second (the bench client's --request-rate); null: all at once (inf)")

    @property
    def name(self) -> str:
        parts = [] if self.concurrency is None else [f"c{self.concurrency}"]
        if self.request_rate is not None:
            parts.append(f"r{self.request_rate:g}")
        elif self.concurrency is None:
            parts.append("rinf")
        return "-".join(parts)

    def describe(self) -> str:
        rate = "all at once" if self.request_rate is None else f"{self.request_rate:g} request(s)/s"
        cap = "no concurrency cap" if self.concurrency is None else f"concurrency {self.concurrency}"
        return f"{cap}, {rate}"


class LoadPlan(Record):
    """What the load sweep measures: one prompt length, ``num_prompts`` requests per step, the steps in order."""

    scenario_fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] = Field(
        description="sha256 of the scenario the load ran under")
    prompt_len: Annotated[int, IntBounds(1, 10_000_000)] = Field(description="input tokens of every request")
    num_prompts: Annotated[int, IntBounds(1, 1_000_000)] = Field(description="requests per step")
    steps: tuple[LoadStep, ...] = Field(min_length=1, max_length=MAX_STEPS)

    def check(self, source: str) -> None:
        names = [s.name for s in self.steps]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(f"{source}: step {twice[0]} is listed twice; list each step once")


class StepRecord(Record):
    """One step's outcome. ``started_at``/``ended_at``: the bench client's run, seconds since the epoch."""

    status: StepStatus = "pending"
    started_at: Annotated[float, NumberBounds(ge=0)] | None = None
    ended_at: Annotated[float, NumberBounds(ge=0)] | None = None
    at: str | None = Field(default=None, description="local time of the outcome, ISO 8601")
    reason: str | None = Field(default=None, description="why a failed or unfinished step did not finish")

    def check(self, source: str) -> None:
        if self.started_at is not None and self.ended_at is not None and self.ended_at < self.started_at:
            raise UserError(f"{source}: a step ends ({self.ended_at}) before it starts ({self.started_at}); the file "
                            "is damaged or hand-edited: move it away (or give another --out)")

    @property
    def window(self) -> tuple[float, float] | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return self.started_at, self.ended_at


class LoadState(Record):
    schema_version: Literal[1] = 1
    plan: LoadPlan
    steps: dict[str, StepRecord] = Field(default_factory=dict, description="step name -> its outcome")
    # Random, once per load sweep; each step records it (rundir.memberrecord). None: a state from before records.
    run_id: Annotated[str, Field(pattern=RUN_ID)] | None = Field(default=None, description="the load sweep's own id")

    def check(self, source: str) -> None:
        planned = {s.name for s in self.plan.steps}
        stray = sorted(set(self.steps) - planned)
        if stray:
            raise UserError(f"{source}: records step {stray[0]}, which its plan does not list; the file is damaged "
                            "or hand-edited: move it away (or give another --out)")
        for name, record in self.steps.items():
            record.check(f"{source} steps.{name}")

    def step(self, name: str) -> StepRecord:
        return self.steps.get(name, StepRecord())

    def with_step(self, name: str, record: StepRecord) -> LoadState:
        return self.model_copy(update={"steps": {**self.steps, name: record}})


def step_run(run: Path, step: LoadStep) -> RunDir:
    """The step's own one-length run: RUN/steps/<step>/ (bench/, metrics/ as a sweep's run lays them out)."""
    return RunDir(Path(run) / "steps" / step.name)


def is_step_name(name: str) -> bool:
    return bool(name) and bool(_STEP_NAME.match(name))


def path(run: Path) -> Path:
    return Path(run) / FILE


def present(run: Path) -> bool:
    """Whether ``run`` holds a load sweep's state (anything there, so a damaged one is refused by name)."""
    p = path(run)
    return p.exists() or p.is_symlink()


def read(run: Path) -> LoadState | None:
    """The state in ``run``, None when there is none; anything else that is no state: one line, exit 2."""
    return read_state(path(run), LoadState, "load state")


def write(run: Path, state: LoadState) -> None:
    write_state(path(run), state, "pdrepro load", run)


def check_same(found: LoadState, wanted: LoadPlan, source: Path) -> None:
    """A state left by another load sweep is refused: resuming it would mix two experiments in one folder."""
    if found.plan != wanted:
        was = found.plan
        raise UserError(f"{source}: holds a load sweep of {was.num_prompts} request(s) at prompt length "
                        f"{was.prompt_len}, steps {', '.join(s.name for s in was.steps)} (scenario "
                        f"{was.scenario_fingerprint[:12]}); this one differs: give another --out, or rerun with the "
                        "same scenario and options to resume it")
