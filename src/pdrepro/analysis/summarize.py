"""Turns a finished run directory into the published table: RUN/summary.json, report.md, plots.

Sources per prompt length L:
- TTFT from the bench client's result for L (per-request ``ttfts`` when the
  run used --output-details, else its summary keys);
- KV transfer time per request from the prefill servers' request-stats lines
  (every prefill server's log of the run, merged) whose input length is
  nearest L, minus the warm-up request(s);
- the phases each server timed per request, medians over the same requests
  (analysis/phases.py);
- KV bytes from the model geometry (``Scenario.kv_bytes``), cross-checked
  against the server's own rank-0 ``transfer_total`` times TP.

Problems found along the way become ``issues`` in the summary; whatever could
be computed is still written, so a half-broken run still shows its good rows.
"""

from __future__ import annotations

import datetime as dt
import json

from ..core.errors import UserError
from ..core.units import MiB, bandwidth_GB_s
from ..parsers.bench import BenchResult, parse_bench_file
from ..parsers.prom import parse_metrics_file
from ..parsers.reqstats import LogScan, ReqStat, merge_scans, parse_log
from ..rundir import RunDir, why_absent
from ..rundir.contract import ERROR, SUMMARY_SCHEMA_VERSION, WARNING, analysis_code_stamp, headline, issue
from ..rundir.engineceiling import against_rows, check_against_run, transport_mismatch
from ..rundir.issuekind import IssueKind
from ..rundir.summarymodel import build as build_summary
from ..scenario.model import Scenario
from ..scenario.seams import engine_of, run_backend
from .lengthrow import length_row, transfer_samples
from .overlap import overlap_figures
from .phases import decode_of, phase_figures, read_decode
from .requestsamples import RequestSamples
from .serverlogs import (
    length_keep,
    length_tolerance,
    logs_label,
    nearest_length,
    refuse_outside_window,
    refuse_stale_start,
    refuse_wrong_role,
    sweep_windows,
    topology_logs,
)

__all__ = ["compute_summary", "length_tolerance", "nearest_length"]
from .transport_evidence import transport_facts
from .whatran import describe as describe_ran
from .whatran import differences, what_ran
from .witness import describe_allowance, not_measured, outside_window, witness_row


def _sweep_failures(run: RunDir) -> dict[int, str]:
    """Lengths `pdrepro sweep` recorded as failed, with its reason (timeout, client exit ...)."""
    return run.read_sweep_state().failed()


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
            issues.append(issue(ERROR, IssueKind.MISSING_LENGTH, f"{run.bench_file(L)}: missing; {why}", L))
            continue
        try:
            result, notes = parse_bench_file(run.bench_file(L), prompt_len=L, num_prompts=scenario.sweep.num_prompts,
                                             output_len=scenario.sweep.output_len)
        except UserError as exc:
            issues.append(issue(ERROR, IssueKind.BENCH_UNREADABLE, str(exc), L))
            continue
        for note in notes:
            issues.append(issue(WARNING, IssueKind.BENCH_NOTES, note, L))
        results[L] = result
    for L in sorted(present - set(scenario.sweep.prompt_lens)):
        issues.append(issue(ERROR, IssueKind.UNEXPECTED_LENGTH,
                            f"{run.bench_file(L)}: prompt length {L} is not in scenario {scenario.name}'s sweep "
                            f"({', '.join(map(str, scenario.sweep.prompt_lens))}); pass the --scenario the run used"))
    return results


def _scan_issues(scan: LogScan, issues: list[dict]) -> None:
    path = scan.path
    if scan.unreadable:
        issues.append(issue(WARNING, IssueKind.UNPARSEABLE_LINES,
                            f"{path}: {len(scan.unreadable)} request-stats line(s) could not be read "
                            f"(first at line {scan.unreadable[0]}); they were skipped"))
    if scan.interleaved:
        first, second = scan.interleaved
        issues.append(issue(ERROR, IssueKind.INTERLEAVED_SERVERS,
                            f"{path}: two servers log into this one file (they start at lines {first} and {second}, each "
                            "before the other is ready), so its requests cannot be told apart; give each server its own "
                            "log (prefill.log, prefill-1.log, ...; `pdrepro render` names them)"))
    if scan.invalid:
        line, text = scan.invalid[0]
        issues.append(issue(ERROR, IssueKind.INVALID_REQSTATS,
                            f"{path}: line {line} logs {text} ({len(scan.invalid)} such line(s)); a negative figure is no "
                            "measurement: the log is damaged or edited, use the server's own log"))


