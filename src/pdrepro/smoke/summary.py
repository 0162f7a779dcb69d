"""The smoke's agent output turned into the shared summary contract.

The rows carry the same keys as a real benchmark run (TTFT left null: the
smoke has none) plus the socket copy measured in the same run, each way's
min / median / max and its stalls (``spread``); the socket figure at the
largest size also becomes ``baseline_GB_s``, the measured ceiling the shared
report already knows how to show. A container bridge has no line rate, so the
summary states none (the scenario's nominal NIC rate describes no link here).
"""

from __future__ import annotations

from ..core.units import GB, MB, bandwidth_GB_s
from ..rundir.contract import ERROR, SUMMARY_SCHEMA_VERSION, WARNING, headline, issue, result_row
from ..rundir.issuekind import IssueKind
from ..rundir.summarymodel import build as summary_model
from .spread import spread, stall

# Mooncake over TCP and a plain socket copy ride the same kernel TCP stack
# between the same containers, so at the largest sizes Mooncake should move the
# bytes about as fast; far below that points at the engine's settings (block
# size, connection pool) or a loaded host. 0.90 leaves room for run-to-run noise
# (1.00-1.06 measured on the 2-core build host, see docs/guide/smoke.md).
RATIO_TARGET = 0.90
# The per-size goal applies from here up: below it fixed per-transfer costs dominate both ways.
PER_SIZE_FROM_BYTES = 1 * MB
LAPTOP_BYTES = 8 * GB


def _bw(nbytes: int, ms: float | None) -> float | None:
    return None if not ms else bandwidth_GB_s(nbytes, ms / 1000)


def build_rows(initiator: dict, nagle_ruled_out: bool = False) -> list[dict]:
    planned = (initiator.get("plan") or {}).get("repeats")
    rows = []
    for r in initiator.get("rows", []):
        n, mc, sk = r["kv_bytes"], r["mooncake"], r["socket"]
        bw = _bw(n, mc["ms_median"])
        sock_bw = _bw(n, sk["ms_median"])
        mc_ms, sk_ms = spread(mc["ms"]), spread(sk["ms"])
        # The smoke has no TTFT and no request errors: those figures stay null.
        rows.append(result_row(
            r["prompt_len"], n, line_rate_GB_s=None, expected_requests=planned,
            requests=len(mc["ms"]), transfer_samples=len(mc["ms"]),
            transfer_ms_median=mc["ms_median"], transfer_ms_mean=mc["ms_mean"],
            transfer_ms_all=mc["ms"],
            verified=bool(mc["verified"]),
            failed_checks=mc["failed_checks"],
            socket_ms_median=sk["ms_median"],
            socket_ms_all=sk["ms"],
            socket_bandwidth_GB_s=sock_bw,
            socket_verified=bool(sk["verified"]),
            mooncake_vs_socket=bw / sock_bw if bw and sock_bw else None,
            transfer_ms_min=mc_ms["min"], transfer_ms_max=mc_ms["max"],
            socket_ms_min=sk_ms["min"], socket_ms_max=sk_ms["max"],
            # Every transfer is checked, the warm-up too; failed_checks counts any of them.
            checked_transfers=len(mc["ms"]) + 1 + len(sk["ms"]) + 1,
            failed_transfers=mc["failed_checks"] + sk["failed_checks"],
            mooncake_stall=stall(mc["ms"], nagle_ruled_out),
            socket_stall=stall(sk["ms"], nagle_ruled_out),
        ))
    return rows


def largest_rows(rows: list[dict], count: int = 2) -> list[dict]:
    """The largest sizes, ascending: where per-transfer overheads matter least."""
    return sorted(rows, key=lambda r: r["kv_bytes"])[-count:]


def ratio_of(rows: list[dict]) -> float | None:
    """Mooncake / socket over the given rows: both ways' time for the same bytes, pooled,
    so one noisy size does not decide the verdict."""
    mc = sum(r["transfer_ms_median"] for r in rows)
    sk = sum(r["socket_ms_median"] for r in rows)
    return sk / mc if rows and mc > 0 else None


def memory_peak_bytes(initiator: dict) -> int | None:
    """Both containers' peaks added: what the stack needs at once, at most."""
    parts = [(initiator.get(k) or {}).get("bytes") for k in ("memory_peak", "target_memory_peak")]
    sizes = [p for p in parts if isinstance(p, int)]
    return sum(sizes) if len(sizes) == len(parts) else None


