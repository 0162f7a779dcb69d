"""A load sweep's raw results -> its summary (rundir.loadsummary.LoadSummary), in memory; nothing is written.

Per step (RUN/steps/<step>/, a one-length run of its own, and RUN/load-state.json's record of it):
- failed requests as the bench client counts them: its record's ``completed`` are the successful requests,
  every other request it sent failed (``errors`` holds why, per request, with --output-details);
- client TTFT p50/p99 of the successful requests (``ttfts``, seconds, with --output-details);
- per-request KV transfer time p50/p99 from the prefill servers' ReqTimeStats lines, as the sweep's analysis
  derives it (rank 0's transfer_total over its transfer_speed), of the requests that entered a prefill server
  (their ``entry_time``, seconds since the epoch) while the step's bench client ran, the step's warm-up
  requests (the first to enter) left out; and the sum of their ``#retries``;
- each scraped server's failed /generate answers, Mooncake session recoveries and retracted requests
  (parsers.promcounters says which /metrics series and why those), over the step.

The window is the sweep host's clock and ``entry_time`` the prefill server's: on one box the same clock; on
two nodes, as far apart as their clocks are (keep them synchronised).
"""

from __future__ import annotations

import statistics

from ..core import advice
from ..core.errors import UserError
from ..parsers.bench import BenchResult, parse_bench_file, percentile
from ..parsers.promcounters import counters_file
from ..parsers.reqstats import ReqStat, merge_scans, parse_log
from ..rundir import RunDir, loadstate
from ..rundir.contract import analysis_code_stamp
from ..rundir.loadstate import LoadPlan, LoadState, LoadStep, step_run
from ..rundir.loadsummary import LoadIssue, LoadStepFigures, LoadSummary, LoadThresholds, ServerFailures
from ..rundir.memberrecord import MemberFinding
from ..scenario.model import Scenario
from ..scenario.recorded import recorded_fingerprint
from .members import Claim, bench_findings, copies, finding, folder_findings, readable_bench, record_findings
from .summarize import length_tolerance

ROLES = ("prefill", "decode")


def read_state(top: RunDir) -> LoadState:
    state = loadstate.read(top.root)
    if state is None:
        raise UserError(f"{loadstate.path(top.root)}: missing, so {top.root} holds no load sweep; run `pdrepro load` "
                        f"with --out {top.root} (or, a sweep's run, judge it with `{advice.check(top.root)}`)")
    return state


def _prefill_requests(top: RunDir, plan: LoadPlan, issues: list[LoadIssue]) -> list[ReqStat]:
    """The client requests of the plan's length in every prefill server's log of the run, with an entry time."""
    paths = top.role_logs("prefill")
    if not paths:
        issues.append(LoadIssue(severity="warning", message=f"{top.logs_dir}: no prefill server log, so no transfer "
                                "figure; pass --logs-from the folder the servers log into"))
        return []
    merged = merge_scans([parse_log(p) for p in paths])
    if merged.conflicts:
        rid, first, _, later, _ = merged.conflicts[0]
        raise UserError(f"request rid={rid} is logged in {first} and in {later} with different figures: logs of "
                        "different runs were mixed; keep one run's logs")
    tolerance = length_tolerance(plan.prompt_len)
    picked = [s for s in merged.stats if not (s.is_health_check or s.is_server_warmup)
              and s.kind in ("prefill", "") and s.input_len is not None
              and abs(s.input_len - plan.prompt_len) <= tolerance]
    timeless = [s for s in picked if s.entry_time_s is None]
    if timeless:
        issues.append(LoadIssue(severity="warning", message=f"{paths[0]}: {len(timeless)} prefill line(s) carry no "
                                "entry_time, so no step can claim them; run a server build that logs it"))
    return sorted((s for s in picked if s.entry_time_s is not None), key=lambda s: s.entry_time_s or 0.0)


def _bench(run: RunDir, plan: LoadPlan, output_len: int) -> BenchResult:
    result, _notes = parse_bench_file(run.bench_file(plan.prompt_len), prompt_len=plan.prompt_len,
                                      num_prompts=plan.num_prompts, output_len=output_len)
    return result


