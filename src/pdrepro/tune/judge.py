"""A tune judged from its run folders: each run's summary drawn afresh from its raw inputs in memory (what
`pdrepro check` judges; nothing is written into a run), the settings ranked per prompt length by per-request
KV bandwidth (TTFT breaks ties), each figure's confidence interval drawn from its runs' requests
(analysis.interval) and held against the baseline's by the one rule of verdicts.noise (rundir.tunesummary.RULE).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import interval as bootstrap
from ..analysis.members import Claim, judge_members, of_member
from ..analysis.requestsamples import RequestSamples
from ..analysis.verdictsource import judged_sweep as judged_summary  # a setting or a baseline repeat is a sweep's run
from ..core.errors import UserError
from ..rundir import RunDir
from ..rundir.armsstate import ArmRecord, ArmsState
from ..rundir.engineceiling import (
    CONTRADICTION_RATIO,
    best_layout,
    check_against_run,
    scenario_file,
    transport_mismatch,
)
from ..rundir.enginerepeats import load_engine_runs
from ..rundir.memberrecord import MemberFinding
from ..rundir.noisemodel import Interval
from ..rundir.summarymodel import Row, Summary
from ..rundir.tuneplan import TunePlan
from ..rundir.tunesummary import (
    ENGINE_RULE,
    ENGINE_SHARE,
    RULE,
    BaselineLength,
    EngineAlone,
    EngineRun,
    EngineStanding,
    SettingFigure,
    Standing,
    TcpBlind,
    TuneKnob,
    TuneLength,
    TuneRun,
    TuneSetting,
    TuneSummary,
)
from ..scenario import knobs as knob_data
from ..scenario.model import Scenario, load_scenario, resolve_scenario
from ..verdicts import noise
from ..verdicts.gates import evaluate, failed
from . import grid

TIE_GB_S = 0.01  # bandwidths this close are a tie, which TTFT breaks


@dataclass(frozen=True)
class _Judged:
    run: TuneRun
    rows: dict[int, Row]
    samples: dict[int, RequestSamples] = field(default_factory=dict)


def _judge_run(run: Path, folder: str, arm: ArmRecord | None) -> _Judged:
    """One run folder judged afresh. ``arm``: what the tune's arms state says of it; a run that is not run yet,
    was stopped by a signal or was still running when the tune ended measured nothing to judge, and says so
    (whatever half a folder holds), rather than what its folder happens to lack."""
    where = run / folder
    if arm is not None and arm.interrupted():
        return _Judged(TuneRun(folder=folder, passed=False, problem=f"{where}: {arm.unfinished()}"), {})
    failed_why = arm.unfinished() if arm is not None and arm.status == "failed" else None
    if not where.is_dir():
        return _Judged(TuneRun(folder=folder, passed=False, problem=f"{where}: " + (
            failed_why or "no such run folder; run its setting (or its job) first")), {})
    try:
        scenario = resolve_scenario(None, where)
        found = judged_summary(RunDir(where), scenario)
        summary: Summary = found.summary
    except UserError as exc:
        why = f"{where}: the run failed before it measured anything ({failed_why})" if failed_why else str(exc)
        return _Judged(TuneRun(folder=folder, passed=False, problem=why), {})
    errors = summary.input_errors()
    results = evaluate(summary, scenario)
    broken = failed(results)
    problem = errors[0].message if errors else (f"check {broken[0].name} fails: {broken[0].detail}" if broken else None)
    return _Judged(TuneRun(folder=folder, passed=not errors and not broken, problem=problem,
                           transport=summary.transport), summary.rows_by_length(), found.samples)


def _refused(folder: str, found: list[MemberFinding]) -> _Judged | None:
    """A run whose own files are not the run the plan names: failed, and no figure of it is ranked or counted
    in the baseline's spread (a folder refused as a link is never read)."""
    if not found:
        return None
    return _Judged(TuneRun(folder=folder, passed=False, problem="; ".join(f.message() for f in found)), {})


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _phases(rows: list[Row]) -> dict[str, float] | None:
    """Each phase's mean over the runs' medians (a phase some run did not log is the mean of those that did)."""
    keys = sorted({k for r in rows for k in (r.phase_ms_median or {})})
    return {k: round(statistics.fmean(v), 2) for k in keys
            if (v := [r.phase_ms_median[k] for r in rows if r.phase_ms_median and k in r.phase_ms_median])} or None


def _transfers(L: int, runs: list[_Judged]) -> list[tuple[float, ...]]:
    """Per run with a bandwidth at ``L``, the transfer times its figure was drawn from."""
    return [j.samples[L].transfer_ms for j in runs
            if L in j.rows and j.rows[L].bandwidth_GB_s is not None and L in j.samples]