def stall_issues(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        for way, key in (("Mooncake", "mooncake_stall"), ("socket", "socket_stall")):
            st = r.get(key)
            if st:
                out.append(issue(WARNING, IssueKind.STALL,
                                 f"{st['stalled']} of {st['of']} {way} transfers at {r['prompt_len']} tokens took "
                                 f"{st['slow_ms_median']:.1f} ms against {st['fast_ms_median']:.2f} ms for the rest "
                                 f"(+{st['extra_ms']:.0f} ms); likely {st['likely_cause']}", r["prompt_len"]))
    return out


def below_per_size(rows: list[dict]) -> list[int]:
    """Prompt lengths of at least PER_SIZE_FROM_BYTES where Mooncake's median is below the target share of the socket's."""
    return [r["prompt_len"] for r in rows if r["kv_bytes"] >= PER_SIZE_FROM_BYTES
            and r["mooncake_vs_socket"] is not None and r["mooncake_vs_socket"] < RATIO_TARGET]


def build_summary(scenario, initiator: dict, provenance: dict) -> dict:
    nodelay, quickack = bool(provenance.get("tcp_nodelay")), bool(provenance.get("quickack"))
    rows = build_rows(initiator, nodelay or quickack)
    issues: list[dict] = []
    transport = (initiator.get("evidence") or {}).get("transport")
    if initiator.get("error"):
        issues.append(issue(ERROR, IssueKind.SMOKE_FAILED, initiator["error"]))
    planned = {r["prompt_len"] for r in (initiator.get("plan") or {}).get("rows", [])}
    for L in sorted(planned - {r["prompt_len"] for r in rows}):
        issues.append(issue(ERROR, IssueKind.MISSING_LENGTH, f"no transfer measured at {L} tokens; see logs/", L))
    for r in rows:
        if not r["verified"]:
            issues.append(issue(ERROR, IssueKind.CHECKSUM_MISMATCH,
                                f"{r['failed_checks']} Mooncake transfer(s) delivered bytes that differ from the "
                                "prefill side's; the transfer engine or the link corrupts data", r["prompt_len"]))
        if not r["socket_verified"]:
            issues.append(issue(ERROR, IssueKind.SOCKET_CHECKSUM_MISMATCH, "the socket copy delivered wrong bytes",
                                r["prompt_len"]))
    top = largest_rows(rows)
    ratio = ratio_of(top)
    where = " and ".join(str(r["prompt_len"]) for r in top)
    if ratio is not None and ratio < RATIO_TARGET:
        issues.append(issue(WARNING, IssueKind.BELOW_SOCKET,
                            f"Mooncake reached {ratio:.2f} of the socket copy at {where} tokens "
                            f"(target {RATIO_TARGET:.2f}); a loaded host or a small block size lowers it",
                            top[-1]["prompt_len"]))
    issues += stall_issues(rows)
    peak = memory_peak_bytes(initiator)
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "scenario": scenario.to_dict(),
        "scenario_fingerprint": scenario.fingerprint,
        "source": "smoke",
        "transport": transport,
        "line_rate_GB_s": None,
        "rows": rows,
        "headline": headline(rows),
        "issues": issues,
        "provenance": provenance,
        "smoke": {
            "requested_transport": initiator.get("requested_transport"),
            "transport_evidence": (initiator.get("evidence") or {}).get("lines", []),
            "hcas_found": (initiator.get("evidence") or {}).get("hcas_found"),
            "block_bytes": (initiator.get("plan") or {}).get("block_bytes"),
            "repeats": (initiator.get("plan") or {}).get("repeats"),
            "wait": initiator.get("wait"),
            "all_verified": bool(rows) and all(r["verified"] and r["socket_verified"] for r in rows),
            "transfers_checked": sum(r["checked_transfers"] for r in rows),
            "transfers_verified": sum(r["checked_transfers"] - r["failed_transfers"] for r in rows),
            "tcp_nodelay": nodelay,
            "quickack": quickack,
            "stalled_prompt_lens": [r["prompt_len"] for r in rows if r["mooncake_stall"]],
            "below_target_prompt_lens": below_per_size(rows),
            "ratio_target": RATIO_TARGET,
            "mooncake_vs_socket_at_largest": ratio,
            "ratio_prompt_lens": [r["prompt_len"] for r in top],
            "memory_peak_bytes": peak,
            "fits_8GB_laptop": peak < LAPTOP_BYTES if peak is not None else None,
        },
    }
    if top and top[-1]["socket_bandwidth_GB_s"]:
        summary["baseline_GB_s"] = top[-1]["socket_bandwidth_GB_s"]
    return summary_model(summary)


SMOKE_NOTE = (
    "This is a smoke run, not a benchmark of SGLang: each \"request\" below is one KV-sized transfer "
    "through the Mooncake Transfer Engine, timed in the decode container (median of the timed transfers). "
    "There is no TTFT, and a container bridge has no line rate. The socket copy moves the same bytes "
    "between the same containers; the last section shows both side by side, with the spread of every size."
)


