"""Turns a finished run directory into the published table: RUN/summary.json, report.md, plots.

Sources per prompt length L:
- TTFT from the bench client's result for L (per-request ``ttfts`` when the
  run used --output-details, else its summary keys);
- KV transfer time per request from the prefill server's request-stats lines
  whose input length is nearest L, minus the warm-up request(s);
- KV bytes from the model geometry (``Scenario.kv_bytes``), cross-checked
  against the server's own rank-0 ``transfer_total`` times TP.

Problems found along the way become ``issues`` in the summary; whatever could
be computed is still written, so a half-broken run still shows its good rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from pathlib import Path

from . import __version__, jsonout
from .errors import UserError
from .fabric.baseline import load_ceiling
from .parsers.bench import BenchResult, parse_bench_file, percentile
from .outputlens import output_figures
from .parsers.prom import parse_metrics_file
from .parsers.reqstats import ReqStat, parse_log
from .rundir import RunDir, why_absent
from .scenario import Scenario
from .units import MiB, bandwidth_GB_s, human_bytes
from .witness import describe_allowance, witness_row

SCHEMA_VERSION = 1
ERROR, WARNING = "error", "warning"


def length_tolerance(prompt_len: int) -> int:
    """Tokens a logged input length may differ from the configured one (chat templates add a few)."""
    return max(32, prompt_len * 3 // 100)


def issue(severity: str, kind: str, message: str, prompt_len: int | None = None) -> dict:
    return {"severity": severity, "kind": kind, "prompt_len": prompt_len, "message": message}


def input_errors(summary: dict) -> list[dict]:
    """Issues that mean the run's inputs are incomplete or unreadable (exit status 2)."""
    return [i for i in summary.get("issues", []) if i.get("severity") == ERROR]


def nearest_length(input_len: int, lengths: list[int]) -> int | None:
    best = min(lengths, key=lambda L: abs(L - input_len))
    return best if abs(best - input_len) <= length_tolerance(best) else None


def _sweep_failures(run: RunDir) -> dict[int, str]:
    """Lengths `pdrepro sweep` recorded as failed, with its reason (timeout, client exit ...)."""
    from .sweep.state import SweepState

    try:
        return SweepState(run.root).failed()
    except (ValueError, TypeError, AttributeError):
        return {}


def _read_bench(run: RunDir, scenario: Scenario, issues: list[dict]) -> dict[int, BenchResult]:
    results = {}
    present = set(run.bench_lengths())
    failures = _sweep_failures(run)
    for L in scenario.sweep.prompt_lens:
        if L not in present:
            if L in failures:
                why = (f"the sweep recorded prompt length {L} as failed ({failures[L]}); rerun `pdrepro sweep` "
                       "with the same --out to retry it")
            else:
                why = (f"the run has no bench result for prompt length {L}: run the sweep for it, or analyse with "
                       "the scenario the run used")
            issues.append(issue(ERROR, "missing_length", f"{run.bench_file(L)}: missing; {why}", L))
            continue
        try:
            result, notes = parse_bench_file(run.bench_file(L), prompt_len=L, num_prompts=scenario.sweep.num_prompts,
                                             output_len=scenario.sweep.output_len)
        except UserError as exc:
            issues.append(issue(ERROR, "bench_unreadable", str(exc), L))
            continue
        for note in notes:
            issues.append(issue(WARNING, "bench_notes", note, L))
        results[L] = result
    for L in sorted(present - set(scenario.sweep.prompt_lens)):
        issues.append(issue(ERROR, "unexpected_length",
                            f"{run.bench_file(L)}: prompt length {L} is not in scenario {scenario.name}'s sweep "
                            f"({', '.join(map(str, scenario.sweep.prompt_lens))}); pass the --scenario the run used"))
    return results