def _ttft(figures: dict, bench: BenchResult) -> None:
    if bench.has_details:
        ms = sorted(bench.ttft_ms)
        figures.update(ttft_ms_p50=statistics.median(ms), ttft_ms_p99=percentile(ms, 99))
    else:
        figures.update(ttft_ms_p50=bench.median_ttft_ms, ttft_ms_p99=bench.p99_ttft_ms)


def _throughput(figures: dict, bench: BenchResult) -> None:
    """Requests/s and output tokens/s over the client's own duration of the step; none where it records no positive
    duration (a figure per zero seconds is no figure)."""
    seconds = bench.duration_s
    if seconds is None or seconds <= 0:
        return
    tokens = bench.total_output_tokens
    if tokens is None and bench.ok_output_lens:
        tokens = sum(bench.ok_output_lens)
    figures.update(requests_per_s=bench.completed / seconds,
                   output_tokens_per_s=None if tokens is None else tokens / seconds)


def _transfer(figures: dict, stats: list[ReqStat]) -> None:
    figures["logged_requests"] = len(stats)
    times = sorted(s.transfer_s * 1000.0 for s in stats if s.transfer_s)
    figures["transfer_samples"] = len(times)
    if times:
        p50, p99 = statistics.median(times), percentile(times, 99)
        figures.update(transfer_ms_p50=p50, transfer_ms_p99=p99, transfer_p99_over_p50=p99 / p50 if p50 > 0 else None)
    retries = [s.retries for s in stats if s.retries is not None]
    if retries:
        figures.update(retries=sum(retries), retried_requests=sum(1 for r in retries if r > 0))


def _servers(run: RunDir, L: int) -> dict[str, ServerFailures]:
    out = {}
    for role in ROLES:
        path = run.metrics_file(role, L)
        if path.is_file():
            c = counters_file(path)
            out[role] = ServerFailures(generate_responses=c.generate_responses, generate_failed=c.generate_failed,
                                       requests=c.requests, session_recoveries=c.session_recoveries,
                                       retracted=c.retracted)
    return out


def _step(top: RunDir, state: LoadState, step: LoadStep, requests: list[ReqStat], scenario: Scenario,
          issues: list[LoadIssue]) -> LoadStepFigures:
    plan = state.plan
    record = state.step(step.name)
    figures: dict = dict(name=step.name, concurrency=step.concurrency, request_rate=step.request_rate,
                         status=record.status, reason=record.reason, requests=plan.num_prompts)
    if record.status != "done":
        return LoadStepFigures(**figures)
    run = step_run(top.root, step)
    try:
        bench = _bench(run, plan, scenario.sweep.output_len)
    except UserError as exc:
        issues.append(LoadIssue(severity="error", step=step.name, message=str(exc)))
        return LoadStepFigures(**figures)
    figures.update(completed=bench.completed, failed_requests=plan.num_prompts - bench.completed,
                   first_error=bench.errors[0].strip()[-300:] if bench.errors else None)
    _ttft(figures, bench)
    _throughput(figures, bench)
    window = record.window
    if window is not None:
        inside = [s for s in requests if window[0] <= (s.entry_time_s or 0.0) <= window[1]]
        mine = inside[scenario.sweep.warmup_requests:]
        _transfer(figures, mine)
        if requests and len(mine) < bench.completed:
            issues.append(LoadIssue(severity="warning", step=step.name,
                                    message=f"{top.logs_dir}: {len(mine)} prefill request(s) of step {step.name} logged "
                                            f"after its warm-up, the client completed {bench.completed}; the transfer "
                                            "figures cover only those (a server's log missing or cut short?)"))
    figures["servers"] = _servers(run, plan.prompt_len)
    return LoadStepFigures(**figures)


