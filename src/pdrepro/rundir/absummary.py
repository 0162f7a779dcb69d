"""RUN/ab-summary.json as a typed model: the arms of an A/B side by side, per prompt length, on the one clock
they share (the client's TTFT), each arm's engine-logged figure beside it with what it measures, the ratios
between arms on TTFT only, and each arm's verdict as `pdrepro check` draws it from the arm's own run folder.

The report (report/ab.py) reads this model, never keys of a dict. Backends appear only as the names and
labels the registry gave when the summary was made, so nothing reading it spells one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .armsstate import LabelHead
from .noisemodel import Interval, NoiseFloor, Standing
from .summarybase import _Closed

AbVerdict = Literal["PASS", "FAIL", "N/A"]
AB_LABEL = LabelHead("ab")


class AbCheck(_Closed):
    """One check of the arm's verdict (the name `pdrepro check` prints), at one length or for the whole run."""

    name: str
    prompt_len: int | None = None
    verdict: AbVerdict
    detail: str


class ArmVerdict(_Closed):
    passed: bool = Field(description="no applicable check of the arm failed and its inputs were complete")
    input_error: str | None = Field(default=None, description="why the arm's run could not be judged, if so")
    # The four questions an A/B asks of each arm, from its checks (None: no such check ran).
    all_completed: bool | None = Field(default=None, description="every request completed at every length")
    kv_sizes_match: bool | None = Field(default=None, description="the logged KV sizes match the model's")
    ttft_covers_transfer: bool | None = Field(default=None, description="the TTFT is no shorter than the transfer")
    transport: str | None = Field(default=None, description="the transport the arm's servers stated, in words")
    checks: list[AbCheck] = Field(default_factory=list, description="every check of the arm")


class ArmSummary(_Closed):
    name: str = Field(description="the arm's folder in the A/B's run")
    backend: str | None = Field(default=None, description="the transfer backend (registry name)")
    backend_label: str | None = Field(default=None, description="the backend for people")
    timing: str | None = Field(default=None, description="what the engine's logged per-request transfer time "
                                                         "measures with this backend")
    scenario: str | None = None
    verdict: ArmVerdict


class ArmLength(_Closed):
    """One arm at one prompt length."""

    arm: str
    requests: int | None = Field(default=None, description="requests completed")
    expected_requests: int | None = Field(default=None, description="requests sent")
    ttft_ms_mean: float | None = Field(default=None, description="client TTFT, mean, milliseconds")
    ttft_ms_median: float | None = Field(default=None, description="client TTFT, median, milliseconds")
    ttft_ms_p99: float | None = Field(default=None, description="client TTFT, 99th percentile, milliseconds")
    kv_bytes: int | None = Field(default=None, description="KV bytes of one request from the model, bytes")
    engine_transfer_ms_median: float | None = Field(
        default=None, description="the engine's logged per-request transfer time, median, milliseconds: its "
                                  "window is the arm's `timing`, so it is never compared across arms")


class TtftRatio(_Closed):
    """An arm's TTFT over the first arm's at one length (above 1: slower)."""

    arm: str
    against: str
    mean: float | None = None
    median: float | None = None
    p99: float | None = None


class AbBackend(_Closed):
    """One backend at one length over its repeated arms (``pdrepro ab --repeats``): how sure its TTFT is."""

    backend: str | None = Field(default=None, description="the transfer backend (registry name)")
    arms: list[str] = Field(description="its arms that pass their checks and measured the length, in run order")
    ttft_ms_mean: float | None = Field(default=None, description="the mean of those arms' mean client TTFT, "
                                                                 "milliseconds")
    interval: Interval | None = Field(default=None, description="ttft_ms_mean's confidence interval over the arms "
                                                                "and their requests, milliseconds, method stated")
    noise_floor: NoiseFloor | None = Field(default=None, description="the spread of the arms' mean TTFT, the least "
                                                                     "difference chance showed; null with one arm")
    standing: Standing = Field(description="against the first backend by the summary's rule (lower TTFT is better); "
                                           "not judged for the first backend, or where either has fewer than two arms")


class AbLength(_Closed):
    prompt_len: int
    arms: list[ArmLength]
    ratios: list[TtftRatio] = Field(default_factory=list)
    backends: list[AbBackend] = Field(default_factory=list, description="each backend over its arms, the first "
                                                                         "backend first")


class AbSummary(_Closed):
    """ab-summary.json of `pdrepro ab`."""

    schema_version: Literal[1] = 1
    label: str = Field(description="which A/B this is")
    arms: list[ArmSummary]
    lengths: list[AbLength]
    passed: bool = Field(description="every arm's verdict passed")
    rule: str | None = Field(default=None, description="how a backend is called better than the first, in words")

    def arm(self, name: str) -> ArmSummary:
        return next(a for a in self.arms if a.name == name)