def _read_prefill(run: RunDir, scenario: Scenario, issues: list[dict]) -> dict[int, list[ReqStat]]:
    path = run.prefill_log
    if not path.is_file():
        issues.append(issue(ERROR, "prefill_log_missing",
                            f"{path}: {why_absent(path)}; save the prefill server's log there (it must run with "
                            "--enable-request-time-stats-logging)"))
        return {}
    scan = parse_log(path)
    if scan.unreadable:
        issues.append(issue(WARNING, "unparseable_lines",
                            f"{path}: {len(scan.unreadable)} request-stats line(s) could not be read "
                            f"(first at line {scan.unreadable[0]}); they were skipped"))
    if scan.invalid:
        line, text = scan.invalid[0]
        issues.append(issue(ERROR, "invalid_reqstats",
                            f"{path}: line {line} logs {text} ({len(scan.invalid)} such line(s)); a negative figure is no "
                            "measurement: the log is damaged or edited, use the server's own log"))
    if scan.duplicates:
        issues.append(issue(WARNING, "duplicate_reqstats",
                            f"{path}: {scan.duplicates} request-stats line(s) repeat an earlier request's line (a log "
                            "concatenated with its rotated copy?); each request was counted once"))
    for rid, first, later in scan.conflicts[:1]:
        issues.append(issue(ERROR, "conflicting_reqstats",
                            f"{path}: request rid={rid} is logged at lines {first} and {later} with different figures "
                            f"({len(scan.conflicts)} such request(s)); logs of different runs were mixed: keep one run's log"))
    prefill = [s for s in scan.stats if not s.is_health_check and s.kind in ("prefill", "")]
    if not prefill:
        issues.append(issue(ERROR, "no_reqstats",
                            f"{path}: no ReqTimeStats line of a prefill request in {scan.lines} lines; start the prefill "
                            "server with --enable-request-time-stats-logging and keep its whole log"))
        return {}
    lengths = list(scenario.sweep.prompt_lens)
    groups: dict[int, list[ReqStat]] = {L: [] for L in lengths}
    stray = 0
    for stat in prefill:
        L = nearest_length(stat.input_len, lengths)
        if L is None:
            stray += 1
        else:
            groups[L].append(stat)
    if stray:
        issues.append(issue(WARNING, "unmatched_requests",
                            f"{path}: {stray} prefill request(s) match no prompt length of the sweep "
                            "(other traffic on the server?); they were left out"))
    return groups


def _transfer_samples(L: int, stats: list[ReqStat], bench: BenchResult | None, scenario: Scenario,
                      issues: list[dict], path: Path) -> list[ReqStat]:
    warm = scenario.sweep.warmup_requests
    kept = stats[warm:]
    if bench is not None and len(kept) > bench.completed > 0:
        issues.append(issue(WARNING, "extra_requests",
                            f"{path}: {len(kept)} requests of length {L} after the warm-up, the bench completed "
                            f"{bench.completed}; used the last {bench.completed} (a repeated run?)", L))
        kept = kept[-bench.completed:]
    return kept


def _row(L: int, scenario: Scenario, bench: BenchResult | None, samples: list[ReqStat],
         issues: list[dict], log_path: Path) -> dict:
    tp = scenario.parallel.prefill_tp
    kv = scenario.kv_bytes(L)
    line_rate = scenario.line_rate_GB_s
    row: dict = {
        "prompt_len": L, "requests": None, "expected_requests": scenario.sweep.num_prompts,
        "request_errors": None, "ttft_ms_mean": None, "ttft_ms_median": None, "ttft_ms_p99": None,
        "kv_bytes": kv, "kv_size": human_bytes(kv),
        "transfer_samples": 0, "transfer_ms_median": None, "transfer_ms_mean": None, "transfer_ms_p99": None,
        "bandwidth_GB_s": None, "utilization_pct": None, "transfer_share_of_ttft_pct": None,
        "logged_input_len": None, "logged_kv_bytes": None, "kv_size_mismatch_pct": None, "cached_tokens_max": None,
    }
    if bench is not None:
        row["requests"] = bench.completed
        row["request_errors"] = len(bench.errors)
        mean, median, p99 = bench.ttft_stats_ms()
        row.update(ttft_ms_mean=mean, ttft_ms_median=median, ttft_ms_p99=p99)
        row.update(output_figures(bench.raw, bench.completed, scenario.sweep.output_len,
                                  scenario.sweep.random_range_ratio))
        if bench.errors:
            first = bench.errors[0].strip().splitlines()[-1][:160]
            issues.append(issue(WARNING, "request_errors",
                                f"{bench.path}: {len(bench.errors)} request(s) failed, e.g. {first!r}", L))
    timed = [s for s in samples if s.transfer_s]
    row["transfer_samples"] = len(timed)
    zero = [s for s in samples if s.transfer_speed_GiB_s == 0 and s.transfer_total_MiB]
    if zero:
        issues.append(issue(ERROR, "zero_transfer_speed",
                            f"{log_path}: {len(zero)} prefill line(s) of length {L} log transfer_speed=0.00 GB/s (first at "
                            f"line {zero[0].line_no}): too slow to print or no transfer at all, so no transfer time "
                            "follows; check the KV path with `pdrepro doctor` and rerun this length", L))
    if samples and not timed and not zero:
        issues.append(issue(ERROR, "no_transfer_figures",
                            f"{log_path}: the prefill lines of length {L} carry no transfer_speed/transfer_total; "
                            "run a disaggregated prefill server of a build that logs them", L))
    if timed:
        ms = sorted(s.transfer_s * 1000 for s in timed)
        median_ms = statistics.median(ms)
        row.update(transfer_ms_median=median_ms, transfer_ms_mean=statistics.fmean(ms), transfer_ms_p99=percentile(ms, 99))
        row["bandwidth_GB_s"] = bandwidth_GB_s(kv, median_ms / 1000)
        if line_rate:
            row["utilization_pct"] = row["bandwidth_GB_s"] / line_rate * 100
        if row["ttft_ms_mean"]:
            row["transfer_share_of_ttft_pct"] = median_ms / row["ttft_ms_mean"] * 100
        input_len = int(statistics.median(s.input_len for s in timed))
        logged = statistics.median(s.transfer_total_MiB for s in timed) * MiB * tp
        expected = scenario.kv_bytes_per_token * input_len
        mismatch = (logged - expected) / expected * 100
        row.update(logged_input_len=input_len, logged_kv_bytes=logged, kv_size_mismatch_pct=mismatch,
                   cached_tokens_max=max((s.cached_input_len or 0) for s in timed))
        if abs(mismatch) > scenario.thresholds.max_kv_size_mismatch_pct:
            issues.append(issue(WARNING, "kv_size_mismatch",
                                f"length {L}: the server moved {human_bytes(logged)} per request (rank 0 x TP {tp}), the "
                                f"model says {human_bytes(expected)} ({mismatch:+.1f} %); check the prefill TP in the "
                                "scenario, and prefix-cache hits (run with --disable-radix-cache)", L))
        if row["cached_tokens_max"]:
            issues.append(issue(WARNING, "cache_hits",
                                f"length {L}: up to {row['cached_tokens_max']} prompt tokens came from the prefix cache; "
                                "the published run disabled it (--disable-radix-cache)", L))
    return row


