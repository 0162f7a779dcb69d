"""RUN/tune-report.md of a tune, from the typed tune summary (rundir.tunesummary) alone: the rule, the knobs,
each length's ranking against the baseline's mean and spread, the best setting with its overlay, the knobs a
TCP box cannot judge, and the runs not judged in full."""

from __future__ import annotations

from ..core import advice
from ..rundir.noisemodel import Interval, NoiseFloor
from ..rundir.tunesummary import ENGINE_SHARE, TUNE_LABEL, EngineAlone, TuneLength, TuneSummary
from .phases import phase_label, phase_order


def gpu_check_command(summary: TuneSummary, out: str) -> str:
    """The engine-alone measurement the collection accepts: the tune's own baseline scenario file, so the engine
    moves the bytes the runs moved (gpu-check's default scenario is another model's, refused at the next collect)."""
    base = next((s.scenario_file for s in summary.settings if s.baseline), "scenarios/baseline.yaml")
    return advice.gpu_check(f"{advice.RUN}/{base}", f"{advice.RUN}/{out}")


def repeat_hint(summary: TuneSummary) -> str:
    return ("one run of the engine alone gives no spread, so no figure is judged against 0.9 of it: repeat "
            f"`{gpu_check_command(summary, 'engine-ceiling-2')}` (then -3) on the same box and collect again")


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(value: Interval | None) -> str:
    return "—" if value is None else f"{value.low:.3f} to {value.high:.3f}"


def _floor(floor: NoiseFloor | None) -> str:
    if floor is None:
        return "Noise floor: not measured (fewer than two runs of the baseline pass), so no setting is judged."
    share = f", {floor.spread_pct:.1f} % of their mean" if floor.spread_pct is not None else ""
    return (f"Noise floor: {floor.of} spread {floor.spread:.3f} {floor.unit}{share}: what the same setting moved "
            "between runs on this box, with nothing changed.")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f} %"


def _what(summary: TuneSummary, name: str) -> str:
    s = summary.setting(name)
    return "baseline (the scenario's own)" if s.baseline else ", ".join(f"{k}={v}" for k, v in s.values.items())


