"""Comparison scenarios: one workload run on two configurations (e.g. 1P1D
against two regular instances), set side by side with the published figures.

Run layout (one sweep per configuration into the same run directory):

  RUN/scenario.yaml
  RUN/<configuration>/bench/result-<L>.jsonl   bench client output
  RUN/<configuration>/logs/, provenance ...    as for a kv-sweep run
  RUN/summary.json, RUN/report.md              computed and rendered here, written by publish
"""

from __future__ import annotations

import json

from tabulate import tabulate

from ..core.errors import UserError
from ..parsers.bench import parse_bench_file
from ..rundir import RunDir
from ..rundir.contract import ERROR, SUMMARY_SCHEMA_VERSION, WARNING, issue
from ..rundir.issuekind import IssueKind
from ..rundir.summarymodel import build as build_summary
from ..scenario.model import ComparisonScenario, Scenario
from ..scenario.seams import engine_of

# metric -> (bench JSON key, one of parsers.bench.REPORTED_KEYS; unit, label, better): better is "higher" or "lower".
METRICS = {
    "output_tok_s": ("output_throughput", "tok/s", "Output token throughput", "higher"),
    "total_tok_s": ("total_throughput", "tok/s", "Total token throughput", "higher"),
    "mean_e2e_ms": ("mean_e2e_latency_ms", "ms", "Mean E2E latency", "lower"),
    "mean_ttft_ms": ("mean_ttft_ms", "ms", "Mean TTFT", "lower"),
    "p99_ttft_ms": ("p99_ttft_ms", "ms", "P99 TTFT", "lower"),
    "mean_itl_ms": ("mean_itl_ms", "ms", "Mean ITL", "lower"),
    "p99_itl_ms": ("p99_itl_ms", "ms", "P99 ITL", "lower"),
}


def _measure(run: RunDir, scenario: Scenario, name: str, issues: list[dict]) -> dict | None:
    sub = run.configuration(name)
    lengths = scenario.sweep.prompt_lens
    if not any(sub.bench_file(L).is_file() for L in lengths):
        issues.append(issue(WARNING, IssueKind.CONFIGURATION_MISSING,
                             f"{name}: no bench result under {sub.bench_dir}; "
                             f"run `pdrepro sweep --configuration {name}` into this run"))
        return None
    # Comparison scenarios run one workload; with several lengths the first one present counts.
    length = next(L for L in lengths if sub.bench_file(L).is_file())
    try:
        result, notes = parse_bench_file(sub.bench_file(length), prompt_len=length,
                                         num_prompts=scenario.sweep.num_prompts, output_len=scenario.sweep.output_len)
    except UserError as exc:
        # The other configuration's figures are still worth a report.
        issues.append(issue(ERROR, IssueKind.BENCH_UNREADABLE, f"{name}: {exc}"))
        return None
    issues.extend(issue(WARNING, IssueKind.BENCH_NOTES, f"{name}: {n}") for n in notes)
    measured = {metric: result.reported[key] for metric, (key, *_rest) in METRICS.items()}
    if result.completed != scenario.sweep.num_prompts:
        issues.append(issue(WARNING, IssueKind.INCOMPLETE,
                            f"{name}: completed {result.completed} of {scenario.sweep.num_prompts} requests"))
    if result.errors:
        issues.append(issue(WARNING, IssueKind.REQUEST_ERRORS,
                             f"{name}: {len(result.errors)} request(s) failed, first: {result.errors[0][:120]}"))
    return {"prompt_len": length, "completed": result.completed, "errors": len(result.errors),
            "bench_file": str(sub.bench_file(length).relative_to(run.root)), **measured}


def _change_pct(a, b):
    """How much a differs from b, in % of b."""
    if a is None or b is None or b == 0:
        return None
    return 100.0 * (a - b) / b