def _metrics(run: RunDir, scenario: Scenario, issues: list[dict]) -> list[dict] | None:
    if not run.metrics_dir.is_dir():
        return None
    out = []
    for path in sorted(p for p in run.metrics_dir.iterdir() if p.is_file()):
        try:
            hist = parse_metrics_file(path)
        except UserError as exc:
            issues.append(issue(WARNING, "metrics_unreadable", str(exc)))
            continue
        lat, total, speed = hist.get("latency_ms"), hist.get("total_mb"), hist.get("speed_gb_s")
        if not lat or not lat.count:
            continue
        entry = {
            "file": path.name, "transfers": int(lat.count),
            "latency_ms_mean": lat.mean,
            "total_MiB_mean": total.mean if total else None,
            "speed_GiB_s_mean": speed.mean if speed else None,
            "bandwidth_GB_s": None,
        }
        if total and total.mean and lat.mean:
            # Bytes over time of the average transfer, all ranks, decimal: comparable to the table.
            entry["bandwidth_GB_s"] = bandwidth_GB_s(total.mean * MiB * scenario.parallel.prefill_tp, lat.mean / 1000)
        out.append(entry)
    return out


def _provenance(run: RunDir, issues: list[dict]) -> dict | None:
    path = run.provenance_file
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        issues.append(issue(WARNING, "provenance_unreadable", f"{path}: not valid JSON; it was left out of the report"))
        return None
    return data if isinstance(data, dict) else None


def headline(rows: list[dict]) -> dict:
    measured = [r for r in rows if r.get("bandwidth_GB_s") is not None]
    if not measured:
        return {}
    peak = max(measured, key=lambda r: r["bandwidth_GB_s"])
    longest = max(measured, key=lambda r: r["prompt_len"])
    return {
        "peak_bandwidth_GB_s": peak["bandwidth_GB_s"],
        "peak_bandwidth_prompt_len": peak["prompt_len"],
        "peak_utilization_pct": peak.get("utilization_pct"),
        "longest_prompt_len": longest["prompt_len"],
        "transfer_share_at_longest_pct": longest.get("transfer_share_of_ttft_pct"),
    }