def _ms(r: dict, prefix: str) -> str:
    return f"{r[prefix + '_min']:.2f} / {r[prefix + '_median']:.2f} / {r[prefix + '_max']:.2f}"


def smoke_section(summary: dict) -> str:
    """What the shared report lacks for the smoke: the socket comparison, the spread, the stalls, the verdicts."""
    from tabulate import tabulate

    s = summary.get("smoke") or {}
    rows = summary.get("rows", [])
    lines = ["## Smoke: Mooncake against a plain socket copy", "",
             "Both move the same KV-sized bytes between the same two containers in the same run, taking turns; "
             "every transfer is checked (BLAKE2b of the received bytes against the prefill side's pattern). "
             "Times in ms as min / median / max of the timed transfers (warm-up left out); bandwidth of the "
             "median in decimal GB/s.", ""]
    headers = ["Prompt Length", "KV (MB)", "Mooncake ms (min/med/max)", "Mooncake GB/s",
               "Socket ms (min/med/max)", "Socket GB/s", "Mooncake / socket", "Verified"]
    table = [[str(r["prompt_len"]), f"{r['kv_bytes'] / 1e6:.2f}", _ms(r, "transfer_ms"), f"{r['bandwidth_GB_s']:.2f}",
              _ms(r, "socket_ms"), f"{r['socket_bandwidth_GB_s']:.2f}", f"{r['mooncake_vs_socket']:.2f}",
              "yes" if r["verified"] and r["socket_verified"] else "NO"]
             for r in rows]
    if any(r.get("mooncake_stall") for r in rows):
        # Only when a size stalled: a column of dashes says nothing (the Stalls line below says "none").
        headers.insert(-1, "Mooncake stalled")
        for cells, r in zip(table, rows):
            st = r.get("mooncake_stall")
            cells.insert(-1, f"{st['stalled']}/{st['of']}" if st else "—")
    lines.append(tabulate(table, headers=headers, tablefmt="github", disable_numparse=True,
                          colalign=("right",) * len(headers)))
    lines.append("")
    if "transfers_verified" in s:
        lines.append(f"- Transfers verified: **{s['transfers_verified']} of {s['transfers_checked']}** "
                     "(both ways, every size, warm-ups included).")
    ratio = s.get("mooncake_vs_socket_at_largest")
    if ratio is not None:
        where = " and ".join(map(str, s["ratio_prompt_lens"]))
        lines.append(f"- Mooncake / socket at {where} tokens (pooled): **{ratio:.2f}** "
                     f"(target >= {s['ratio_target']:.2f}).")
    below = s.get("below_target_prompt_lens")
    if below is not None:
        lines.append(f"- Sizes of 1 MB and more below {s['ratio_target']:.2f} of the socket: "
                     + (", ".join(map(str, below)) + " tokens" if below else "none") + ".")
    stalls = [r for r in rows if r.get("mooncake_stall") or r.get("socket_stall")]
    if stalls:
        lines.append("- Stalls (a size whose transfers split into a fast and a much slower group; the median "
                     "then says little):")
        for r in stalls:
            for way, key in (("Mooncake", "mooncake_stall"), ("socket", "socket_stall")):
                st = r.get(key)
                if st:
                    lines.append(f"  - {r['prompt_len']} tokens, {way}: {st['stalled']} of {st['of']} took "
                                 f"{st['slow_ms_median']:.1f} ms, the rest {st['fast_ms_median']:.2f} ms "
                                 f"(+{st['extra_ms']:.0f} ms); likely {st['likely_cause']}.")
    else:
        lines.append("- Stalls: none (every size's transfers form one group).")
    lines.append(f"- Transport: **{summary.get('transport')}** (requested: {s.get('requested_transport')}; "
                 f"HCAs the engine found: {s.get('hcas_found')}); TCP_NODELAY forced (--tcp-nodelay): "
                 f"{'yes' if s.get('tcp_nodelay') else 'no'}; delayed ACKs off (--quickack): "
                 f"{'yes' if s.get('quickack') else 'no'}.")
    peak = s.get("memory_peak_bytes")
    if peak is not None:
        verdict = "fits" if s.get("fits_8GB_laptop") else "does NOT fit"
        lines.append(f"- Peak memory of the two containers together: {peak / GB:.2f} GB; {verdict} an 8 GB laptop.")
    lines += ["- Engine lines the transport was read from:", ""]
    lines += [f"      {x}" for x in s.get("transport_evidence", [])] or ["      (none)"]
    lines.append("")
    return "\n".join(lines)
