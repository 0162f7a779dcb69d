"""The human-readable report of a summary (markdown), read as its model (summarymodel.Summary).

It reads only the summary, so the smoke test and a real benchmark share it.
Figures follow the published table: decimal GB/MB, ms, GB/s; a figure a
source could not measure (the smoke has no TTFT) shows as an em dash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabulate import tabulate

from ..core.units import GB, MB, MiB, human_bytes
from ..rundir.summarymodel import Metric, Reference, ReferenceRow, Row, SmokeRow, Summary, Witness, as_summary
from ..scenario.seams import summary_backend, summary_engine
from ..verdicts.gates import NOT_APPLICABLE, tcp_without_rdma
from .fabricceiling import ceiling_lines as fabric_ceiling_lines
from .gpupath import relaxed_ordering_note
from .phases import phases_section
from .placement import no_fabric, placement_title
from .portbaseline import port_baseline_section
from .provenance import provenance_section
from .rails import rails_section

DASH = "—"


def _f(value: float | None, digits: int) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def _delta(measured: float | None, published: float | None) -> str:
    if measured is None or not published:
        return DASH
    return f"{(measured - published) / published * 100:+.1f}"


def _empty(cell: str) -> bool:
    return cell in ("", DASH)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """A table without the columns no row fills (a column of dashes says nothing a reader needs)."""
    keep = [i for i in range(len(headers))
            if i == 0 or not rows or not all(_empty(row[i]) for row in rows)]
    return tabulate([[row[i] for i in keep] for row in rows], headers=[headers[i] for i in keep],
                    tablefmt="github", disable_numparse=True, colalign=("right",) * len(keep))


def _utilization(summary: Summary, value: float | None) -> str:
    """A share of line rate only where a fabric carried the KV (one box over TCP has no line rate)."""
    return DASH if no_fabric(summary) else _f(value, 1)


def _kv_size(row: Row, measures_ttft: bool) -> str:
    if row.kv_bytes is not None and not measures_ttft:
        # As the smoke's own table prints the same bytes: two decimals of MB, whatever the size.
        return f"{row.kv_bytes / MB:.2f} MB"
    if row.kv_size:
        return row.kv_size
    return DASH if row.kv_bytes is None else human_bytes(row.kv_bytes)


def measured_table(summary: Summary | Mapping[str, Any]) -> str:
    model = as_summary(summary)
    # The smoke times bare transfers, not requests: the column is named for what it counts.
    headers = ["Prompt Length", "TTFT (ms)", "KV Size", "Transfer Time (ms)", "Bandwidth (GB/s)",
               "Utilization (%)", "Transfer share of TTFT (%)", "Requests" if model.measures_ttft else "Transfers"]
    rows = []
    for r in model.rows:
        expected = r.expected_requests
        done = r.requests
        requests = DASH if done is None else (f"{done}/{expected}" if expected else str(done))
        rows.append([str(r.prompt_len), _f(r.ttft_ms_mean, 2), _kv_size(r, model.measures_ttft), _f(r.transfer_ms_median, 2),
                     _f(r.bandwidth_GB_s, 2), _utilization(model, r.utilization_pct),
                     _f(r.transfer_share_of_ttft_pct, 1), requests])
    return _table(headers, rows)


def _reference(summary: Summary) -> Reference:
    return summary.scenario.reference or Reference()


def reference_table(summary: Summary) -> str | None:
    reference = _reference(summary)
    published = {r.prompt_len: r for r in reference.rows}
    if not published:
        return None
    headers = ["Prompt Length", "TTFT (ms)", "published", "Δ (%)", "Transfer (ms)", "published", "Δ (%)",
               "Bandwidth (GB/s)", "published", "Δ (%)", "Utilization (%)", "published"]
    rows = []
    measured = summary.rows_by_length()
    for L in sorted(set(published) | set(measured)):
        m, p = measured.get(L, Row(prompt_len=L)), published.get(L, ReferenceRow(prompt_len=L))
        rows.append([
            str(L),
            _f(m.ttft_ms_mean, 2), _f(p.ttft_ms, 2), _delta(m.ttft_ms_mean, p.ttft_ms),
            _f(m.transfer_ms_median, 2), _f(p.transfer_ms, 2), _delta(m.transfer_ms_median, p.transfer_ms),
            _f(m.bandwidth_GB_s, 2), _f(p.bandwidth_GB_s, 2), _delta(m.bandwidth_GB_s, p.bandwidth_GB_s),
            _utilization(summary, m.utilization_pct), _utilization(summary, p.utilization_pct),
        ])
    source = reference.source
    note = f"\n\nPublished figures: {source}." if source else ""
    return _table(headers, rows) + note


def _of_denominator(summary: Summary) -> str:
    """What the peak is held against: the NICs' line rate over a fabric; on one box over TCP the engine alone
    on the same box at that length where the run measured it; else nothing."""
    h = summary.headline
    if no_fabric(summary):
        c = (summary.engine_ceiling or {}).get(str(h.peak_bandwidth_prompt_len))
        if c is None or c.ratio is None or c.engine_GB_s is None:
            return " (one box over TCP: no line rate, and no engine-alone figure at this length)"
        return (f" = {c.ratio:.2f} of the {summary_backend(summary).label} engine alone on the same box "
                f"({c.engine_GB_s:.2f} GB/s; "
                "one box over TCP has no line rate)")
    line_rate, util = summary.line_rate_GB_s, h.peak_utilization_pct
    return f" = {util:.1f} % of the {line_rate:g} GB/s line rate" if util is not None and line_rate else ""


def _size(kv_bytes: int | None) -> str:
    """`` (0.52 MB per transfer)``, as the smoke's table prints the same bytes; nothing where unknown."""
    return "" if kv_bytes is None else f" ({kv_bytes / MB:.2f} MB per transfer)"