def _read_prefill(run: RunDir, scenario: Scenario, issues: list[dict],
                  completed: dict[int, int]) -> tuple[dict[int, list[ReqStat]], dict[int, int]]:
    """Per sweep length the prefill requests the logs hold (the newest, when a log holds far more than the bench
    sent: serverlogs.length_keep), and per length how many older ones were counted but not held."""
    paths = topology_logs(run, scenario, "prefill", issues)
    if run.prefill_log not in paths:
        path = run.prefill_log
        issues.append(issue(ERROR, IssueKind.PREFILL_LOG_MISSING,
                            f"{path}: {why_absent(path)}; save the prefill server's log there (it must run with "
                            "--enable-request-time-stats-logging)"))
        if not paths:
            return {}, {}
    keep = length_keep(scenario, completed, "prefill")
    scans = [parse_log(p, keep) for p in paths]
    for scan in scans:
        refuse_wrong_role(run, scenario, "prefill", scan)
        _scan_issues(scan, issues)
        refuse_stale_start(scan, [s for s in scan.stats if not (s.is_health_check or s.is_server_warmup)])
    merged = merge_scans(scans)
    for rid, first_path, first, later_path, later in merged.duplicates[:1]:
        issues.append(issue(WARNING, IssueKind.DUPLICATE_REQSTATS,
                            f"{later_path}: line {later} repeats the request-stats line of rid={rid} in {first_path} "
                            f"(line {first}) with the same figures ({len(merged.duplicates)} such line(s); a log "
                            "concatenated with its rotated copy, or copied under two names?); each request was counted once"))
    for rid, first_path, first, later_path, later in merged.conflicts[:1]:
        issues.append(issue(ERROR, IssueKind.CONFLICTING_REQSTATS,
                            f"request rid={rid} is logged in {first_path} (line {first}) and in {later_path} (line {later}) "
                            f"with different figures ({len(merged.conflicts)} such request(s)); logs of different runs "
                            "were mixed: keep one run's logs"))
    label = logs_label(run, paths)
    # Health checks and each server's own warm-up are no client's requests: neither counts nor warns.
    prefill = [s for s in merged.stats if not (s.is_health_check or s.is_server_warmup) and s.kind in ("prefill", "")]
    if not prefill:
        lines = sum(scan.lines for scan in scans)
        issues.append(issue(ERROR, IssueKind.NO_REQSTATS,
                            f"{label}: no ReqTimeStats line of a prefill request in {lines} lines; start the prefill "
                            "server with --enable-request-time-stats-logging and keep its whole log"))
        return {}, {}
    lengths = list(scenario.sweep.prompt_lens)
    groups: dict[int, list[ReqStat]] = {L: [] for L in lengths}
    dropped = {L: sum(int(scan.dropped.get(L, 0)) for scan in scans) for L in lengths}
    stray = sum(int(scan.dropped.get("stray", 0)) for scan in scans)
    for stat in prefill:
        L = nearest_length(stat.input_len, lengths)
        if L is None:
            stray += 1
        else:
            groups[L].append(stat)
    if stray:
        issues.append(issue(WARNING, IssueKind.UNMATCHED_REQUESTS,
                            f"{label}: {stray} prefill request(s) match no prompt length of the sweep "
                            "(other traffic on the server?); they were left out"))
    return groups, {L: n for L, n in dropped.items() if n}


def _metrics(run: RunDir, scenario: Scenario, issues: list[dict]) -> list[dict] | None:
    if not run.metrics_dir.is_dir():
        return None
    out = []
    for path in run.metrics_files():
        try:
            hist = parse_metrics_file(path)
        except UserError as exc:
            issues.append(issue(WARNING, IssueKind.METRICS_UNREADABLE, str(exc)))
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
    try:
        record = run.read_provenance()
    except (json.JSONDecodeError, UnicodeDecodeError):
        issues.append(issue(WARNING, IssueKind.PROVENANCE_UNREADABLE,
                            f"{run.provenance_file}: not valid JSON; it was left out of the report"))
        return None
    return None if record is None else record.to_json()


