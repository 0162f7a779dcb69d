"""What `pdrepro diagnose RUN --json` prints, as a typed model: the gaps the run's figures leave, the causes that
account for them (ranked, each with its evidence and fix) and the causes the run holds no evidence for.

The model sits with the run directory's other file models so that its JSON Schema is generated with theirs
(`make schemas`); the diagnosis itself (pdrepro.diagnosis) builds it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..core.strictmodel import NumberBounds
from .summarybase import _Closed

# A share of a gap, or a gap as a share of the figure it is measured against: a fraction, 0 to 1.
Fraction = Annotated[float, NumberBounds(ge=0, le=1)]

EvidenceKind = Literal["log line", "counter", "sysfs", "knob", "figure", "record"]


class EvidenceItem(_Closed):
    """One thing the run holds that bears on a cause: a log line (file and line number), a NIC counter, a sysfs
    value from a node's record, a knob, or a figure of the run's summary."""

    kind: EvidenceKind = Field(description="what sort of evidence it is")
    file: str = Field(description="the file it comes from, relative to the run diagnosed")
    line: int | None = Field(default=None, description="the line number in that file (1 = first), for a log line")
    text: str = Field(description="the line as logged, or the figure, counter or value in words")


class Gap(_Closed):
    """How far the run's figure lies below one reference, as a fraction of the reference."""

    name: Literal["published figure", "line rate", "payload ceiling", "engine alone"]
    fraction: Fraction = Field(description="1 - measured / reference (0: met or exceeded)")
    measured: float = Field(description="the run's figure, in unit")
    reference: float = Field(description="the reference figure, in unit")
    unit: str = Field(description="the unit of both figures")
    where: str = Field(description="the member run and length it was measured at, and where the reference comes from")


class Cause(_Closed):
    """A cause the run holds evidence for: a fault (listed even where the published figure is met) or a
    measured part of the largest gap."""

    name: str = Field(description="the cause, as the diagnosis names it")
    fault: bool = Field(description="whether the evidence shows something wrong (not only a part of a gap)")
    share: Fraction = Field(description="the share of the largest gap the cause can account for, 0 to 1")
    summary: str = Field(description="what the evidence shows, in one line")
    evidence: list[EvidenceItem] = Field(description="where it is seen")
    fix: str = Field(description="what to change")


class Unknown(_Closed):
    """A cause the run holds no evidence for (or evidence that is unreadable): named, never guessed."""

    name: str
    missing: str = Field(description="the evidence the run lacks, and how to record it")


class Cleared(_Closed):
    """A cause the run's evidence rules out: named with what shows it is not the cause."""

    name: str
    why: str = Field(description="what the run holds that rules it out")


class Diagnosis(_Closed):
    """`pdrepro diagnose RUN --json`."""

    run: str = Field(description="the folder diagnosed")
    kind: str = Field(description="the kind of run it records (sweep, smoke, ab, compare, load, tune)")
    members: list[str] = Field(description="the runs read, relative to the folder ('.' for the folder itself)")
    gaps: list[Gap] = Field(description="the gaps measured, largest first")
    causes: list[Cause] = Field(description="the causes with evidence, ranked: largest share first, faults before "
                                            "non-faults of the same share")
    unknown: list[Unknown] = Field(description="the causes the run holds no evidence for")
    cleared: list[Cleared] = Field(description="the causes the run's evidence rules out")
