"""A judge's verdict as every judging command gives it (`check`, and the kinds' judges built on it): the text for
people, the same as data for ``--json``, the count line, the exit status and, where the inputs could not be
read, the one line that ends the command with exit 2. It holds what was judged; printing it is the command's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .result import CheckResult


class VerdictRecord(BaseModel):
    """A verdict as ``--json`` gives it, one schema for `pdrepro check` and every kind's judge (`ab --judge`,
    `tune --judge`, `compare --judge`): what was judged, the verdict and its exit status, the checks, and for a
    composite its own summary or its members' verdicts."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="the kind of run judged, as its folder records it (sweep, smoke, compare, load, "
                                  "ab, tune)")
    run: str = Field(description="the folder judged")
    scenario: str | None = Field(default=None, description="the scenario whose bounds judged it")
    transfer_backend: str | None = Field(default=None, description="the KV transfer backend the run's servers ran "
                                         "(its stack record's, else its scenario's); an A/B: its arms', comma-joined")
    passed: bool
    exit_status: int = Field(description="the status the command ends with: 0 passed, 1 a check failed, 2 bad input")
    count: str = Field(description="the count line the text ends with")
    checks: list[dict[str, Any]] = Field(default_factory=list, description="each check: its name, prompt length "
                                         "(or step), figure, unit, bound, op, verdict and detail")
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    bounds: list[str] = Field(default_factory=list, description="the bounds judged by other than the run's own")
    input_error: str | None = None
    summary: dict[str, Any] | None = Field(default=None, description="a composite's own summary, as its judge "
                                           "makes it (ab-summary.json, tune-summary.json)")
    members: list[VerdictRecord] = Field(default_factory=list, description="the verdicts a judge of several runs "
                                         "gave (a comparison of several scenarios)")

    def header(self) -> str:
        """The line that names what is judged, before the verdict."""
        parts = [f"{'an' if self.kind[:1] in 'aeiou' else 'a'} {self.kind} run"]
        parts += [f"scenario {self.scenario}"] if self.scenario else []
        parts += [f"transfer backend {self.transfer_backend}"] if self.transfer_backend else []
        return f"judging {self.run}: {', '.join(parts)}"


@dataclass
class Verdict:
    """A judge's verdict as every judging command gives it: the text for people, the data for --json, the
    count line (standard error) and the exit status; ``error`` is input the analysis could not read (exit 2)."""

    lines: list[str]
    count: str
    data: dict = field(default_factory=dict)
    status: int = 0
    error: str | None = None
    summary: object = None  # the summary judged (a comparison's judge renders its table from it)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def record(self) -> VerdictRecord:
        """The verdict as --json gives it (``data`` holds the kind's fields; the count and status are this one's)."""
        return VerdictRecord.model_validate({**self.data, "count": self.count, "exit_status": self.status,
                                             "passed": self.status == 0})

    def full_text(self) -> str:
        """What the text of a verdict is: the line naming what is judged, the verdict, the count."""
        return "\n".join([self.record().header(), *self.lines, self.count])


def result_data(r: CheckResult) -> dict:
    """One check as --json gives it."""
    return {"check": r.name, "prompt_len": r.prompt_len, "figure": r.figure, "unit": r.unit, "bound": r.bound,
            "op": r.op, "verdict": r.verdict, "detail": r.detail}
