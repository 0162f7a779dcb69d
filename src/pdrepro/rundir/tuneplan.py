"""RUN/tune-plan.json as a model: which settings a tune runs, each knob's values, and each setting's run folders.

`pdrepro tune` writes it before anything runs (on one box and for a cluster's job array alike), and
`pdrepro tune --collect RUN` ranks the folders it names. It is a claim like any file in a run: read through the
one reader (size cap, regular files only) and validated here (unknown keys, a folder name that is no plain name,
a setting named twice, a knob a setting names that the grid does not have: one line, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import UserError
from ..core.strictmodel import Record
from .armsstate import ARM_NAME
from .statefile import read_state, write_state

FILE = "tune-plan.json"
Name = Annotated[str, Field(pattern=ARM_NAME)]


class PlanKnob(Record):
    name: Annotated[str, Field(min_length=1, max_length=130)]
    kind: Literal["env", "flag"]
    values: tuple[Annotated[str, Field(min_length=1, max_length=200)], ...] = Field(min_length=1)
    baseline: str | None = None


class PlanSetting(Record):
    name: Name
    values: dict[str, str] = Field(default_factory=dict, description="knob -> value; empty for the baseline")
    runs: tuple[Name, ...] = Field(min_length=1, description="its run folders in RUN")


class TunePlan(Record):
    schema_version: Literal[1] = 1
    label: Annotated[str, Field(min_length=1, max_length=500)]
    scenario: Annotated[str, Field(min_length=1, max_length=200)]
    mode: Literal["full grid", "one at a time"]
    knobs: tuple[PlanKnob, ...] = Field(min_length=1)
    settings: tuple[PlanSetting, ...] = Field(min_length=2)

    def check(self, source: str) -> None:
        names = [s.name for s in self.settings]
        folders = [r for s in self.settings for r in s.runs]
        if len(set(folders)) != len(folders) or len(set(names)) != len(names):
            raise UserError(f"{source}: a setting or run folder is named twice; it is no plan `pdrepro tune` wrote: "
                            "move it away (or give another --out)")
        knobs = {k.name for k in self.knobs}
        baselines = [s for s in self.settings if not s.values]
        if len(baselines) != 1 or len(baselines[0].runs) < 2:
            raise UserError(f"{source}: names no baseline with repeated runs; it is no plan `pdrepro tune` wrote: "
                            "move it away (or give another --out)")
        for s in self.settings:
            unknown = next((k for k in s.values if k not in knobs), None)
            if unknown is not None:
                raise UserError(f"{source}: setting {s.name} sets {unknown[:60]!r}, which is no knob of the grid; "
                                "it is no plan `pdrepro tune` wrote: move it away (or give another --out)")

    @property
    def baseline(self) -> PlanSetting:
        return next(s for s in self.settings if not s.values)


def path(run: Path) -> Path:
    return Path(run) / FILE


def read(run: Path) -> TunePlan | None:
    """The plan in ``run``; None when there is none; anything that is no plan: one line, exit 2."""
    p = path(run)
    plan = read_state(p, TunePlan, "tune plan")
    if plan is not None:
        plan.check(str(p))
    return plan


def write(run: Path, plan: TunePlan) -> None:
    write_state(path(run), plan, "pdrepro tune", run)