def _length(summary: TuneSummary, length: TuneLength) -> list[str]:
    b = length.baseline
    runs = ", ".join(_f(x) for x in b.runs_GB_s) or "none"
    shown = f"; {b.interval.level * 100:g} % interval {_interval(b.interval)} GB/s" if b.interval else ""
    out = [f"## {length.prompt_len} prompt tokens", "",
           f"Baseline: {len(b.runs_GB_s)} run(s) at {runs} GB/s; mean {_f(b.mean_GB_s)} GB/s, spread "
           f"{_f(b.spread_GB_s)} GB/s{shown}.", "", _floor(b.noise_floor), ""]
    if length.engine_alone is not None:
        out += [_engine_line(length.engine_alone, summary), ""]
    out += _phase_line(length)
    out += ["| rank | setting | changes | KV bandwidth per request (GB/s) | its interval (GB/s) | surely beaten by "
            "| against the baseline | of the engine alone | against 0.9 of the engine | transfer (ms) "
            "| over the engine (ms) | TTFT mean (ms) | standing |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for f in length.ranking:
        out.append(f"| {f.rank or '—'} | {f.setting} | {_what(summary, f.setting)} | {_f(f.bandwidth_GB_s)} "
                   f"| {_interval(f.interval)} | {', '.join(f.beaten_by) or 'none'} "
                   f"| {_pct(f.gain_pct)} | {_f(f.of_engine, 2)} | {f.engine_standing or '—'} "
                   f"| {_f(f.transfer_ms, 1)} | {_signed(f.beyond_engine_ms)} "
                   f"| {_f(f.ttft_ms_mean, 1)} | {f.standing} |")
    return [*out, ""]


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def _phase_line(length: TuneLength) -> list[str]:
    """Where the baseline's requests spend their time, from the servers' own request lines: the phases around the
    transfer, so that what a knob could still win is seen beside what it cannot."""
    phases = length.baseline.phase_ms
    if not phases:
        return []
    said = ", ".join(f"{phase_label(key)} {phases[key]:.1f}" for key in sorted(phases, key=phase_order))
    return [f"Baseline phases (the servers' request lines, mean of the runs' medians, ms): {said}. The prefill's "
            "forward holds its KV transfer, and the decode's transfer is its wait for the KV, the prefill's forward "
            "included; the transfer the prefill logs runs from its transfer queue to the scheduler seeing it done, "
            "so \"over the engine\" is what queueing, polling and the servers' bookkeeping add to the engine's own "
            "copy of the same bytes.", ""]


def _engine_line(engine: EngineAlone, summary: TuneSummary) -> str:
    runs = ", ".join(f"{_f(r.GB_s)} GB/s ({r.layout} layout, {r.source})" for r in engine.runs)
    if engine.spread_GB_s is None:
        return f"Engine alone: 1 run, {runs}; {repeat_hint(summary)}."
    shown = (f"; {engine.interval.level * 100:g} % interval {_interval(engine.interval)} GB/s ({engine.interval.method})"
             if engine.interval else "")
    share = f", {100 * engine.spread_GB_s / engine.mean_GB_s:.1f} % of the mean" if engine.mean_GB_s else ""
    return (f"Engine alone: {len(engine.runs)} runs, {runs}; mean {_f(engine.mean_GB_s)} GB/s, spread "
            f"{_f(engine.spread_GB_s)} GB/s (the engine's own noise floor{share}){shown}. "
            f"A figure reaches {ENGINE_SHARE:g} of it beyond its spread at "
            f"{_f(ENGINE_SHARE * engine.highest())} GB/s and falls short below {_f(ENGINE_SHARE * engine.lowest())} "
            "GB/s.")


def _engine(summary: TuneSummary) -> list[str]:
    """Per length, the setting whose per-request figure comes nearest the engine alone, and the settings that reach
    0.9 of it by the engine rule (its spread counted as doubt): what is left to gain above the knobs (queueing,
    polling and the servers' own work) is the rest."""
    if summary.engine_ceiling is None:
        return [f"No engine ceiling in the tune's folder: `{gpu_check_command(summary, 'engine-ceiling')}` measures the "
                "engine alone on this box (repeat it into RUN/engine-ceiling-2, -3 for its spread), and the next "
                f"`{advice.judge('tune', advice.RUN)}` sets each figure against it.", ""]
    said, one_run = [], False
    for length in summary.lengths:
        engine = length.engine_alone
        measured = [f for f in length.ranking if f.of_engine is not None]
        if engine is None or not measured:
            continue
        top = max(measured, key=lambda f: f.of_engine or 0.0)
        text = f"{length.prompt_len} tokens: {top.setting} at {top.of_engine:.2f} of the engine's mean"
        if engine.spread_GB_s is None:
            one_run = True
        else:
            reach = [f.setting for f in measured if f.engine_standing == "at or above 0.9"]
            doubt = [f.setting for f in measured if f.engine_standing == "within the engine's spread"]
            text += (f"; at or above {ENGINE_SHARE:g} of it: {', '.join(reach) or 'none'}"
                     + (f" (within its spread: {', '.join(doubt)})" if doubt else ""))
        said.append(text)
    out = [f"Nearest the engine alone ({summary.engine_ceiling}): {'; '.join(said) or 'no length of both'}.", ""]
    if one_run:
        hint = repeat_hint(summary)
        out += [f"{hint[0].upper()}{hint[1:]}.", ""]
    return [*out, f"Against the engine alone: {summary.engine_rule}.", ""]


def _tcp(summary: TuneSummary) -> list[str]:
    if summary.transport is None or not summary.transport.lower().startswith("tcp"):
        return []
    if not summary.tcp_cannot_judge:
        return ["The KV moved over TCP; the knob data marks none of the grid's knobs as RDMA-only.", ""]
    names = ", ".join(k.name for k in summary.tcp_cannot_judge)
    return [f"The KV moved over TCP, so this box cannot judge {names}: the knob data marks them as acting on an RDMA "
            "transfer only, and their settings differ from the baseline by noise alone here. Tune them on an RDMA "
            "box.", "", *(f"- {k.why}" for k in summary.tcp_cannot_judge), ""]


def _how_sure(summary: TuneSummary) -> list[str]:
    """Once for the whole report: how the intervals were drawn (each figure's own method is in the summary)."""
    methods = {f.interval.method for length in summary.lengths for f in length.ranking if f.interval is not None}
    if not methods:
        return []
    drawn = "; or ".join(f"({m})" for m in sorted(methods))
    return ["How sure: each figure carries a confidence interval; \"surely beaten by\" names the settings whose "
            "interval lies wholly above it, and a setting is better or worse than the baseline only where its "
            f"interval and the baseline's do not overlap. Intervals drawn as: {drawn}.", ""]


def render(summary: TuneSummary) -> str:
    knobs = "; ".join(f"{k.name} over {', '.join(k.values)} (the scenario's own: "
                      f"{k.baseline if k.baseline is not None else 'the engine default'})" for k in summary.knobs)
    runs = sum(len(s.runs) for s in summary.settings)
    out = [f"# Tune: {TUNE_LABEL.strip(summary.label)}", "",
           f"Scenario {summary.scenario}, {summary.mode}: {len(summary.settings) - 1} setting(s) besides the "
           f"baseline, {runs} run(s). Knobs: {knobs}.", "",
           f"Rule: {summary.rule}.", "",
           "The figure is the per-request KV bandwidth each run's summary gives (the model's KV bytes over the median "
           "transfer time the prefill server logged), decimal GB/s.", "", *_how_sure(summary)]
    if summary.best is not None:
        b = summary.best
        out += [f"Best: **{b.setting}** ({_what(summary, b.setting)}), better at "
                f"{', '.join(map(str, b.better_at))} prompt tokens, mean gain {b.mean_gain_pct:+.2f} %; overlay "
                f"{b.overlay}, whole scenario {b.scenario_file}; evidence: {', '.join(b.evidence)}.", ""]
    elif summary.unmeasured:
        out += [f"Best: not judged yet. {len(summary.unmeasured)} of {runs} run(s) measured nothing "
                f"({', '.join(summary.unmeasured)}); rerun `pdrepro tune` with the same options to resume (on a "
                f"cluster: run their jobs, then `{advice.judge('tune', advice.RUN)}`). Why each is missing is under \"Runs not "
                "judged in full\".", ""]
    else:
        out += ["Best: none. No setting's interval lies wholly above the baseline's at a length without falling "
                "wholly below it at another; the scenario's own setting stands.", ""]
    out += _engine(summary)
    out += _tcp(summary)
    for length in summary.lengths:
        out += _length(summary, length)
    if not summary.lengths:
        out += ["No run measured a prompt length.", ""]
    if summary.problems:
        out += ["## Runs not judged in full", "", *(f"- {p}" for p in summary.problems), ""]
    return "\n".join(out)
