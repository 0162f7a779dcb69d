"""RUN/tune-summary.json as a typed model: a tuning grid's settings ranked per prompt length against the baseline.

Each setting's figures are read from its run's summary as the model gives them (``Row.bandwidth_GB_s``, the
per-request KV bandwidth: the model's KV bytes over the median transfer time; ``Row.ttft_ms_mean``), never by
keys of a dict. The baseline ran several times: its mean's confidence interval is the bar a setting's own
interval must clear (verdicts.noise), and the range of its runs is the noise floor the report states. The
report (report/tune.py) reads this model only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .armsstate import LabelHead
from .engineceiling import CONTRADICTION_RATIO
from .noisemodel import Interval, NoiseFloor, Standing
from .summarybase import _Closed

RULE = ("a setting is better at a length when the confidence interval of its per-request KV bandwidth lies wholly "
        "above the baseline's, worse when wholly below, else within the noise (overlapping intervals are never "
        "called better); the baseline's interval is a bootstrap over its repeated runs that pass their checks and "
        "the requests within them, a setting's single run adds to its requests' resampling a run-to-run deviation "
        "drawn from the baseline's repeats (one run shows no run-to-run noise of its own), and with fewer than two "
        "baseline runs nothing is judged; settings are ranked per length by "
        "bandwidth, and the client's mean TTFT breaks ties (bandwidths equal to 0.01 GB/s); the best setting is "
        "better at the most lengths and worse at none, its runs passing their checks, the larger mean gain over "
        "the baseline breaking ties, then the lower mean TTFT")

# A figure that reaches this share of the engine alone leaves little to gain above the knobs.
ENGINE_SHARE = 0.9
ENGINE_RULE = (f"\"of the engine alone\" is a figure over the mean of the engine's runs at that length (each run's "
               f"best layout); a figure reaches {ENGINE_SHARE:g} of the engine alone (at or above {ENGINE_SHARE:g}) "
               f"when it is at least {ENGINE_SHARE:g} times the engine's highest run, falls short (below "
               f"{ENGINE_SHARE:g}) when it is under {ENGINE_SHARE:g} times the engine's lowest run, and is within "
               "the engine's spread between the two; with one run of the engine there is no spread and nothing is "
               "judged (repeat `pdrepro gpu-check` into RUN/engine-ceiling-2, RUN/engine-ceiling-3); a figure above "
               f"{CONTRADICTION_RATIO:g} times the engine's highest run contradicts it")

TUNE_LABEL = LabelHead("tune")


EngineStanding = Literal["at or above 0.9", "below 0.9", "within the engine's spread", "not judged"]


class TcpBlind(_Closed):
    """A grid knob a TCP transfer does not exercise, and why (from the knob data)."""

    name: str
    why: str


class TuneKnob(_Closed):
    name: str = Field(description="an environment variable, or a server flag with its dashes")
    kind: Literal["env", "flag"]
    values: list[str] = Field(description="the values the grid gives it")
    baseline: str | None = Field(default=None, description="the scenario's own value; null: the engine's default")


class TuneRun(_Closed):
    """One run folder of a setting (the baseline has several)."""

    folder: str = Field(description="the run's folder in the tune's run, RUN/<folder>")
    passed: bool = Field(description="the run's checks passed (as `pdrepro check` judges it) and its inputs are whole")
    problem: str | None = Field(default=None, description="why the run is not judged in full, if so")
    transport: str | None = Field(default=None, description="the transport the run's servers stated")


class TuneSetting(_Closed):
    name: str = Field(description="the setting's name (its run folder; the baseline's runs are baseline-<n>)")
    baseline: bool = Field(description="the scenario's own setting")
    values: dict[str, str] = Field(default_factory=dict, description="the knobs it changes, with their values")
    scenario_file: str = Field(description="the scenario the setting ran, in RUN/scenarios/")
    runs: list[TuneRun]


class SettingFigure(_Closed):
    """One setting at one length."""

    setting: str
    rank: int | None = Field(default=None, description="1 is the highest bandwidth; null: no figure")
    bandwidth_GB_s: float | None = Field(default=None, description="per-request KV bandwidth (the baseline: the mean "
                                                                   "of its runs), decimal GB/s")
    ttft_ms_mean: float | None = Field(default=None, description="client TTFT, mean (the baseline: mean of its "
                                                                 "runs), milliseconds")
    gain_pct: float | None = Field(default=None, description="bandwidth over the baseline's mean, percent (signed)")
    of_engine: float | None = Field(default=None, description="bandwidth over the mean of the engine alone's runs "
                                                              "at this length; null without one")
    standing: Standing = Field(description="against the baseline, by the summary's rule")
    transfer_ms: float | None = Field(default=None, description="median KV transfer time per request as the prefill "
                                                               "logged it (the baseline: mean of its runs' medians), "
                                                               "milliseconds")
    beyond_engine_ms: float | None = Field(default=None, description="transfer_ms less the engine alone's time for "
                                                                    "the same KV bytes at its mean rate, "
                                                                    "milliseconds: what the servers add to the copy")
    engine_standing: EngineStanding | None = Field(
        default=None, description="against 0.9 of the engine alone, by the summary's engine_rule: at or above it "
                                  "beyond the engine's spread, below it, or within that spread; not judged with one "
                                  "run of the engine (no spread) or no figure; null without the engine at this length")
    interval: Interval | None = Field(default=None, description="the bandwidth's confidence interval, decimal GB/s, "
                                                                "its method stated; null: no figure")
    beaten_by: list[str] = Field(default_factory=list, description="the settings at this length whose interval lies "
                                                                   "wholly above this one's: the ranking by intervals "
                                                                   "(an empty list: no figure surely beats it)")


class BaselineLength(_Closed):
    runs_GB_s: list[float] = Field(description="each baseline run's per-request KV bandwidth, decimal GB/s")
    mean_GB_s: float | None = Field(default=None, description="their mean, decimal GB/s")
    spread_GB_s: float | None = Field(default=None, description="their range (highest minus lowest), decimal GB/s; "
                                                                "null with fewer than two runs")
    ttft_ms_mean: float | None = Field(default=None, description="the runs' mean client TTFT, milliseconds")
    transfer_ms_mean: float | None = Field(default=None, description="the mean of the runs' median KV transfer "
                                                                    "times, milliseconds")
    phase_ms: dict[str, float] | None = Field(default=None, description="per phase the servers log (the run summary's "
                                                                        "phase_ms_median keys), the mean of the runs' "
                                                                        "medians, milliseconds; null when no run "
                                                                        "logged one")
    interval: Interval | None = Field(default=None, description="mean_GB_s's confidence interval over the runs and "
                                                                "their requests, decimal GB/s; null without a run")
    noise_floor: NoiseFloor | None = Field(default=None, description="the spread between the repeats, the least "
                                                                     "difference chance alone showed here; null with "
                                                                     "fewer than two runs")


class EngineRun(_Closed):
    """One run of the engine alone at one length (RUN/engine-ceiling, or a repeat RUN/engine-ceiling-<n>)."""

    source: str = Field(description="the run's file in the tune's folder, e.g. engine-ceiling-2/result.json")
    GB_s: float = Field(description="its best layout's median rate, decimal GB/s")
    layout: str = Field(description="the layout that gave it (one, layers, blocks)")


class EngineAlone(_Closed):
    """The Mooncake engine alone on the tune's box at one length, over its runs (`pdrepro gpu-check`)."""

    runs: list[EngineRun] = Field(min_length=1, description="each run of the engine alone at this length, "
                                                            "engine-ceiling first, then its repeats by number")
    mean_GB_s: float = Field(description="the mean of the runs' rates, decimal GB/s: what of_engine divides by")
    spread_GB_s: float | None = Field(default=None, description="their range (highest minus lowest), decimal GB/s; "
                                                                "null with one run, which gives no spread")
    interval: Interval | None = Field(default=None, description="mean_GB_s's confidence interval over the runs "
                                                                "(each run one figure), decimal GB/s")

    def highest(self) -> float:
        return max(r.GB_s for r in self.runs)

    def lowest(self) -> float:
        return min(r.GB_s for r in self.runs)


