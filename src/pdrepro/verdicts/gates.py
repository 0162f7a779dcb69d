"""Pass/fail verdicts on a summary: the scenario's thresholds plus figures that cannot be true.

``evaluate`` reads only the summary dict and the scenario, so it serves
``pdrepro check`` and the reproduction gates alike. Each result names the
prompt length it concerns (None for run-wide checks).

A result has three states: PASS, FAIL, and N/A (``applicable`` False), which
only the transport and NIC witness checks take: under a scenario's
``transport: any``, a run whose engines used TCP on nodes the sweep found
without any RDMA device has no RDMA path to prove. N/A is never a pass
(``passed`` is False) and never a failure (``failed`` leaves it out).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.whatran import unjudged
from ..rundir.engineceiling import CONTRADICTION_RATIO
from ..rundir.issuekind import IssueKind
from ..scenario.model import ComparisonScenario, Scenario


@dataclass(frozen=True)
class CheckResult:
    name: str
    prompt_len: int | None
    figure: float | None
    bound: float | None
    unit: str
    passed: bool
    detail: str
    op: str = ""          # how figure is compared with bound: ">=", "<=", "=="
    applicable: bool = True

    @property
    def verdict(self) -> str:
        return "N/A" if not self.applicable else "PASS" if self.passed else "FAIL"


# Why the transport and the NIC witness do not apply to a run (transport: any, TCP, no RDMA device).
NOT_APPLICABLE = "not applicable: TCP, allowed by the scenario, no RDMA device on the node"


def _not_applicable(name: str, L: int | None, bound=None, unit: str = "", op: str = "") -> CheckResult:
    where = f"length {L}: " if L is not None else "KV transport: "
    return CheckResult(name, L, None, bound, unit, False, where + NOT_APPLICABLE, op, applicable=False)


def tcp_without_rdma(summary: dict, policy: str) -> bool:
    """The scenario's transport policy allows TCP, every engine used it, and the sweep found no RDMA
    device on the nodes (the report asks this too, with the policy its summary's scenario states)."""
    evidence = summary.get("transport_evidence") or {}
    devices = (evidence.get("rdma_devices") or {}).get("found")
    return policy == "any" and summary.get("transport") == "tcp" and devices is False and not evidence.get("conflicts")


def _servers(summary: dict) -> str:
    evidence = summary.get("transport_evidence") or {}
    proof = evidence.get("proof") or {}
    lines = [s.get("summary", "") for s in (proof.get("servers") or {}).values()]
    return "; ".join(lines or (evidence.get("servers") or {}).values()) or "nothing found"


def _transport(summary: dict, scenario: Scenario) -> CheckResult:
    """rdma: the sweep's proof must hold. any: the servers' own log lines decide, for every run."""
    evidence = summary.get("transport_evidence") or {}
    used = summary.get("transport")
    if evidence.get("conflicts"):
        # Two of the run's own records disagree (transport_evidence.py): no state of the transport is proven.
        return CheckResult("transport", None, None, None, "", False,
                           "the run's transport evidence disagrees: " + "; ".join(evidence["conflicts"]))
    logged = f" (the servers' logs: {'; '.join((evidence.get('servers') or {}).values())})" if evidence.get("servers") else ""
    if scenario.transport == "rdma":
        proof = evidence.get("proof")
        if not proof:
            return CheckResult("transport", None, None, None, "", False, "the run records no transport proof "
                               "(provenance.json has no 'transport'); run it with `pdrepro sweep`" + logged)
        if proof.get("skipped"):
            return CheckResult("transport", None, None, None, "", False, "KV transport not checked: the sweep ran "
                               "with --no-transport-proof; rerun it without that flag" + logged)
        if proof.get("proven") is not True:
            return CheckResult("transport", None, None, None, "", False,
                               f"KV transport not proven to be RDMA: {_servers(summary)}")
        return CheckResult("transport", None, None, None, "", True, f"KV transport proven RDMA: {_servers(summary)}")
    if tcp_without_rdma(summary, scenario.transport):
        return _not_applicable("transport", None)
    found = "; ".join((evidence.get("servers") or {}).values()) or "no server log in the run"
    if used == "rdma":
        return CheckResult("transport", None, None, None, "", True, f"the engines used RDMA: {found}")
    if used == "tcp":
        devices = (evidence.get("rdma_devices") or {})
        why = ("the sweep found RDMA devices on the nodes "
               f"({', '.join(f'{r} {d}' for r, d in sorted((devices.get('devices') or {}).items()) if d)}), so the "
               "NIC witness decides" if devices.get("found") else
               "no record shows the nodes lack RDMA devices ("
               + "; ".join(devices.get("evidence") or ["no counters or host NIC record"]) + "), so the NIC witness decides")
        return CheckResult("transport", None, None, None, "", True, f"the engines used TCP, allowed by the scenario; {why}")
    return CheckResult("transport", None, None, None, "", False,
                       f"the servers' logs do not show one working transport ({used or 'no logs'}): {found}")


def _cmp(figure, op: str, bound) -> bool:
    if figure is None:
        return False
    return figure >= bound if op == ">=" else figure <= bound if op == "<=" else figure == bound


def _check(name, L, figure, op, bound, unit, what) -> CheckResult:
    passed = _cmp(figure, op, bound)
    shown = "not measured" if figure is None else f"{figure:.2f} {unit}".rstrip()
    where = f"length {L}: " if L is not None else ""
    detail = f"{where}{what} {shown} {'meets' if passed else 'fails'} {op} {bound:g} {unit}".rstrip()
    return CheckResult(name, L, figure, bound, unit, passed, detail, op)


def _issue_kinds(summary: dict) -> dict[str, list[dict]]:
    kinds: dict[str, list[dict]] = {}
    for i in summary.get("issues", []):
        kinds.setdefault(i.get("kind", ""), []).append(i)
    return kinds


def _evaluate_comparison(summary: dict, scenario: Scenario) -> list[CheckResult]:
    """A comparison is judged on completeness; its figures are compared, not bounded."""
    t = scenario.thresholds
    out = []
    for name, config in (summary.get("configurations") or {}).items():
        m = config.get("measured")
        L = m.get("prompt_len") if m else None
        out.append(CheckResult("configuration_present", L, None, None, "", m is not None,
                               f"{name}: {'measured' if m else 'no bench result in the run'}"))
        if not m:
            continue
        expected = scenario.sweep.num_prompts
        out.append(_check("completed", L, m["completed"] / expected, ">=", t.min_completed_fraction, "of prompts",
                          f"{name}: {m['completed']}/{expected} completed:"))
        out.append(_check("request_errors", L, float(m["errors"]), "<=", float(t.max_request_errors), "errors",
                          f"{name}: failed requests"))
    if not out:
        out.append(CheckResult("configuration_present", None, None, None, "", False, "the summary names no configuration"))
    return out


def _witness(L: int, row: dict, line_rate: float | None, floor: float, applies: bool = True) -> list[CheckResult]:
    """The NICs' own byte counts (witness.py): they must show the KV the model says was sent,
    and cannot have run faster than the line."""
    if not applies:
        return [_not_applicable("nic_witness", L, floor, "% of KV", ">=")]
    share = row.get("nic_kv_share_pct")
    nodes = ", ".join(f"{role} {n['counter']}" for role, n in (row.get("nic_nodes") or {}).items()
                      if n.get("kv_share_pct") is not None)
    if share is None:
        detail = f"length {L}: NIC byte counts not measured: {row.get('nic_problem') or 'no counter record'}"
        out = [CheckResult("nic_witness", L, None, floor, "% of KV", False, detail, ">=")]
    else:
        c = _check("nic_witness", L, share, ">=", floor, "% of KV",
                   f"bytes the NICs moved ({nodes}) as a share of the model's KV bytes:")
        if not c.passed:
            c = CheckResult(c.name, L, share, c.bound, c.unit, False,
                            c.detail + " (the KV did not cross the RDMA ports: TCP fallback or a dead path?)", c.op)
        out = [c]
    rate = row.get("nic_rate_GB_s")
    if rate is not None and line_rate:
        out.append(_check("nic_within_line_rate", L, rate, "<=", line_rate, "GB/s",
                          "NIC counters' average rate (above the line rate no counter is right)"))
    return out


def evaluate(summary: dict, scenario: Scenario) -> list[CheckResult]:
    if isinstance(scenario, ComparisonScenario) or summary.get("kind") == "comparison":
        return _evaluate_comparison(summary, scenario)
    t = scenario.thresholds
    rows = {r["prompt_len"]: r for r in summary.get("rows", [])}
    line_rate = summary.get("line_rate_GB_s") or scenario.line_rate_GB_s
    measures_ttft = summary.get("source") != "smoke"
    issues = _issue_kinds(summary)
    out: list[CheckResult] = []
    witness_applies = not tcp_without_rdma(summary, scenario.transport)

    # Inputs: every configured length present, every log readable.
    unreadable = issues.get(IssueKind.NO_REQSTATS, []) + issues.get(IssueKind.PREFILL_LOG_MISSING, []) \
        + issues.get(IssueKind.UNPARSEABLE_LINES, [])
    out.append(CheckResult("logs_readable", None, float(len(unreadable)), 0.0, "problems", not unreadable,
                           unreadable[0]["message"] if unreadable else "server logs hold readable request-stats lines", "=="))
    for L in scenario.sweep.prompt_lens:
        row = rows.get(L)
        problems = [i for kind in (IssueKind.MISSING_LENGTH, IssueKind.BENCH_UNREADABLE, IssueKind.NO_TRANSFER_FIGURES)
                    for i in issues.get(kind, []) if i.get("prompt_len") == L]
        present = row is not None and not problems
        detail = problems[0]["message"] if problems else (f"length {L}: measured" if row else f"length {L}: missing from the run")
        out.append(CheckResult("length_present", L, None, None, "", present, detail))
    for i in issues.get(IssueKind.UNEXPECTED_LENGTH, []):
        out.append(CheckResult("length_expected", None, None, None, "", False, i["message"]))

    for L in scenario.sweep.prompt_lens:
        row = rows.get(L)
        if row is None:
            continue
        bw = row.get("bandwidth_GB_s")
        if L in t.min_bandwidth_GB_s:
            out.append(_check("min_bandwidth", L, bw, ">=", t.min_bandwidth_GB_s[L], "GB/s", "bandwidth"))
        if line_rate:
            out.append(_check("bandwidth_within_line_rate", L, bw, "<=", line_rate, "GB/s",
                              "bandwidth (above the line rate is impossible: wrong TP or link in the scenario?)"))
        ttft = row.get("ttft_ms_mean")
        if measures_ttft:
            positive = ttft is not None and ttft > 0
            out.append(CheckResult("ttft_positive", L, ttft, 0.0, "ms", positive,
                                   f"length {L}: mean TTFT {'is' if positive else 'is not'} above 0 ms"
                                   + ("" if ttft is not None else " (not measured)"), ">"))
            transfer = row.get("transfer_ms_median")
            first = row.get("ttft_ms_median") if row.get("ttft_ms_median") is not None else ttft
            if first is not None and transfer is not None:
                # The first token is decoded after the KV arrived: a TTFT shorter than the transfer is
                # impossible in any scenario (the two figures are not of the same requests).
                out.append(_check("ttft_covers_transfer", L, first, ">=", transfer, "ms",
                                  "median TTFT (it includes the KV transfer, median shown as the bound)"))
            if L in t.max_ttft_ms:
                out.append(_check("max_ttft", L, ttft, "<=", t.max_ttft_ms[L], "ms", "mean TTFT"))
            if t.max_transfer_share_pct is not None:
                out.append(_check("max_transfer_share", L, row.get("transfer_share_of_ttft_pct"), "<=",
                                  t.max_transfer_share_pct, "%", "KV transfer share of TTFT"))
        expected = row.get("expected_requests") or scenario.sweep.num_prompts
        if row.get("requests") is not None:
            fraction = row["requests"] / expected if expected else None
            out.append(_check("completed", L, fraction, ">=", t.min_completed_fraction, "of prompts",
                              f"{row['requests']}/{expected} completed:"))
        if row.get("requested_output_len_min") is not None:
            tokens = row.get("output_tokens_min")
            basis = row.get("output_tokens_basis") or "not reported by the bench client"
            out.append(_check("output_tokens", L, None if tokens is None else float(tokens), ">=",
                              float(row["requested_output_len_min"]), "tokens",
                              f"generated output ({basis}):"))
        logged = row.get("logged_requests")
        if measures_ttft and logged is not None and row.get("requests") is not None:
            # A log short of the client's requests: the figures would be of some requests, not the run's.
            out.append(_check("requests_logged", L, float(logged), ">=", float(row["requests"]), "requests",
                              f"requests the prefill logs hold after the warm-up (the client completed {row['requests']}):"))
        if row.get("request_errors") is not None:
            out.append(_check("request_errors", L, float(row["request_errors"]), "<=", float(t.max_request_errors),
                              "errors", "failed requests"))
        if measures_ttft:
            out += _witness(L, row, line_rate, t.min_nic_kv_share_pct, witness_applies)
        mismatch = row.get("kv_size_mismatch_pct")
        if mismatch is not None:
            out.append(_check("kv_size_match", L, abs(mismatch), "<=", t.max_kv_size_mismatch_pct, "%",
                              "|logged KV size - model KV size|"))

    # A run without provenance.json was not made by the sweep (logs and bench files put together by
    # hand): under rdma it has no proof to judge here, and the transport gate fails it on its own.
    if measures_ttft and (scenario.transport == "any" or summary.get("provenance") is not None):
        out.append(_transport(summary, scenario))

    unknown = unjudged(summary.get("provenance"), summary.get("what_ran") or []) if measures_ttft else None
    if scenario.pins_match == "gate" and (unknown or summary.get("provenance") is not None):
        ran = summary.get("what_ran") or []
        bad = [r for r in ran if r.get("match") is False]
        detail = ("what ran differs from docker/versions.env: " + "; ".join(
            f"{r['item']} ran {r['ran']}, pinned {r['pinned']}" for r in bad) if bad else
            "what ran matches docker/versions.env where the run recorded it")
        # Nothing recorded is not "nothing differs": a served run that cannot show what ran fails the gate.
        out.append(CheckResult("pins_match", None, float(len(bad)), 0.0, "differences", not bad and not unknown,
                               f"{unknown}; {detail}" if unknown and bad else unknown or detail, "=="))

    for L, c in sorted((summary.get("engine_ceiling") or {}).items(), key=lambda item: int(item[0])):
        # Per request through SGLang well above the engine alone on the same box: one figure is not of this box.
        if c.get("contradiction"):
            out.append(CheckResult("engine_ceiling", int(L), c.get("ratio"), CONTRADICTION_RATIO, "x the engine alone",
                                   False, f"length {L}: {c.get('bandwidth_GB_s'):.2f} GB/s per request contradicts the "
                                   f"engine alone on the same box ({c.get('engine_GB_s'):.2f} GB/s, ratio "
                                   f"{c.get('ratio'):.2f} > {CONTRADICTION_RATIO:g}): the transfer times or the ceiling "
                                   "are not of this run", "<="))

    head = summary.get("headline") or {}
    if t.min_peak_bandwidth_GB_s is not None:
        out.append(_check("peak_bandwidth", head.get("peak_bandwidth_prompt_len"), head.get("peak_bandwidth_GB_s"),
                          ">=", t.min_peak_bandwidth_GB_s, "GB/s", "peak bandwidth"))
    if t.min_peak_utilization_pct is not None:
        out.append(_check("peak_utilization", head.get("peak_bandwidth_prompt_len"), head.get("peak_utilization_pct"),
                          ">=", t.min_peak_utilization_pct, "%", "peak utilization"))
    return out


def failed(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.applicable and not r.passed]


def not_applicable(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.applicable]