def compute_summary(run: RunDir, scenario: Scenario, samples_out: dict[int, RequestSamples] | None = None) -> dict:
    """Parse and compute; no files written. ``samples_out``: filled per length with the requests each row was
    drawn from (for the intervals of figures made of repeats)."""
    issues: list[dict] = []
    windows = sweep_windows(run)
    bench = _read_bench(run, scenario, issues)
    completed = {L: result.completed for L, result in bench.items()}
    groups, dropped = _read_prefill(run, scenario, issues, completed)
    if run.prefill_log.is_file() and not run.decode_log.is_file():
        issues.append(issue(WARNING, IssueKind.DECODE_LOG_MISSING,
                            f"{run.decode_log}: {why_absent(run.decode_log)}; keep the decode server's log there too"))
    decode = read_decode(run, scenario, issues, length_keep(scenario, completed, "decode"))
    prefill_logs = logs_label(run, topology_logs(run, scenario, "prefill", []))
    rows = []
    for L in scenario.sweep.prompt_lens:
        stats = groups.get(L, [])
        if L not in bench and not stats:
            continue
        if groups and not stats:
            issues.append(issue(ERROR, IssueKind.MISSING_LENGTH,
                                f"{prefill_logs}: no prefill request of length {L}; was the log cut short, or the "
                                "server restarted? keep the whole log of the sweep", L))
        samples = transfer_samples(L, stats, dropped.get(L, 0), bench.get(L), scenario, issues, prefill_logs)
        row = length_row(L, scenario, bench.get(L), samples, issues, prefill_logs)
        if samples_out is not None:
            result = bench.get(L)
            samples_out[L] = RequestSamples(ttft_ms=result.ttft_ms if result is not None else (), transfer_ms=tuple(
                s.transfer_s * 1000 for s in samples if s.transfer_s))
        row.update(overlap_figures(samples, stats))
        same = [s for s in decode if nearest_length(s.input_len, list(scenario.sweep.prompt_lens)) == L]
        row.update(phase_figures(L, samples, decode_of(samples, decode, same, scenario.sweep.warmup_requests), issues,
                                 str(run.logs_dir)))
        if groups:
            # Requests of the length the logs hold after the warm-up: fewer than the client completed
            # means the figures are not all of the run's requests (checks.requests_logged).
            row["logged_requests"] = max(0, len(stats) + dropped.get(L, 0) - scenario.sweep.warmup_requests)
        for is_error, kind, message in witness_row(run, scenario, row):
            issues.append(issue(ERROR if is_error else WARNING, kind, message, L))
        refuse_outside_window(L, samples, windows, prefill_logs, run.sweep_state_file)
        offset = windows[L][2] if L in windows else dt.timedelta(0)
        late = outside_window(row, [s.timestamp for s in samples if s.timestamp], offset, windows.get(L))
        if late:
            # Readings of another stretch of time are no witness of this length: not measured, never a pass.
            not_measured(row, late)
            issues.append(issue(WARNING, IssueKind.LOGS_OUTSIDE_COUNTER_WINDOW, f"length {L}: {late}", L))
        rows.append(row)
    provenance = _provenance(run, issues)
    backend = run_backend(run.root, scenario)
    transport, transport_evidence = transport_facts(run, provenance, backend)
    ran = what_ran(provenance, engine=engine_of(scenario), backend=backend)
    if differences(ran):
        issues.append(issue(WARNING, IssueKind.PINS_DIFFER, f"{run.provenance_file}: {describe_ran(ran)}"))
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "scenario": scenario.to_dict(),
        "scenario_fingerprint": scenario.fingerprint,
        "source": engine_of(scenario).name,
        "transport": transport,
        "transport_evidence": transport_evidence,
        "what_ran": ran,
        "line_rate_GB_s": scenario.line_rate_GB_s,
        "rows": rows,
        "headline": headline(rows),
        "issues": issues,
        "provenance": provenance,
        "witness": describe_allowance(scenario.thresholds.min_nic_kv_share_pct, scenario.thresholds.min_rail_share),
        "analysis_code": analysis_code_stamp(),
    }
    # `pdrepro baseline --out RUN` leaves the fabric's measured ceiling here, and each port's figures.
    record = run.read_baseline()
    baseline = None if record is None else record.ceiling(run.baseline_file, run.root, scenario.line_rate_GB_s)
    if baseline is not None:
        summary["baseline_GB_s"] = baseline
    perftest = None if record is None else record.ib_write_bw
    if record is not None and perftest is not None and perftest.ports:
        summary["baseline_ports"] = {"min_port_fraction": scenario.thresholds.min_port_baseline_fraction,
                                     "aggregate_GB_s": perftest.aggregate_GB_s,
                                     "ports": [p.model_dump() for p in record.ports()]}
    metrics = _metrics(run, scenario, issues)
    if metrics is not None:
        summary["metrics"] = metrics
    # A ceiling that is no measurement of this run refuses the run (CeilingError is a UserError): a verdict set
    # against it would judge the requests by a figure nobody measured here.
    ceiling = run.read_engine_ceiling()
    if ceiling is not None:
        found, engine_transport, source = ceiling
        check_against_run(found, scenario.kv_bytes, scenario.line_rate_GB_s)
        summary["engine_ceiling"] = against_rows(found, rows)
        summary["engine_ceiling_source"] = {"file": source, "transport": engine_transport}
        mismatch = transport_mismatch(source, engine_transport, transport)
        if mismatch:
            issues.append(issue(WARNING, IssueKind.ENGINE_CEILING_TRANSPORT, mismatch))
    return build_summary(summary)
