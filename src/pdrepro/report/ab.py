"""RUN/report.md of an A/B, from the typed A/B summary (rundir.absummary) alone: the arms side by side per
prompt length on the client's TTFT, the KV bytes the model gives, each arm's engine-logged transfer time with
what it measures (never set against another arm's), the TTFT ratios, and each arm's verdict."""

from __future__ import annotations

from ..core.units import human_bytes
from ..rundir.absummary import AB_LABEL, AbLength, AbSummary, ArmSummary, ArmVerdict
from .abplot import PLOT, has_ttft


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _yes(value: bool | None) -> str:
    return "not checked" if value is None else "yes" if value else "NO"


def _who(arm: ArmSummary) -> str:
    return f"{arm.name}, {arm.backend_label}" if arm.backend_label else arm.name


def _verdict_lines(arm: ArmSummary) -> list[str]:
    v: ArmVerdict = arm.verdict
    lines = [f"### {_who(arm)}: {'PASS' if v.passed else 'FAIL'}", ""]
    if v.input_error:
        lines += [f"- not judged in full: {v.input_error}"]
    lines += [f"- every request completed: {_yes(v.all_completed)}",
              f"- KV sizes match the model: {_yes(v.kv_sizes_match)}",
              f"- TTFT covers the transfer: {_yes(v.ttft_covers_transfer)}",
              f"- transport: {v.transport or 'not stated'}"]
    if arm.timing:
        lines.append(f"- the engine's logged transfer time measures: {arm.timing}")
    lines += [f"- FAIL {c.detail}" for c in v.checks if c.verdict == "FAIL"]
    return lines + [""]


def _sure(length: AbLength) -> list[str]:
    """Each backend over its arms: its TTFT's interval, the noise floor its repeats showed, its standing."""
    if not length.backends:
        return []
    out = ["| backend | arms | TTFT mean of the arms | interval | noise floor (spread of the arms) | standing |",
           "| --- | --- | --- | --- | --- | --- |"]
    for b in length.backends:
        shown = "—" if b.interval is None else f"{b.interval.low:.1f} to {b.interval.high:.1f}"
        floor = ("not measured (one arm)" if b.noise_floor is None else
                 f"{b.noise_floor.spread:.1f} ms" + (f" ({b.noise_floor.spread_pct:.1f} %)"
                                                     if b.noise_floor.spread_pct is not None else ""))
        out.append(f"| {b.backend or '—'} | {', '.join(b.arms) or 'none'} | {_ms(b.ttft_ms_mean)} | {shown} "
                   f"| {floor} | {b.standing} |")
    methods = sorted({b.interval.method for b in length.backends if b.interval is not None})
    if methods:
        out += ["", "Intervals: " + "; or ".join(f"({m})" for m in methods) + "."]
    if any(b.noise_floor is None for b in length.backends):
        out += ["", "Noise floor: not measured for a backend run once: one run cannot tell a difference from the "
                "drift between runs, so no backend is called better; `pdrepro ab --repeats 3` runs each arm three "
                "times, interleaved."]
    return [*out, ""]


def render(summary: AbSummary) -> str:
    out = [f"# A/B: {AB_LABEL.strip(summary.label)}", "",
           f"Verdict: {'every arm PASSES' if summary.passed else 'an arm FAILS'} ("
           + ", ".join(f"{a.name} {'PASS' if a.verdict.passed else 'FAIL'}" for a in summary.arms) + ").", "",
           "One clock both arms share: the client's time to first token (TTFT, milliseconds). The engine's logged "
           "transfer time is shown per arm with what it measures; each backend times its own window, so it is "
           "never compared across arms.", ""]
    if has_ttft(summary):
        out += [f"![TTFT per arm and prompt length]({PLOT}) (the arms side by side on that clock; `pdrepro ab` "
                "writes it beside this report)", ""]
    if summary.rule:
        out += [f"How sure: each backend's TTFT carries a confidence interval over its arms and their requests; "
                f"{summary.rule}.", ""]
    for length in summary.lengths:
        out += [f"## {length.prompt_len} prompt tokens", "",
                "| arm | completed | TTFT mean | TTFT median | TTFT p99 | KV per request (model) "
                "| engine-logged transfer, median (ms) |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for a in length.arms:
            done = "—" if a.requests is None else f"{a.requests}/{a.expected_requests or '?'}"
            kv = "—" if a.kv_bytes is None else human_bytes(a.kv_bytes)
            out.append(f"| {_who(summary.arm(a.arm))} | {done} | {_ms(a.ttft_ms_mean)} | {_ms(a.ttft_ms_median)} "
                       f"| {_ms(a.ttft_ms_p99)} | {kv} | {_ms(a.engine_transfer_ms_median)} |")
        if length.ratios:
            out += ["", "| TTFT ratio | mean | median | p99 |", "| --- | --- | --- | --- |"]
            out += [f"| {r.arm} / {r.against} | {_x(r.mean)} | {_x(r.median)} | {_x(r.p99)} |" for r in length.ratios]
        out.append("")
        out += _sure(length)
    if not summary.lengths:
        out += ["No arm measured a prompt length.", ""]
    out += ["## Verdict per arm", ""]
    for arm in summary.arms:
        out += _verdict_lines(arm)
    return "\n".join(out)