def _smoke_headline(summary: Summary) -> list[str]:
    """The smoke's two peaks, each named for what it is and at or above every row of its column."""
    h = summary.headline
    sizes = {r.prompt_len: r.kv_bytes for r in summary.rows}
    # Each peak says which size it is: the prompt length and the bytes each transfer moved at it.
    lines = [f"- Peak {summary_backend(summary).label} bandwidth: **{h.peak_bandwidth_GB_s:.2f} GB/s** at "
             f"{h.peak_bandwidth_prompt_len} tokens"
             f"{'' if h.peak_bandwidth_prompt_len is None else _size(sizes.get(h.peak_bandwidth_prompt_len))} "
             "(median of the timed transfers at that size)."]
    socket = [(r.socket_bandwidth_GB_s, r.prompt_len) for r in summary.length_rows()
              if isinstance(r, SmokeRow) and r.socket_bandwidth_GB_s is not None]
    if socket:
        best, at = max(socket)
        lines.append(f"- Peak plain socket copy of the same bytes between the same containers: **{best:.2f} GB/s** "
                     f"at {at} tokens{_size(sizes.get(at))}.")
    return lines


def headline_lines(summary: Summary) -> list[str]:
    h = summary.headline
    if h.peak_bandwidth_GB_s is None:
        return ["No prompt length has a measured KV transfer: see the issues below."]
    if not summary.measures_ttft:  # the smoke: bare transfers and the socket copy beside them
        return _smoke_headline(summary)
    ref = _reference(summary).headline
    of_rate = _of_denominator(summary)
    pub = ""
    if ref.peak_bandwidth_GB_s is not None:
        pub = f" (published: {ref.peak_bandwidth_GB_s:g} GB/s"
        util = ref.peak_utilization_pct is not None and not no_fabric(summary)
        pub += f", {ref.peak_utilization_pct:g} %)" if util else ")"
    lines = [f"- Peak KV transfer bandwidth: **{h.peak_bandwidth_GB_s:.2f} GB/s** at {h.peak_bandwidth_prompt_len} "
             f"tokens{of_rate}{pub}."]
    lines += fabric_ceiling_lines(summary)
    share = h.transfer_share_at_longest_pct
    if share is not None and h.longest_prompt_len is not None:
        L = h.longest_prompt_len
        pub_share = ref.transfer_share_at(L)
        pub = f" (published: {pub_share:g} %)" if pub_share is not None else ""
        lines.append(f"- KV transfer time is **{share:.1f} %** of the mean TTFT at {L} tokens{pub}.")
    if summary.baseline_GB_s is not None:
        below = summary.baseline_GB_s < h.peak_bandwidth_GB_s
        lines.append(f"- Measured fabric ceiling (`pdrepro baseline`): {summary.baseline_GB_s:.2f} GB/s"
                     + (": below the peak above, so that measurement did not reach what the run moved; re-measure "
                        "it before reading a share of it." if below else "."))
    return lines


def issues_section(summary: Summary) -> list[str]:
    if not summary.issues:
        return ["None."]
    out = []
    for i in summary.issues:
        where = f" (length {i.prompt_len})" if i.prompt_len is not None else ""
        out.append(f"- **{i.severity}**{where}: {i.message}")
    return out