def _windows(state: LoadState, requests: list[ReqStat], warmup: int) -> list[MemberFinding]:
    """Each measured step's window its own: no two overlap, and none holds more requests than its client sent
    (its bench record) and the warm-up before them; a widened window would claim another step's requests."""
    out = []
    done = [(s, state.step(s.name).window) for s in state.plan.steps if state.step(s.name).status == "done"]
    timed = sorted(((s, w) for s, w in done if w is not None), key=lambda sw: sw[1][0])
    latest: tuple[LoadStep, float] | None = None  # the step whose window ends last so far
    for b, wb in timed:
        if latest is not None and wb[0] < latest[1]:
            a = latest[0]
            out.append(finding(b.name, "window", f"a window after step {a.name}'s (which ends at {latest[1]:.3f})",
                               f"a window from {wb[0]:.3f}, inside step {a.name}'s"))
        if latest is None or wb[1] > latest[1]:
            latest = (b, wb[1])
    for s, w in timed:
        inside = sum(1 for r in requests if w[0] <= (r.entry_time_s or 0.0) <= w[1])
        sent_n = state.plan.num_prompts
        if inside > sent_n + warmup:
            out.append(finding(s.name, "window", f"at most {sent_n + warmup} requests ({sent_n} sent by its client, "
                               f"{warmup} warm-up)", f"{inside} prefill requests logged inside its window "
                               f"({max(inside - warmup, 0)} after its warm-up)"))
    return out


def member_findings(top: RunDir, state: LoadState, requests: list[ReqStat], warmup: int) -> list[MemberFinding]:
    """The load's steps against its plan (analysis.members): each step's folder, record and bench record (the
    plan's length, prompts, concurrency and rate), no two steps' bench files alike, each window its own; and the
    scenario the run recorded against the plan's."""
    plan = state.plan
    out: list[MemberFinding] = []
    own = recorded_fingerprint(top)
    if own is not None and own != plan.scenario_fingerprint:
        out.append(finding(".", "scenario", f"fingerprint {plan.scenario_fingerprint[:12]} ({loadstate.FILE})",
                           f"fingerprint {own[:12]} (the run's provenance.json)"))
    claims = [Claim(name=s.name, folder=f"steps/{s.name}") for s in plan.steps]
    refused, usable = folder_findings(top.root, claims)
    out += refused
    by_name = {s.name: s for s in plan.steps}
    present = {c.name: step_run(top.root, by_name[c.name]) for c in usable if (top.root / c.folder).is_dir()}
    for name, run in present.items():
        step = by_name[name]
        out += record_findings(name, run, "load", state.run_id)
        record = readable_bench(run.bench_file(plan.prompt_len)) if run.bench_file(plan.prompt_len).is_file() else None
        if record is not None:
            out += bench_findings(name, record, plan.prompt_len, plan.num_prompts, step.concurrency, step.request_rate)
    return out + copies(present) + _windows(state, requests, warmup)


def compute_load_summary(top: RunDir, scenario: Scenario) -> LoadSummary:
    state = read_state(top)
    plan = state.plan
    issues: list[LoadIssue] = []
    requests = _prefill_requests(top, plan, issues)
    members = member_findings(top, state, requests, scenario.sweep.warmup_requests)
    refused = {f.member for f in members if f.about == "folder"}
    # A step refused for its folder (a link, outside the run) is never read: it is reported as not measured.
    steps = [_step(top, state, step, requests, scenario, issues) if step.name not in refused else
             LoadStepFigures(name=step.name, concurrency=step.concurrency, request_rate=step.request_rate,
                             status="failed", reason="its folder is refused", requests=plan.num_prompts)
             for step in plan.steps]
    t = scenario.thresholds
    return LoadSummary(scenario=scenario.name, scenario_fingerprint=plan.scenario_fingerprint,
                       prompt_len=plan.prompt_len, num_prompts=plan.num_prompts,
                       warmup_requests=scenario.sweep.warmup_requests,
                       thresholds=LoadThresholds(max_request_errors=t.max_request_errors,
                                                 max_transfer_p99_over_p50=t.max_transfer_p99_over_p50),
                       steps=steps, issues=issues, members=members, analysis_code=analysis_code_stamp())