class TuneLength(_Closed):
    prompt_len: int = Field(description="prompt length, tokens")
    baseline: BaselineLength
    engine_alone: EngineAlone | None = Field(default=None, description="the engine alone at this length; null "
                                                                       "without a ceiling of these bytes")
    ranking: list[SettingFigure] = Field(description="every setting, best first; the baseline among them")


class TuneBest(_Closed):
    setting: str
    values: dict[str, str] = Field(description="the knobs it changes, with their values")
    better_at: list[int] = Field(description="the prompt lengths where its interval lies wholly above the baseline's")
    mean_gain_pct: float = Field(description="its mean bandwidth gain over the baseline across the lengths, percent")
    overlay: str = Field(description="the scenario overlay written for it")
    scenario_file: str = Field(description="the whole scenario it ran")
    evidence: list[str] = Field(description="the run folders its figures and the baseline's are drawn from")


class TuneSummary(_Closed):
    """tune-summary.json of `pdrepro tune`."""

    schema_version: Literal[2] = 2
    label: str = Field(description="which tune this is (scenario and grid)")
    scenario: str = Field(description="the scenario tuned")
    mode: Literal["full grid", "one at a time"]
    rule: str = Field(description="how a setting is called better, in words")
    knobs: list[TuneKnob]
    settings: list[TuneSetting]
    lengths: list[TuneLength]
    best: TuneBest | None = Field(default=None, description="null: no setting's interval lies wholly above the "
                                                            "baseline's at a length without falling wholly below at "
                                                            "another")
    transport: str | None = Field(default=None, description="the transport the baseline's servers stated")
    tcp_cannot_judge: list[TcpBlind] = Field(
        default_factory=list, description="when the KV moved over TCP: the grid knobs a TCP transfer does not "
                                          "exercise (RDMA-only ones), from the knob data, with why")
    engine_ceiling: str | None = Field(default=None, description="the files of the engine alone's runs in the "
                                                                 "tune's folder and their transport; null without one")
    engine_rule: str | None = Field(default=None, description="how a figure is held against the engine alone, in "
                                                              "words; null without the engine alone")
    unmeasured: list[str] = Field(default_factory=list, description="runs that measured no length (not run yet, "
                                                                    "stopped, or failed before measuring): while "
                                                                    "any is, no best is named")
    problems: list[str] = Field(default_factory=list, description="runs not judged in full, each named")

    def setting(self, name: str) -> TuneSetting:
        return next(s for s in self.settings if s.name == name)