def compute_summary(run: RunDir, scenario: Scenario) -> dict:
    """Parse and compute; no files written."""
    issues: list[dict] = []
    bench = _read_bench(run, scenario, issues)
    groups = _read_prefill(run, scenario, issues)
    if run.prefill_log.is_file() and not run.decode_log.is_file():
        issues.append(issue(WARNING, "decode_log_missing",
                            f"{run.decode_log}: {why_absent(run.decode_log)}; keep the decode server's log there too"))
    rows = []
    for L in scenario.sweep.prompt_lens:
        stats = groups.get(L, [])
        if L not in bench and not stats:
            continue
        if groups and not stats:
            issues.append(issue(ERROR, "missing_length",
                                f"{run.prefill_log}: no prefill request of length {L}; was the log cut short, or the "
                                "server restarted? keep the whole log of the sweep", L))
        samples = _transfer_samples(L, stats, bench.get(L), scenario, issues, run.prefill_log)
        row = _row(L, scenario, bench.get(L), samples, issues, run.prefill_log)
        for is_error, kind, message in witness_row(run, scenario, row):
            issues.append(issue(ERROR if is_error else WARNING, kind, message, L))
        rows.append(row)
    provenance = _provenance(run, issues)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "scenario": scenario.to_dict(),
        "scenario_fingerprint": scenario.fingerprint,
        "source": "sglang",
        "transport": (provenance or {}).get("transport"),
        "line_rate_GB_s": scenario.line_rate_GB_s,
        "rows": rows,
        "headline": headline(rows),
        "issues": issues,
        "provenance": provenance,
        "witness": describe_allowance(),
        "analysis_code": analysis_code_stamp(),
    }
    # `pdrepro baseline --out RUN` leaves the fabric's measured ceiling here.
    baseline = load_ceiling(run.root)
    if baseline is not None:
        summary["baseline_GB_s"] = baseline
    metrics = _metrics(run, scenario, issues)
    if metrics is not None:
        summary["metrics"] = metrics
    return summary


def write_outputs(run: RunDir, summary: dict) -> list[Path]:
    """summary.json, report.md and the plots; returns the plot paths."""
    from .plots import render_plots
    from .report import render_csv, render_report

    text = jsonout.dumps(summary, run.summary_file, indent=2)
    try:
        run.root.mkdir(parents=True, exist_ok=True)
        tmp = run.summary_file.with_suffix(".json.tmp")
        tmp.write_text(text)
        os.replace(tmp, run.summary_file)
        run.report_file.write_text(render_report(summary))
        (run.root / "summary.csv").write_text(render_csv(summary))
        return render_plots(summary, run.plots_dir)
    except OSError as exc:
        raise jsonout.unwritable(Path(exc.filename or run.summary_file), exc, run.root) from None


def analyze_run(run: RunDir, scenario: Scenario) -> dict:
    """Parse and compute a run, write summary.json, report.md and plots; return the summary."""
    if scenario.kind == "comparison":
        from .comparison import analyze_comparison

        signature = inputs_signature(run) if run.root.is_dir() else None
        summary = analyze_comparison(run, scenario)
        if signature is not None:
            summary.update(inputs_signature=signature, analysis_code=analysis_code_stamp())
            _write_json(run.summary_file, summary)
        return summary
    if not run.root.is_dir():
        why = why_absent(run.root, "directory").replace("missing", "no such run directory")
        raise UserError(f"{run.root}: {why}; give the folder holding bench/ and logs/")
    for folder in (run.bench_dir, run.logs_dir):
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder}: {why_absent(folder, 'directory')}; the run keeps its bench results and logs in "
                            "folders of these names: move the file away")
    if not run.bench_dir.is_dir() and not run.logs_dir.is_dir():
        raise UserError(f"{run.root}: has neither bench/ nor logs/; is this a run directory?")
    # Taken before reading, so an input that changes meanwhile makes the summary stale.
    signature = inputs_signature(run)
    summary = compute_summary(run, scenario)
    summary["inputs_signature"] = signature
    write_outputs(run, summary)
    return summary


# What analysis and the gates write into a run: not inputs.
_OUTPUTS = ("summary.json", "report.md", "summary.csv", "summary.json.tmp", ".summary.json.tmp", ".report.md.tmp",
            "junit.xml")


def inputs_signature(run: RunDir) -> str:
    """Names, sizes and mtimes of every input file in the run (comparison runs nest folders):
    an input added, changed or deleted since the analysis changes it."""
    digest = hashlib.sha256()
    for p in sorted(run.root.rglob("*")):
        if p.name in _OUTPUTS or run.plots_dir in p.parents or not p.is_file():
            continue
        st = p.stat()
        digest.update(f"{p.relative_to(run.root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _write_json(path: Path, data: dict) -> None:
    text = jsonout.dumps(data, path, indent=2, sort_keys=True)
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise jsonout.unwritable(path, exc, path.parent) from None


def analysis_code_stamp() -> str:
    """Which pdrepro wrote a summary: one written by another release is stale, not edited.
    (Between releases, `pdrepro analyze RUN` rewrites a summary the code has outgrown.)"""
    return f"pdrepro {__version__}, summary schema {SCHEMA_VERSION}"
