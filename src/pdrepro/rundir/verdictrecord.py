"""A judge's verdict as ``--json`` prints it (`pdrepro check` and every kind's judge): the model of that output,
kept with the models of the other files a run is read and written as, so its JSON Schema ships with theirs
(`pdrepro schema verdict`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