def _interval(L: int, runs: list[_Judged], kv: int | None, base: BaselineLength | None = None) -> Interval | None:
    """The bandwidth's interval over ``runs`` at ``L``; a setting's (``base`` given) borrows the baseline's
    run-to-run deviations, since its one run shows none of its own."""
    if not kv:
        return None
    borrowed = bootstrap.deviations(base.runs_GB_s) if base is not None else []
    return bootstrap.bootstrap(_transfers(L, runs), bootstrap.rate_of(kv), borrowed=borrowed,
                               borrowed_from=f"the baseline's {len(borrowed)} repeats" if borrowed else None)


def _baseline(L: int, runs: list[_Judged], kv: int | None) -> BaselineLength:
    rows = [j.rows[L] for j in runs if L in j.rows]
    bw = [r.bandwidth_GB_s for r in rows if r.bandwidth_GB_s is not None]
    ttft = [r.ttft_ms_mean for r in rows if r.ttft_ms_mean is not None]
    ms = [r.transfer_ms_median for r in rows if r.transfer_ms_median is not None]
    spread = round(max(bw) - min(bw), 4) if len(bw) >= 2 else None
    return BaselineLength(runs_GB_s=bw, mean_GB_s=_mean(bw), spread_GB_s=spread, ttft_ms_mean=_mean(ttft),
                          transfer_ms_mean=_mean(ms), phase_ms=_phases(rows), interval=_interval(L, runs, kv),
                          noise_floor=bootstrap.noise_floor(f"the baseline's {len(bw)} repeated runs", bw, "GB/s"))


def _beyond_engine(ms: float | None, kv_bytes: int | None, engine: EngineAlone | None) -> float | None:
    """What the servers add per request to the engine's own copy of the same bytes (at its mean rate)."""
    if ms is None or not kv_bytes or engine is None or engine.mean_GB_s <= 0:
        return None
    return round(ms - kv_bytes / (engine.mean_GB_s * 1e9) * 1e3, 2)


def _standing(figure: Interval | None, base: BaselineLength) -> Standing:
    """By the intervals alone (verdicts.noise); without two baseline runs there is no run-to-run noise to hold a
    setting's single run to, so nothing is judged."""
    if base.noise_floor is None:
        return "not judged"
    return noise.standing(figure, base.interval, higher_is_better=True)


def _gain(bw: float | None, base: BaselineLength) -> float | None:
    return None if bw is None or not base.mean_GB_s else round(100 * (bw / base.mean_GB_s - 1), 2)


def _rank(figures: list[SettingFigure]) -> list[SettingFigure]:
    """Best first: bandwidth (to TIE_GB_S), then the lower TTFT; settings without a figure last."""
    def key(f: SettingFigure) -> tuple:
        if f.bandwidth_GB_s is None:
            return (1, 0.0, 0.0, f.setting)
        return (0, -round(f.bandwidth_GB_s / TIE_GB_S), f.ttft_ms_mean if f.ttft_ms_mean is not None
                else float("inf"), f.setting)
    ordered = sorted(figures, key=key)
    # The ranking by intervals beside the ranking by figures: who surely beats whom (verdicts.noise).
    return [f.model_copy(update={"rank": i if f.bandwidth_GB_s is not None else None, "beaten_by": [
        o.setting for o in ordered if o is not f and f.interval is not None and o.interval is not None
        and noise.standing(o.interval, f.interval, higher_is_better=True) == "better"]})
            for i, f in enumerate(ordered, 1)]


def engine_alone(run: Path, plan: TunePlan) -> tuple[dict[int, EngineAlone], str | None, list[str]]:
    """The engine alone on the tune's box over its runs (RUN/engine-ceiling, `pdrepro gpu-check --out
    RUN/engine-ceiling`, and its repeats RUN/engine-ceiling-<n>, rundir.enginerepeats): per length each run's best
    layout, their mean and spread; the engine's transport; the runs' files. Nothing without a run. A run that is
    not of the tune's scenario (other bytes per length) or outruns its line rate is refused on one line."""
    runs = load_engine_runs(run)
    if not runs:
        return {}, None, []
    scenario = load_scenario(str(run / "scenarios" / f"{plan.baseline.name}.yaml"))
    for r in runs:
        check_against_run(r.ceiling, scenario.kv_bytes, scenario.line_rate_GB_s)
    out: dict[int, EngineAlone] = {}
    for L in sorted({L for r in runs for L, shapes in r.ceiling.items() if shapes}):
        figures = []
        for r in runs:
            if r.ceiling.get(L):
                name, best = best_layout(r.ceiling[L])
                figures.append(EngineRun(source=r.source, GB_s=best.GB_s, layout=name))
        rates = [f.GB_s for f in figures]
        # Unrounded, as the runs' rates are: a one-run mean is that run's rate to the last digit.
        out[L] = EngineAlone(runs=figures, mean_GB_s=statistics.fmean(rates),
                             spread_GB_s=max(rates) - min(rates) if len(rates) >= 2 else None,
                             interval=bootstrap.bootstrap([[r] for r in rates], bootstrap.mean_of()))
    transport = next((r.transport for r in runs if r.transport), None)  # the runs agree (load_engine_runs)
    return out, transport, [r.source for r in runs]


