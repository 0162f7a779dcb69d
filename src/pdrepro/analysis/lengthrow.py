"""One prompt length's row of the published table: which of the logged requests its figures are drawn from (the
last the bench completed, after the warm-up), and the figures themselves (TTFT, transfer time, bandwidth, the
KV size the log shows against the model's), with the issues each raises. summarize.py reads the run's files and
assembles the summary around these rows."""

from __future__ import annotations

import statistics
from pathlib import Path

from ..core.units import MiB, human_bytes
from ..parsers.bench import BenchResult, percentile
from ..parsers.outputlens import output_figures
from ..parsers.reqstats import ReqStat
from ..rundir.contract import ERROR, WARNING, issue, result_row
from ..rundir.issuekind import IssueKind
from ..scenario.model import Scenario


def transfer_samples(L: int, stats: list[ReqStat], dropped: int, bench: BenchResult | None, scenario: Scenario,
                      issues: list[dict], path: Path | str) -> list[ReqStat]:
    """The requests of length ``L`` the figures are drawn from: the last the bench completed, after the warm-up.
    ``stats`` are the newest the logs hold, ``dropped`` how many older ones were counted but not held (the
    warm-up among them)."""
    warm = scenario.sweep.warmup_requests
    kept = stats if dropped else stats[warm:]
    logged = max(0, len(stats) + dropped - warm)
    if bench is not None and 0 < logged < bench.completed:
        issues.append(issue(WARNING, IssueKind.FEWER_LOGGED_REQUESTS,
                            f"{path}: {logged} requests of length {L} logged after the warm-up, the bench completed "
                            f"{bench.completed}; the figures cover only those (a server's log missing or cut short?)", L))
    if bench is not None and logged > bench.completed > 0:
        unheld = f" ({dropped} of the older lines counted, not held)" if dropped else ""
        issues.append(issue(WARNING, IssueKind.EXTRA_REQUESTS,
                            f"{path}: {logged} requests of length {L} after the warm-up, the bench completed "
                            f"{bench.completed}; used the last {bench.completed}, the other {logged - bench.completed} "
                            f"request-stats lines left out{unheld} (a repeated run, or another client's traffic?)", L))
        kept = kept[-bench.completed:]
    return kept


def length_row(L: int, scenario: Scenario, bench: BenchResult | None, samples: list[ReqStat],
         issues: list[dict], log_path: Path | str) -> dict:
    tp = scenario.parallel.prefill_tp
    kv = scenario.kv_bytes(L)
    measured: dict = {}
    if bench is not None:
        measured.update(requests=bench.completed, request_errors=len(bench.errors), ttft_ms=bench.ttft_stats_ms())
    timed = [s for s in samples if s.transfer_s]
    if timed:
        ms = sorted(s.transfer_s * 1000 for s in timed if s.transfer_s is not None)
        measured.update(transfer_ms_median=statistics.median(ms), transfer_ms_mean=statistics.fmean(ms),
                        transfer_ms_p99=percentile(ms, 99))
    row = result_row(L, kv, line_rate_GB_s=scenario.line_rate_GB_s, expected_requests=scenario.sweep.num_prompts,
                     transfer_samples=len(timed), **measured)
    if bench is not None:
        row.update(output_figures(bench.ok_output_lens, bench.total_output_tokens, bench.total_output_tokens_retokenized,
                                  bench.completed, scenario.sweep.output_len, scenario.sweep.random_range_ratio))
        if bench.errors:
            first = bench.errors[0].strip().splitlines()[-1][:160]
            issues.append(issue(WARNING, IssueKind.REQUEST_ERRORS,
                                f"{bench.path}: {len(bench.errors)} request(s) failed, e.g. {first!r}", L))
    zero = [s for s in samples if s.transfer_speed_GiB_s == 0 and s.transfer_total_MiB]
    if zero:
        issues.append(issue(ERROR, IssueKind.ZERO_TRANSFER_SPEED,
                            f"{log_path}: {len(zero)} prefill line(s) of length {L} log transfer_speed=0.00 GB/s (first at "
                            f"line {zero[0].line_no}): too slow to print or no transfer at all, so no transfer time "
                            "follows; check the KV path with `pdrepro doctor` and rerun this length", L))
    if samples and not timed and not zero:
        issues.append(issue(ERROR, IssueKind.NO_TRANSFER_FIGURES,
                            f"{log_path}: the prefill lines of length {L} carry no transfer_speed/transfer_total; "
                            "run a disaggregated prefill server of a build that logs them", L))
    if timed:
        input_len = int(statistics.median(s.input_len for s in timed if s.input_len is not None))
        logged = statistics.median(s.transfer_total_MiB for s in timed if s.transfer_total_MiB is not None) * MiB * tp
        expected = scenario.kv_bytes_per_token * input_len
        mismatch = (logged - expected) / expected * 100
        row.update(logged_input_len=input_len, logged_kv_bytes=logged, kv_size_mismatch_pct=mismatch,
                   cached_tokens_max=max((s.cached_input_len or 0) for s in timed))
        if abs(mismatch) > scenario.thresholds.max_kv_size_mismatch_pct:
            issues.append(issue(WARNING, IssueKind.KV_SIZE_MISMATCH,
                                f"length {L}: the server moved {human_bytes(logged)} per request (rank 0 x TP {tp}), the "
                                f"model says {human_bytes(expected)} ({mismatch:+.1f} %); check the prefill TP in the "
                                "scenario, and prefix-cache hits (run with --disable-radix-cache)", L))
        if row["cached_tokens_max"]:
            issues.append(issue(WARNING, IssueKind.CACHE_HITS,
                                f"length {L}: up to {row['cached_tokens_max']} prompt tokens came from the prefix cache; "
                                "the published run disabled it (--disable-radix-cache)", L))
    return row
