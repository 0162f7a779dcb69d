"""Pass/fail verdicts on a summary: the scenario's thresholds plus figures that cannot be true.

``evaluate`` reads only the summary (as its model, summarymodel.Summary) and the scenario, so it serves
``pdrepro check`` and the reproduction gates alike. Each result names the
prompt length it concerns (None for run-wide checks).

A result has three states: PASS, FAIL, and N/A (``applicable`` False), which
only the transport and NIC witness checks take: under a scenario's
``transport: any``, a run whose engines used TCP on nodes the sweep found
without any RDMA device has no RDMA path to prove. N/A is never a pass
(``passed`` is False) and never a failure (``failed`` leaves it out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..rundir.engineceiling import CONTRADICTION_RATIO
from ..rundir.issuekind import IssueKind
from ..rundir.portbaseline import judge_ports
from ..rundir.summarymodel import Issue, Row, RunProvenance, Summary, TransportEvidence, TransportProof, as_summary
from ..scenario.model import Scenario
from ..scenario.seams import backend_of, engine_of
from .nicchecks import rail_checks, witness_checks
from .pins import unjudged
from .result import NOT_APPLICABLE, CheckResult, check, failed, not_applicable, not_applicable_result

# Re-exported: the readers of verdicts import these from here.
__all__ = ["NOT_APPLICABLE", "CheckResult", "evaluate", "failed", "not_applicable", "tcp_without_rdma"]


def _evidence(summary: Summary) -> TransportEvidence:
    return summary.transport_evidence or TransportEvidence()


def tcp_without_rdma(summary: Summary | Mapping[str, Any], policy: str) -> bool:
    """The scenario's transport policy allows TCP, every engine used it, and the sweep found no RDMA
    device on the nodes (the report asks this too, with the policy its summary's scenario states)."""
    s = as_summary(summary)
    return no_fabric(s.transport, _evidence(s), policy)


def no_fabric(transport: str | None, evidence: TransportEvidence, policy: str) -> bool:
    """The rule itself, on the transport a run's engines used and its transport evidence: also asked of a folder
    that keeps the servers' logs but no summary of its own (a load's, by `pdrepro diagnose`)."""
    return policy == "any" and transport == "tcp" and evidence.rdma_devices.found is False and not evidence.conflicts


def _servers(summary: Summary) -> str:
    evidence = _evidence(summary)
    proof = evidence.proof or TransportProof()
    lines = [s.summary for s in proof.servers.values()]
    return "; ".join(lines or evidence.servers.values()) or "nothing found"


def _transport(summary: Summary, scenario: Scenario) -> CheckResult:
    """rdma: the sweep's proof must hold. any: the servers' own log lines decide, for every run."""
    evidence = _evidence(summary)
    used = summary.transport
    if evidence.conflicts:
        # Two of the run's own records disagree (transport_evidence.py): no state of the transport is proven.
        return CheckResult("transport", None, None, None, "", False,
                           "the run's transport evidence disagrees: " + "; ".join(evidence.conflicts))
    logged = f" (the servers' logs: {'; '.join(evidence.servers.values())})" if evidence.servers else ""
    if scenario.transport == "rdma":
        proof = evidence.proof
        if proof is None:
            return CheckResult("transport", None, None, None, "", False, "the run records no transport proof "
                               "(provenance.json has no 'transport'); run it with `pdrepro sweep`" + logged)
        if proof.skipped:
            return CheckResult("transport", None, None, None, "", False, "KV transport not checked: the sweep ran "
                               "with --no-transport-proof; rerun it without that flag" + logged)
        if proof.proven is not True:
            return CheckResult("transport", None, None, None, "", False,
                               f"KV transport not proven to be RDMA: {_servers(summary)}")
        return CheckResult("transport", None, None, None, "", True, f"KV transport proven RDMA: {_servers(summary)}")
    if tcp_without_rdma(summary, scenario.transport):
        return not_applicable_result("transport", None)
    found = "; ".join(evidence.servers.values()) or "no server log in the run"
    if used == "rdma":
        return CheckResult("transport", None, None, None, "", True, f"the engines used RDMA: {found}")
    if used == "tcp":
        devices = evidence.rdma_devices
        why = ("the sweep found RDMA devices on the nodes "
               f"({', '.join(f'{r} {d}' for r, d in sorted(devices.devices.items()) if d)}), so the "
               "NIC witness decides" if devices.found else
               "no record shows the nodes lack RDMA devices ("
               + "; ".join(devices.evidence or ["no counters or host NIC record"]) + "), so the NIC witness decides")
        return CheckResult("transport", None, None, None, "", True, f"the engines used TCP, allowed by the scenario; {why}")
    return CheckResult("transport", None, None, None, "", False,
                       f"the servers' logs do not show one working transport ({used or 'no logs'}): {found}")


def _issue_kinds(summary: Summary) -> dict[IssueKind, list[Issue]]:
    kinds: dict[IssueKind, list[Issue]] = {}
    for i in summary.issues:
        kinds.setdefault(i.kind, []).append(i)
    return kinds


# What a sweep's provenance.json must record for its run to be judged (the gate and `check` alike).
_PROVENANCE_PARTS = ("pins", "host", "environment", "scenario", "endpoints")


def _provenance_problem(prov: RunProvenance | None, where: str, scenario: Scenario) -> str | None:
    if prov is None:
        return f"{where} missing from the run; `pdrepro sweep` writes it"
    parts = {"pins": prov.pins, "host": prov.host, "environment": prov.environment, "scenario": prov.scenario,
             "endpoints": prov.endpoints}
    missing = [k for k in _PROVENANCE_PARTS if parts[k] is None]
    if missing:
        return f"{where} lacks {', '.join(missing)}"
    ran = prov.scenario.name if prov.scenario is not None else None
    if ran != scenario.name:
        return f"{where} is of scenario {ran}, not {scenario.name}"
    # The pins of the run's engine and backend, each under the key its module names.
    engine, backend = engine_of(scenario), backend_of(scenario)
    keys = {**engine.pin_keys, **backend.pin_keys}
    recorded = prov.pins.model_dump() if prov.pins is not None else {}
    if prov.pins is None or not all(recorded.get(key) for key in keys):
        return f"{where} lacks the {engine.label}/{backend.label} commits"
    return None


def _provenance(summary: Summary, scenario: Scenario) -> CheckResult:
    """A sweep's run (or each configuration of a comparison) records what ran, where and with which pins."""
    if summary.compares_configurations:
        records = {f"{name}/provenance.json": p for name, p in summary.configuration_provenance().items()}
    else:
        records = {"provenance.json": summary.provenance}
    problems = [p for where, prov in records.items() if (p := _provenance_problem(prov, where, scenario))]
    detail = "; ".join(problems) if problems else "provenance.json records the pins, host, environment and endpoints"
    return CheckResult("provenance_present", None, None, None, "", not problems, detail)


def _evaluate_comparison(summary: Summary, scenario: Scenario) -> list[CheckResult]:
    """A comparison is judged on completeness; its figures are compared, not bounded."""
    t = scenario.thresholds
    out = []
    for name, config in (summary.configurations or {}).items():
        m = config.measured
        L = m.prompt_len if m else None
        out.append(CheckResult("configuration_present", L, None, None, "", m is not None,
                               f"{name}: {'measured' if m else 'no bench result in the run'}"))
        if not m:
            continue
        expected = scenario.sweep.num_prompts
        out.append(check("completed", L, m.completed / expected, ">=", t.min_completed_fraction, "of prompts",
                          f"{name}: {m.completed}/{expected} completed:"))
        out.append(check("request_errors", L, float(m.errors), "<=", float(t.max_request_errors), "errors",
                          f"{name}: failed requests"))
    if not out:
        out.append(CheckResult("configuration_present", None, None, None, "", False, "the summary names no configuration"))
    # A configuration whose own files are not the configuration it is named as (analysis.members).
    out += [CheckResult("member_identity", None, None, None, "", False, i.message)
            for i in _issue_kinds(summary).get(IssueKind.MEMBER_IDENTITY, [])]
    out.append(_provenance(summary, scenario))
    return out


def _row_checks(L: int, row: Row, summary: Summary, scenario: Scenario, line_rate: float | None,
                witness_applies: bool) -> list[CheckResult]:
    """The bounds and the impossible figures of one measured length."""
    t = scenario.thresholds
    measures_ttft = summary.measures_ttft
    out: list[CheckResult] = []
    bw = row.bandwidth_GB_s
    if L in t.min_bandwidth_GB_s:
        out.append(check("min_bandwidth", L, bw, ">=", t.min_bandwidth_GB_s[L], "GB/s", "bandwidth"))
    if line_rate:
        out.append(check("bandwidth_within_line_rate", L, bw, "<=", line_rate, "GB/s",
                          "bandwidth (above the line rate is impossible: wrong TP or link in the scenario?)"))
    ttft = row.ttft_ms_mean
    if measures_ttft:
        positive = ttft is not None and ttft > 0
        out.append(CheckResult("ttft_positive", L, ttft, 0.0, "ms", positive,
                               f"length {L}: mean TTFT {'is' if positive else 'is not'} above 0 ms"
                               + ("" if ttft is not None else " (not measured)"), ">"))
        transfer = row.transfer_ms_median
        first = row.ttft_ms_median if row.ttft_ms_median is not None else ttft
        if first is not None and transfer is not None:
            # The first token is decoded after the KV arrived: a TTFT shorter than the transfer is
            # impossible in any scenario (the two figures are not of the same requests).
            out.append(check("ttft_covers_transfer", L, first, ">=", transfer, "ms",
                              "median TTFT (it includes the KV transfer, median shown as the bound)"))
        if L in t.max_ttft_ms:
            out.append(check("max_ttft", L, ttft, "<=", t.max_ttft_ms[L], "ms", "mean TTFT"))
        if t.max_transfer_share_pct is not None:
            out.append(check("max_transfer_share", L, row.transfer_share_of_ttft_pct, "<=",
                              t.max_transfer_share_pct, "%", "KV transfer share of TTFT"))
    expected = row.expected_requests or scenario.sweep.num_prompts
    if row.requests is not None:
        fraction = row.requests / expected if expected else None
        out.append(check("completed", L, fraction, ">=", t.min_completed_fraction, "of prompts",
                          f"{row.requests}/{expected} completed:"))
    if not isinstance(row, Row):
        return out  # a smoke's row: no served request, so no output, log or NIC figure to judge
    if row.requested_output_len_min is not None:
        tokens = row.output_tokens_min
        basis = row.output_tokens_basis or "not reported by the bench client"
        out.append(check("output_tokens", L, None if tokens is None else float(tokens), ">=",
                          float(row.requested_output_len_min), "tokens", f"generated output ({basis}):"))
    logged = row.logged_requests
    if measures_ttft and logged is not None and row.requests is not None:
        # A log short of the client's requests: the figures would be of some requests, not the run's.
        out.append(check("requests_logged", L, float(logged), ">=", float(row.requests), "requests",
                          f"requests the prefill logs hold after the warm-up (the client completed {row.requests}):"))
    if row.request_errors is not None:
        out.append(check("request_errors", L, float(row.request_errors), "<=", float(t.max_request_errors),
                          "errors", "failed requests"))
    if measures_ttft:
        out += witness_checks(L, row, line_rate, t.min_nic_kv_share_pct, witness_applies)
        out += rail_checks(L, row, t.min_rail_share, witness_applies, required=scenario.transport == "rdma")
    mismatch = row.kv_size_mismatch_pct
    if mismatch is not None:
        out.append(check("kv_size_match", L, abs(mismatch), "<=", t.max_kv_size_mismatch_pct, "%",
                          "|logged KV size - model KV size|"))
    return out


def evaluate(summary: Summary | Mapping[str, Any], scenario: Scenario) -> list[CheckResult]:
    s = as_summary(summary)
    # What the summary is judged on is its kind's (its model's class variables), never a name compared here.
    if s.compares_configurations:
        return _evaluate_comparison(s, scenario)
    t = scenario.thresholds
    rows = s.rows_by_length()
    line_rate = s.line_rate_GB_s or scenario.line_rate_GB_s
    measures_ttft = s.measures_ttft
    issues = _issue_kinds(s)
    out: list[CheckResult] = []
    witness_applies = not tcp_without_rdma(s, scenario.transport)

    # Inputs: every configured length present, every log readable.
    unreadable = issues.get(IssueKind.NO_REQSTATS, []) + issues.get(IssueKind.PREFILL_LOG_MISSING, []) \
        + issues.get(IssueKind.UNPARSEABLE_LINES, [])
    out.append(CheckResult("logs_readable", None, float(len(unreadable)), 0.0, "problems", not unreadable,
                           unreadable[0].message if unreadable else "server logs hold readable request-stats lines", "=="))
    for L in scenario.sweep.prompt_lens:
        row = rows.get(L)
        problems = [i for kind in (IssueKind.MISSING_LENGTH, IssueKind.BENCH_UNREADABLE, IssueKind.NO_TRANSFER_FIGURES)
                    for i in issues.get(kind, []) if i.prompt_len == L]
        present = row is not None and not problems
        detail = problems[0].message if problems else (f"length {L}: measured" if row else f"length {L}: missing from the run")
        out.append(CheckResult("length_present", L, None, None, "", present, detail))
    for i in issues.get(IssueKind.UNEXPECTED_LENGTH, []):
        out.append(CheckResult("length_expected", None, None, None, "", False, i.message))

    for L in scenario.sweep.prompt_lens:
        row = rows.get(L)
        if row is not None:
            out += _row_checks(L, row, s, scenario, line_rate, witness_applies)

    if measures_ttft:
        # A sweep's run records what ran and how the KV moved; a run without provenance.json was not made
        # by the sweep (logs and bench files put together by hand): it fails here, in `check` and the gates alike.
        out.append(_provenance(s, scenario))
        out.append(_transport(s, scenario))

    unknown = unjudged(s.provenance, s.what_ran or []) if measures_ttft else None
    if scenario.pins_match == "gate" and (unknown or s.provenance is not None):
        bad = [r for r in s.what_ran or [] if r.match is False]
        detail = ("what ran differs from docker/versions.env: " + "; ".join(
            f"{r.item} ran {r.ran}, pinned {r.pinned}" for r in bad) if bad else
            "what ran matches docker/versions.env where the run recorded it")
        # Nothing recorded is not "nothing differs": a served run that cannot show what ran fails the gate.
        out.append(CheckResult("pins_match", None, float(len(bad)), 0.0, "differences", not bad and not unknown,
                               f"{unknown}; {detail}" if unknown and bad else unknown or detail, "=="))

    for key, c in sorted((s.engine_ceiling or {}).items(), key=lambda item: int(item[0])):
        # Per request through SGLang well above the engine alone on the same box: one figure is not of this box.
        if c.contradiction:
            L = int(key)
            out.append(CheckResult("engine_ceiling", L, c.ratio, CONTRADICTION_RATIO, "x the engine alone",
                                   False, f"length {L}: {c.bandwidth_GB_s or 0:.2f} GB/s per request contradicts the "
                                   f"engine alone on the same box ({c.engine_GB_s or 0:.2f} GB/s, ratio "
                                   f"{c.ratio or 0:.2f} > {CONTRADICTION_RATIO:g}): the transfer times or the ceiling "
                                   "are not of this run", "<="))

    # `pdrepro baseline`'s ib_write_bw per port, alone and all at once, each against its own line rate.
    for v in judge_ports(s.baseline_ports.ports if s.baseline_ports else [], t.min_port_baseline_fraction):
        out.append(CheckResult(f"port_baseline_{v.phase}", None, v.figure, v.bound, "GB/s", v.passed, v.detail, ">="))

    head = s.headline
    if t.min_peak_bandwidth_GB_s is not None:
        out.append(check("peak_bandwidth", head.peak_bandwidth_prompt_len, head.peak_bandwidth_GB_s,
                          ">=", t.min_peak_bandwidth_GB_s, "GB/s", "peak bandwidth"))
    if t.min_peak_utilization_pct is not None:
        out.append(check("peak_utilization", head.peak_bandwidth_prompt_len, head.peak_utilization_pct,
                          ">=", t.min_peak_utilization_pct, "%", "peak utilization"))
    return out