def _by_number(metric: Metric) -> tuple[int, str]:
    """prefill-128.prom before prefill-1024.prom: scrapes in the order of their prompt lengths."""
    digits = "".join(c if c.isdigit() else " " for c in metric.file).split()
    return (int(digits[-1]) if digits else -1, metric.file)


def metrics_section(summary: Summary) -> list[str]:
    metrics = summary.metrics
    if not metrics:
        return []
    headers = ["Scrape", "Transfers", "Mean latency (ms)", "Mean rank-0 size (MiB)", "Mean speed (GiB/s)",
               "Bandwidth, all ranks (GB/s)"]
    rows = [[m.file, str(m.transfers), _f(m.latency_ms_mean, 2), _f(m.total_MiB_mean, 2),
             _f(m.speed_GiB_s_mean, 2), _f(m.bandwidth_GB_s, 2)] for m in sorted(metrics, key=_by_number)]
    return ["## Second source: the prefill server's /metrics", "",
            "Averages over every transfer the server made since it started (warm-up and all lengths "
            "included), so they are a plausibility check, not a per-length figure.", "",
            _table(headers, rows), ""]


def ceiling_lines(summary: Summary | Mapping[str, Any]) -> list[str]:
    """One line per length: the per-request KV bandwidth against the engine alone on the same box."""
    return [f"length {L}: {_f(c.bandwidth_GB_s, 2)} GB/s per request, the engine alone {_f(c.engine_GB_s, 2)} GB/s "
            f"({c.engine_shape}): " + ("a contradiction, " if c.contradiction else "") + f"ratio {c.ratio:.2f}"
            for L, c in (as_summary(summary).engine_ceiling or {}).items() if c.ratio is not None]


def _engine_label(summary: Summary) -> str:
    engine = summary_engine(summary)
    return engine.label if engine is not None else "the serving engine"


def ceiling_section(summary: Summary) -> list[str]:
    ceiling = summary.engine_ceiling
    if not ceiling:
        return []
    rows = [[L, _f(c.bandwidth_GB_s, 2), _f(c.engine_GB_s, 2), c.engine_shape, _f(c.ratio, 2)]
            for L, c in ceiling.items()]
    source = summary.engine_ceiling_source.file if summary.engine_ceiling_source else "engine-ceiling"
    backend, engine = summary_backend(summary), _engine_label(summary)
    return ["## Against the engine alone on the same box", "",
            f"{source}: the {backend.label} engine "
            f"outside {engine}, two processes on the run's GPUs with the same transport, writing one request's KV of "
            "each length (the best of the shapes measured). "
            "The ratio is the one-box analogue of the share of line rate.", "",
            _table(["Prompt Length", "Per request (GB/s)", "Engine alone (GB/s)", "Engine shape", "Ratio"], rows), "",
            f"Where the rest goes: {engine}'s logged transfer time runs {backend.timing}, so it may include "
            "waits in queues and polling intervals before completion is noticed; and "
            f"{engine} hands the engine the KV as "
            "per-page, per-layer blocks (page size 1 here: many small slices), where the engine alone writes a few "
            "large blocks. Short prompts lose most: their fixed queue and polling delay is large next to a "
            "millisecond of transfer.", "", *relaxed_ordering_note(summary)]


def transport_section(summary: Summary) -> list[str]:
    """What the engines used (their own log lines), the sweep's proof, and the nodes' RDMA devices."""
    evidence = summary.transport_evidence
    policy = summary.scenario.transport
    # Logs and bench files put together by hand (no provenance) under rdma: nothing to judge, as in the checks.
    if evidence is None or (policy == "rdma" and not (summary.provenance and summary.provenance.recorded())
                                 and summary.transport == "unknown"):
        return []
    proof = evidence.proof
    proof_text = ("not recorded" if proof is None else "not run (--no-transport-proof)" if proof.skipped else
                  "RDMA proven" if proof.proven else "not proven")
    devices = evidence.rdma_devices
    found = {True: "found", False: "none", None: "not known"}[devices.found]
    if tcp_without_rdma(summary, policy):
        verdict = f"transport and NIC witness: {NOT_APPLICABLE}."
    elif policy == "any":
        verdict = "transport: TCP or RDMA allowed by the scenario; the NIC witness applies (RDMA devices " \
                  f"{found} on the nodes)."
    else:
        verdict = "transport: the scenario expects RDMA: the sweep's proof and the NIC witness are gates."
    out = ["## KV transport", "",
           f"Scenario policy `{policy}`; the engines used **{summary.transport or 'unknown'}** (their start-up "
           f"lines in the servers' logs); the sweep's proof: {proof_text}; RDMA devices on the nodes: {found}. "
           + verdict, ""]
    out += [f"- {line}" for line in evidence.servers.values()]
    out += [f"- RDMA devices, {line}" for line in devices.evidence]
    return out + [""]