def compute_comparison(run: RunDir, scenario: Scenario) -> dict:
    """Parse and compare; no files written."""
    if not isinstance(scenario, ComparisonScenario):
        raise UserError(f"scenario {scenario.name} is a {scenario.kind} scenario, not a comparison; use `pdrepro analyze`")
    published = (scenario.reference.configurations if scenario.reference else {}) or {}
    names = list(published)
    if len(names) != 2:
        raise UserError(f"scenario {scenario.name}: reference.configurations must name exactly two configurations, "
                        f"found {len(names)}")
    issues: list[dict] = []
    measured = {name: _measure(run, scenario, name, issues) for name in names}
    if all(m is None for m in measured.values()):
        unreadable = [i["message"] for i in issues if i["severity"] == ERROR]
        if unreadable:
            raise UserError(unreadable[0])
        raise UserError(f"{run.root}: no configuration of {scenario.name} has results; run `pdrepro sweep --configuration "
                        f"{names[0]}` (and {names[1]}) with --out {run.root}")
    a, b = names
    deltas = {}
    for metric in METRICS:
        ma = (measured[a] or {}).get(metric)
        mb = (measured[b] or {}).get(metric)
        deltas[metric] = {"measured_pct": _change_pct(ma, mb),
                          "published_pct": _change_pct(published[a].get(metric), published[b].get(metric))}
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "kind": "comparison",
        "scenario": scenario.to_dict(),
        "scenario_fingerprint": scenario.fingerprint,
        "source": engine_of(scenario).name,
        "line_rate_GB_s": scenario.line_rate_GB_s,
        "rows": [],
        "configurations": {name: {"measured": measured[name], "published": published[name]} for name in names},
        "comparison": {"of": a, "against": b, "change_pct": deltas},
        "issues": issues,
        "provenance": _provenance(run, names),
    }
    return build_summary(summary)


def _provenance(run: RunDir, names: list[str]) -> dict:
    out = {}
    for name in [None, *names]:
        folder = run if name is None else run.configuration(name)
        try:
            record = folder.read_provenance()
        except json.JSONDecodeError:
            out[name or "run"] = {"error": f"{folder.provenance_file} is not JSON"}
            continue
        if record is not None:
            out[name or "run"] = record.to_json()
    return out


def _fmt(value, digits=2) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _fmt_pct(value) -> str:
    return "n/a" if value is None else f"{value:+.1f} %"


def render_comparison(summary: dict) -> str:
    scenario = summary["scenario"]
    configs = summary["configurations"]
    a = summary["comparison"]["of"]
    b = summary["comparison"]["against"]
    rows = []
    for metric, (_key, unit, label, better) in METRICS.items():
        ma = (configs[a]["measured"] or {}).get(metric)
        mb = (configs[b]["measured"] or {}).get(metric)
        change = summary["comparison"]["change_pct"][metric]
        rows.append([f"{label} ({unit})", _fmt(ma), _fmt(configs[a]["published"].get(metric)),
                     _fmt(mb), _fmt(configs[b]["published"].get(metric)),
                     _fmt_pct(change["measured_pct"]), _fmt_pct(change["published_pct"]), better])
    headers = ["Metric (unit)", f"{a} measured", f"{a} published", f"{b} measured", f"{b} published",
               f"{a} vs {b} measured", f"{a} vs {b} published", "better"]
    sweep = scenario["sweep"]
    lines = [
        f"# {scenario['title']}",
        "",
        f"Scenario `{scenario['name']}`: {sweep['num_prompts']} prompts, "
        f"input {', '.join(map(str, sweep['prompt_lens']))} tokens, output {sweep['output_len']} tokens, "
        f"request rate {sweep['request_rate']} req/s, TP {scenario['parallel']['prefill_tp']}.",
        f"Published figures: {scenario['reference']['source']}.",
        "",
        f"Change = ({a} - {b}) / {b}, in % of {b}; throughput in tokens per second, latencies in milliseconds.",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]
    if summary["issues"]:
        lines += ["## Issues", ""] + [f"- {i['message']}" for i in summary["issues"]] + [""]
    return "\n".join(lines)
