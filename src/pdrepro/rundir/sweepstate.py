"""RUN/sweep-state.json as a model: each prompt length's outcome and the sweep's events.

The sweep writes it (sweep.state.SweepState) and resumes from it; the analysis reads which lengths
failed and why. Both go through RunDir.read_sweep_state / write_sweep_state.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LengthRecord(BaseModel):
    """One prompt length's outcome; the sweep adds facts of its own (seconds, ...) beside these."""

    model_config = ConfigDict(extra="allow")

    status: str = Field(description="done | failed | ...")
    at: str | None = Field(default=None, description="local time of the outcome, ISO 8601")
    reason: str | None = Field(default=None, description="why a failed length failed")


class SweepEvent(BaseModel):
    """Something the sweep did once (transport proof, an interruption), with its facts."""

    model_config = ConfigDict(extra="allow")

    event: str
    at: str | None = None


class SweepStateFile(BaseModel):
    lengths: dict[str, LengthRecord] = Field(default_factory=dict)   # prompt length (as text) -> outcome
    events: list[SweepEvent] = Field(default_factory=list)

    def failed(self) -> dict[int, str]:
        """Lengths recorded as failed, with their reason ("" when none was given)."""
        return {int(k): v.reason or "" for k, v in self.lengths.items() if v.status == "failed" and k.isdigit()}

    def to_json(self) -> dict:
        return {"lengths": {k: v.model_dump(exclude_unset=True) for k, v in self.lengths.items()},
                "events": [e.model_dump(exclude_unset=True) for e in self.events]}