def witness_section(summary: Summary) -> list[str]:
    rows = [r for r in summary.served_rows() if r.nic_nodes is not None]
    if not rows:
        return []
    if tcp_without_rdma(summary, summary.scenario.transport):
        return ["## NIC witness", "", f"{NOT_APPLICABLE}: the engines used TCP, which RDMA port counters do not "
                "count, on nodes the sweep found without RDMA devices.", ""]
    headers = ["Prompt Length", "Node", "Counter", "Moved (GB)", "Share of KV (%)", "Average rate (GB/s)", "Problem"]
    table = []
    for r in rows:
        nodes = r.nic_nodes or {}
        if not nodes:
            table.append([str(r.prompt_len), "—", "—", "—", "—", "—", r.nic_problem or ""])
        for role, n in nodes.items():
            moved = None if n.bytes is None else n.bytes / GB
            table.append([str(r.prompt_len), role, n.counter or "", _f(moved, 2), _f(n.kv_share_pct, 1),
                          _f(n.rate_GB_s, 2), n.problem or ""])
    w = summary.witness or Witness()
    return ["## NIC witness: what the RDMA ports counted", "",
            "Bytes the active ports moved in the KV's direction between the readings before and after each "
            "length, against KV = prompt length x KV bytes per token x completed requests; below "
            f"{_f(w.min_kv_share_pct, 0)} % fails. Allowance above KV: "
            f"{_f((w.header_fraction or 0) * 100, 0)} % headers, "
            f"{_f((w.control_bytes_per_request or 0) / MiB, 0)} MiB of control per request, plus the "
            "warm-up and failed requests' KV.", "", _table(headers, table), ""]


def _method(summary: Summary) -> str:
    formulas = "bandwidth = KV size / transfer time"
    if no_fabric(summary):
        formulas += " (no utilization: the KV stayed inside one box, over TCP, where no line rate applies)"
    elif summary.line_rate_GB_s:
        formulas += "; utilization = bandwidth / line rate"
    if summary_engine(summary) is not None:
        return ("TTFT is the bench client's mean; transfer time is the median per request from the prefill "
                f"server's log (warm-up left out); {formulas}; transfer share = transfer time / mean TTFT.")
    return f"Transfer time is the median of the timed transfers; {formulas}."


def render_report(data: Summary | Mapping[str, Any]) -> str:
    summary = as_summary(data)
    scenario = summary.scenario
    # The placement that ran, where the run's records say it; else the scenario's own title.
    title = placement_title(summary) or scenario.title or scenario.name or "run"
    title = " ".join(title.split())  # one line, whatever a record's name holds
    parts = [f"# KV transfer report: {title}", ""]
    meta = [f"Scenario `{scenario.name or '?'}`", f"source: {summary.source}"]
    if summary.transport and summary.transport != "unknown":
        meta.append(f"transport: {summary.transport}")
    if no_fabric(summary):
        meta.append("no fabric (TCP inside one box, no RDMA device), so no line rate")
    elif summary.line_rate_GB_s:
        meta.append(f"line rate: {summary.line_rate_GB_s:g} GB/s")
    parts += [", ".join(meta) + ".", "", "## Headline", "", *headline_lines(summary), "",
              "## Measured", "", measured_table(summary), "", _method(summary), ""]
    ref = reference_table(summary)
    if ref:
        parts += ["## Against the published run", "", ref, ""]
    parts += phases_section(summary)
    parts += metrics_section(summary)
    parts += ceiling_section(summary)
    parts += transport_section(summary)
    parts += witness_section(summary)
    parts += rails_section(summary)
    parts += port_baseline_section(summary)
    parts += ["## Issues", "", *issues_section(summary), ""]
    parts += provenance_section(summary)
    engine = summary_engine(summary)
    logged = (f" {engine.label}'s logs print `GB/s` and `MB` but mean GiB/s and MiB, and their `transfer_total` is "
              "rank 0's share only; the analysis converts them." if engine is not None else "")
    parts += ["## Units", "",
              "KV size and bandwidth are decimal (1 GB = 10^9 bytes), as in the published table." + logged
              + " Times are milliseconds.", ""]
    return "\n".join(parts)