def _of_engine(bw: float | None, engine: EngineAlone | None) -> float | None:
    return None if bw is None or engine is None else round(bw / engine.mean_GB_s, 3)


def _engine_standing(bw: float | None, engine: EngineAlone | None) -> EngineStanding | None:
    """Against ENGINE_SHARE of the engine alone, its spread counted as doubt (tunesummary.ENGINE_RULE)."""
    if engine is None:
        return None
    if bw is None or engine.spread_GB_s is None:
        return "not judged"
    if bw >= ENGINE_SHARE * engine.highest():
        return "at or above 0.9"
    if bw < ENGINE_SHARE * engine.lowest():
        return "below 0.9"
    return "within the engine's spread"


def _length(L: int, plan: TunePlan, judged: dict[str, _Judged], engine: EngineAlone | None) -> TuneLength:
    # A baseline run that fails its checks measured something else than the setting (errors, a wrong transport):
    # it stays out of the mean and the spread, and its problem is shown with the run.
    # The KV bytes of a request at this length are the scenario's: every run of the tune moves the same.
    kv = next((j.rows[L].kv_bytes for j in judged.values() if L in j.rows and j.rows[L].kv_bytes), None)
    base = _baseline(L, [judged[f] for f in plan.baseline.runs if judged[f].run.passed], kv)
    figures = [SettingFigure(setting=plan.baseline.name, bandwidth_GB_s=base.mean_GB_s, ttft_ms_mean=base.ttft_ms_mean,
                             gain_pct=0.0 if base.mean_GB_s else None, of_engine=_of_engine(base.mean_GB_s, engine),
                             standing="within the noise" if base.spread_GB_s is not None else "not judged",
                             transfer_ms=base.transfer_ms_mean,
                             beyond_engine_ms=_beyond_engine(base.transfer_ms_mean, kv, engine),
                             engine_standing=_engine_standing(base.mean_GB_s, engine), interval=base.interval)]
    for s in plan.settings:
        if not s.values:
            continue
        row = judged[s.runs[0]].rows.get(L)
        bw = row.bandwidth_GB_s if row is not None else None
        ms = row.transfer_ms_median if row is not None else None
        figure = _interval(L, [judged[s.runs[0]]], kv, base) if bw is not None else None
        figures.append(SettingFigure(setting=s.name, bandwidth_GB_s=bw, gain_pct=_gain(bw, base),
                                     ttft_ms_mean=row.ttft_ms_mean if row is not None else None,
                                     of_engine=_of_engine(bw, engine), standing=_standing(figure, base),
                                     interval=figure,
                                     transfer_ms=None if ms is None else round(ms, 2),
                                     beyond_engine_ms=_beyond_engine(ms, kv, engine),
                                     engine_standing=_engine_standing(bw, engine)))
    return TuneLength(prompt_len=L, baseline=base, engine_alone=engine, ranking=_rank(figures))


def planned_scenarios(run: Path, plan: TunePlan) -> dict[str, Scenario] | None:
    """Each setting's scenario as the plan itself makes it: the baseline's scenario (RUN/scenarios/baseline.yaml)
    with the setting's values laid over it as the tune lays them (grid.variant). Not the scenario files the tune
    wrote per setting: a plan whose values were swapped then names the scenario its setting did not run. None
    where the baseline's scenario is not there (a plan without its scenarios judges the content alone)."""
    file = run / "scenarios" / f"{plan.baseline.name}.yaml"
    if not file.is_file():
        return None
    base = load_scenario(file)
    axes = [grid.GridAxis(k.name, k.kind, k.values) for k in plan.knobs]
    order = [k.name for k in plan.knobs]
    out = {}
    for s in plan.settings:
        values = tuple(sorted(s.values.items(), key=lambda kv: order.index(kv[0])))
        out[s.name] = base if not values else grid.variant(base, grid.Setting(s.name, values), axes)
    return out


def member_findings(run: Path, plan: TunePlan, state: ArmsState | None) -> list[MemberFinding]:
    """Each run folder's own files against the plan (analysis.members): its setting's scenario, a disaggregated
    stack, a run of its own (three copies of one baseline run are no spread)."""
    scenarios = planned_scenarios(run, plan) or {}
    claims = [Claim(name=f, folder=f, scenario=scenarios.get(s.name), stack="disaggregated")
              for s in plan.settings for f in s.runs]
    return judge_members(run, claims, "tune", state.run_id if state is not None else None, one_backend=True)


