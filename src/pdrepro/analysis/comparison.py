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

from ..core import runfile
from ..core.errors import UserError
from ..parsers.bench import parse_bench_file
from ..rundir import RunDir
from ..rundir.contract import ERROR, SUMMARY_SCHEMA_VERSION, WARNING, issue
from ..rundir.issuekind import IssueKind
from ..rundir.layout import STACK_FILE
from ..rundir.memberrecord import is_disaggregated
from ..rundir.summarymodel import build as build_summary
from ..scenario.model import ComparisonScenario, Scenario
from ..scenario.seams import engine_of
from .members import Claim, judge_members

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
    out: dict[str, object] = {"prompt_len": length, "completed": result.completed, "errors": len(result.errors),
           "bench_file": str(sub.bench_file(length).relative_to(run.root)), **measured}
    gpus = _placement(sub)
    if gpus:
        out["gpus"] = gpus
    return out


def _placement(sub: RunDir) -> dict[str, str] | None:
    """Server -> the GPUs it was given (CUDA_VISIBLE_DEVICES), from the record `pdrepro stack up` left in the
    configuration's folder; None without one (a stack started another way), or one not of that shape."""
    path = sub.root / STACK_FILE
    if not path.is_file():
        return None
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError, RecursionError, UserError):
        return None
    procs = data.get("processes") if isinstance(data, dict) else None
    if not isinstance(procs, list):
        return None
    out = {}
    for p in procs:
        env = p.get("env") if isinstance(p, dict) else None
        if isinstance(env, dict) and isinstance(env.get("CUDA_VISIBLE_DEVICES"), str) and isinstance(p.get("name"), str):
            out[p["name"]] = env["CUDA_VISIBLE_DEVICES"]
    return out or None


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
    # Each configuration's folder proves it is that configuration (analysis.members): the comparison's scenario,
    # the stack its name says (1P1D disaggregated, the other regular), a run of its own. A contradiction is an
    # issue the checks fail on (verdicts.gates), and a folder refused as a link is never read.
    findings = judge_members(run.root, [Claim(name=n, folder=n, scenario=scenario,
                                              stack="disaggregated" if is_disaggregated(n) else "regular")
                                        for n in names], "compare", None, one_backend=True)
    issues += [issue(WARNING, IssueKind.MEMBER_IDENTITY, f.message()) for f in findings]
    refused = {f.member for f in findings if f.about == "folder"}
    measured = {name: None if name in refused else _measure(run, scenario, name, issues) for name in names}
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


def _fmt_ratio(pct) -> str:
    """The ratio a/b from the change (a - b) / b in %: 1 + pct / 100."""
    return "n/a" if pct is None else f"{1.0 + pct / 100.0:.2f}"


def _obj(value: object) -> dict:
    """``value`` where it is a JSON object, else an empty one (a record is read as it stands)."""
    return value if isinstance(value, dict) else {}


def _where(name: str, record: dict | None, gpus: dict | None) -> str:
    """One line saying where a configuration ran, from its provenance: the host, its GPUs, each server's
    share of the GPU memory (--mem-fraction-static) as the server reported it or was started with, and
    the GPUs the host launcher gave each server."""
    given = ("; GPUs given: " + ", ".join(f"{k} {v}" for k, v in gpus.items())) if gpus else ""
    if not isinstance(record, dict) or not record:
        return f"- {name}: no provenance recorded{given}"
    host = _obj(record.get("host"))
    listed = _obj(host.get("gpu")).get("gpus")
    names = [str(g) for g in listed] if isinstance(listed, list) else []
    gpu_text = f"{len(names)} GPU(s) ({', '.join(names[:2])}{', ...' if len(names) > 2 else ''})" if names \
        else "GPUs not read"
    servers = []
    infos = _obj(record.get("server_info"))
    for server, info in sorted(infos.items()):
        share = None
        if isinstance(info, dict):
            share = info.get("mem_fraction_static")
            argv = info.get("argv")
            if share is None and isinstance(argv, list) and "--mem-fraction-static" in argv[:-1]:
                share = argv[argv.index("--mem-fraction-static") + 1]
        servers.append(f"{server}" + (f" (memory fraction {share})" if share is not None else ""))
    return (f"- {name}: host {host.get('hostname', '?')}, {gpu_text}; servers: {', '.join(servers) or 'none recorded'}"
            + given)


# What a comparison on one shared GPU can show of the published ITL claim, and what it cannot.
SHARED_GPU = (
    "On one shared GPU. Each configuration's servers share one GPU here, each with its part of the memory. "
    "In 1P1D the prefill server's batches and the decode server's steps take turns on the same compute. "
    "In the regular pair each instance interleaves prefill and decode itself, and the two instances also "
    "take turns. So the published claim, that taking prefill off the decode GPU cuts ITL, is not tested as "
    "published: decode is never alone on its GPU. What the run can show is the workload's shape: whether "
    "1P1D matches the regular pair's throughput at the same open-loop rate, and how its TTFT and ITL move "
    "when the KV cache travels between two servers. A lower ITL ratio here is a hint, not a reproduction; "
    "the published ratios need each server on GPUs of its own.")


def _shared_gpu(configs: dict) -> bool:
    """Some configuration's servers were given the same GPU (its stack record says so)."""
    for config in configs.values():
        gpus = (config.get("measured") or {}).get("gpus") or {}
        servers = [v for k, v in gpus.items() if k != "router"]
        if len(servers) > 1 and len(set(servers)) < len(servers):
            return True
    return False


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
                     _fmt_pct(change["measured_pct"]), _fmt_pct(change["published_pct"]),
                     _fmt_ratio(change["measured_pct"]), _fmt_ratio(change["published_pct"]), better])
    headers = ["Metric (unit)", f"{a} measured", f"{a} published", f"{b} measured", f"{b} published",
               f"{a} vs {b} measured", f"{a} vs {b} published", f"{a}/{b} measured", f"{a}/{b} published",
               "better"]
    sweep = scenario["sweep"]
    lines = [
        f"# {scenario['title']}",
        "",
        f"Scenario `{scenario['name']}`: {sweep['num_prompts']} prompts, "
        f"input {', '.join(map(str, sweep['prompt_lens']))} tokens, output {sweep['output_len']} tokens, "
        f"request rate {sweep['request_rate']} req/s, TP {scenario['parallel']['prefill_tp']}.",
        f"Published figures: {scenario['reference']['source']}.",
        "",
        f"Change = ({a} - {b}) / {b}, in % of {b}; ratio = {a} / {b}; throughput in tokens per second, "
        "latencies in milliseconds. Absolute figures differ with the hardware; the ratios are what compare "
        "with the published ones.",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
        "## Where each configuration ran",
        "",
        *[_where(name, (summary.get("provenance") or {}).get(name), (configs[name]["measured"] or {}).get("gpus"))
          for name in configs],
        "",
    ]
    if _shared_gpu(configs):
        lines += ["## " + SHARED_GPU.split(". ", 1)[0], "", SHARED_GPU.split(". ", 1)[1], ""]
    if summary["issues"]:
        lines += ["## Issues", ""] + [f"- {i['message']}" for i in summary["issues"]] + [""]
    return "\n".join(lines)