def judge(run: Path, plan: TunePlan, state: ArmsState | None = None) -> TuneSummary:
    """The tune of ``plan`` judged from the folders in ``run``, without its best (``pick_best``). Writes nothing.
    ``state``: the tune's arms state (already held to the plan's label), which says how far each run got."""
    run = Path(run)
    arm = {a.name: a for a in state.arms} if state is not None else {}
    findings = member_findings(run, plan, state)
    judged = {f: _refused(f, of_member(findings, f)) or _judge_run(run, f, arm.get(f))
              for s in plan.settings for f in s.runs}
    engines, engine_transport, engine_sources = engine_alone(run, plan)
    engine_source = ", ".join(engine_sources)
    settings = [TuneSetting(name=s.name, baseline=not s.values, values=dict(s.values),
                            scenario_file=f"scenarios/{s.name}.yaml", runs=[judged[f].run for f in s.runs])
                for s in plan.settings]
    lengths = sorted({L for j in judged.values() for L in j.rows})
    table = [_length(L, plan, judged, engines.get(L)) for L in lengths]
    transport = next((judged[f].run.transport for f in plan.baseline.runs if judged[f].run.transport), None)
    over_tcp = transport is not None and transport.lower().startswith("tcp")
    problems = [f"{r.folder}: {r.problem}" for s in settings for r in s.runs if r.problem]
    # Per request above even the engine's fastest run by more than queueing can explain: not of one box.
    problems += [f"{f.setting} at {t.prompt_len} tokens: {f.bandwidth_GB_s:.3f} GB/s per request is "
                 f"{f.bandwidth_GB_s / t.engine_alone.highest():.2f}x the engine alone's highest run ({engine_source}): "
                 "one of the two is not a measurement of this box"
                 for t in table if t.engine_alone is not None for f in t.ranking
                 if f.bandwidth_GB_s is not None and f.bandwidth_GB_s > CONTRADICTION_RATIO * t.engine_alone.highest()]
    mismatch = transport_mismatch(engine_source, engine_transport, transport, scenario_file(run))
    if mismatch:
        problems.append(mismatch)
    # Over TCP, the knobs only an RDMA transfer uses can differ from the baseline by noise alone: named, with why.
    blind = [TcpBlind(name=k.name, why=why) for k in plan.knobs if (why := knob_data.tcp_cannot_judge(k.name))]
    summary = TuneSummary(
        label=plan.label, scenario=plan.scenario, mode=plan.mode, rule=RULE,
        knobs=[TuneKnob(name=k.name, kind=k.kind, values=list(k.values), baseline=k.baseline) for k in plan.knobs],
        settings=settings, lengths=table, transport=transport,
        tcp_cannot_judge=blind if over_tcp else [],
        engine_ceiling=f"{engine_source} ({engine_transport or 'transport not recorded'})" if engine_source else None,
        engine_rule=ENGINE_RULE if engine_source else None,
        unmeasured=[f for s in plan.settings for f in s.runs if not judged[f].rows and not of_member(findings, f)],
        problems=problems)
    return summary


@dataclass(frozen=True)
class Pick:
    setting: str
    better_at: list[int]
    mean_gain_pct: float
    mean_ttft_ms: float


def pick_best(summary: TuneSummary) -> Pick | None:
    """The setting better than the baseline (its interval wholly above the baseline's) at the most lengths and
    worse at none, its runs passing their checks, the larger mean gain breaking ties, then the lower mean TTFT;
    None when no setting is, or while a run of the tune measured nothing."""
    if summary.unmeasured:
        return None  # a best among the runs measured so far could be beaten by the ones still to run
    picks: list[Pick] = []
    for s in summary.settings:
        if s.baseline or not all(r.passed for r in s.runs):
            continue
        mine = [f for length in summary.lengths for f in length.ranking if f.setting == s.name]
        standing = {length.prompt_len: f.standing for length in summary.lengths for f in length.ranking
                    if f.setting == s.name}
        better = [L for L, st in standing.items() if st == "better"]
        if not better or "worse" in standing.values():
            continue
        gains = [f.gain_pct for f in mine if f.gain_pct is not None]
        ttft = [f.ttft_ms_mean for f in mine if f.ttft_ms_mean is not None]
        picks.append(Pick(s.name, better, round(statistics.fmean(gains), 2) if gains else 0.0,
                          statistics.fmean(ttft) if ttft else float("inf")))
    return max(picks, key=lambda p: (len(p.better_at), p.mean_gain_pct, -p.mean_ttft_ms), default=None)
