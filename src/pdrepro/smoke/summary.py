"""The smoke's agent output turned into the shared summary contract.

The rows carry the same keys as a real benchmark run (TTFT left null: the
smoke has none) plus the socket copy measured in the same run, each way's
min / median / max and its stalls (``spread``); the socket figure at the
largest size also becomes ``baseline_GB_s``, the measured ceiling the shared
report already knows how to show. A container bridge has no line rate, so the
summary states none (the scenario's nominal NIC rate describes no link here).
"""

from __future__ import annotations

from ..core.figures import against
from ..core.units import GB, MB, bandwidth_GB_s
from ..rundir.contract import ERROR, SUMMARY_SCHEMA_VERSION, WARNING, headline, issue, result_row
from ..rundir.issuekind import IssueKind
from ..rundir.summarymodel import build as summary_model
from .spread import NAGLE, spread, stall

# Mooncake over TCP and a plain socket copy ride the same kernel TCP stack
# between the same containers, so at the largest sizes Mooncake should move the
# bytes about as fast; far below that points at the engine's settings (block
# size, connection pool) or a loaded host. 0.90 leaves room for run-to-run noise
# (1.00-1.06 measured on the 2-core build host, see docs/guide/smoke.md).
RATIO_TARGET = 0.90
# The per-size goal applies from here up: below it fixed per-transfer costs dominate both ways.
PER_SIZE_FROM_BYTES = 1 * MB
LAPTOP_BYTES = 8 * GB
NIXL_DELAYED_ACK = ("a wait the size of a delayed ACK (30-450 ms extra) on UCX's TCP connections; whether UCX's "
                    "sender met Nagle there was not measured (compare a run with --tcp-nodelay or --quickack)")
STALL_WAYS = (("Mooncake", "mooncake_stall"), ("NIXL", "nixl_stall"), ("socket", "socket_stall"))


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
        if "nixl" in r:
            _add_nixl(rows[-1], r["nixl"], sock_bw, nagle_ruled_out)
    return rows


def _add_nixl(row: dict, nx: dict, sock_bw: float | None, nagle_ruled_out: bool) -> None:
    """NIXL's figures beside Mooncake's in the same row: same bytes, same containers, taking turns.
    Only a run that asked for NIXL has these keys; a run that did not has none of them."""
    n = row["kv_bytes"]
    bw = _bw(n, nx["ms_median"])
    ms = spread(nx["ms"])
    row.update(nixl_ms_median=nx["ms_median"], nixl_ms_mean=nx["ms_mean"], nixl_ms_all=nx["ms"],
               nixl_ms_min=ms["min"], nixl_ms_max=ms["max"], nixl_bandwidth_GB_s=bw,
               nixl_verified=bool(nx["verified"]), nixl_failed_checks=nx["failed_checks"],
               nixl_vs_socket=bw / sock_bw if bw and sock_bw else None,
               nixl_stall=_nixl_stall(nx["ms"], nagle_ruled_out))
    row["checked_transfers"] += len(nx["ms"]) + 1
    row["failed_transfers"] += nx["failed_checks"]


def _nixl_stall(ms: list[float], nagle_ruled_out: bool) -> dict | None:
    """A NIXL stall, its cause worded for UCX's own TCP connections: the Nagle explanation names
    Mooncake's transport, which these transfers do not use."""
    st = stall(ms, nagle_ruled_out)
    if st is not None and st["likely_cause"] == NAGLE:
        st["likely_cause"] = NIXL_DELAYED_ACK
    return st


def _verified(r: dict) -> bool:
    return bool(r["verified"] and r["socket_verified"] and r.get("nixl_verified", True))


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
        for way, key in STALL_WAYS:
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
        if r.get("nixl_verified") is False:
            issues.append(issue(ERROR, IssueKind.CHECKSUM_MISMATCH,
                                f"{r['nixl_failed_checks']} NIXL transfer(s) delivered bytes that differ from the "
                                "prefill side's; NIXL/UCX or the link corrupts data", r["prompt_len"]))
        if not r["socket_verified"]:
            issues.append(issue(ERROR, IssueKind.SOCKET_CHECKSUM_MISMATCH, "the socket copy delivered wrong bytes",
                                r["prompt_len"]))
    top = largest_rows(rows)
    ratio = ratio_of(top)
    where = " and ".join(str(r["prompt_len"]) for r in top)
    if ratio is not None and ratio < RATIO_TARGET:
        issues.append(issue(WARNING, IssueKind.BELOW_SOCKET,
                            f"Mooncake reached {against(ratio, '>=', RATIO_TARGET)} of the socket copy at {where} "
                            f"tokens, below its target (>= {RATIO_TARGET:.2f}); a loaded host or a small block size "
                            "lowers it",
                            top[-1]["prompt_len"]))
    issues += stall_issues(rows)
    peak = memory_peak_bytes(initiator)
    nixl = nixl_findings(initiator)
    nixl_ok = nixl is None or bool(nixl["setup"] and nixl["setup"]["first_transfer_verified"])
    if nixl is not None and not rows and not initiator.get("error"):
        issues.append(issue(ERROR, IssueKind.SMOKE_FAILED, "NIXL was asked for but measured nothing; see logs/"))
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
            "backends": initiator.get("backends") or ["mooncake"],
            "all_verified": bool(rows) and all(_verified(r) for r in rows) and nixl_ok,
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
    if nixl is not None:
        summary["smoke"]["nixl"] = nixl
    if top and top[-1]["socket_bandwidth_GB_s"]:
        summary["baseline_GB_s"] = top[-1]["socket_bandwidth_GB_s"]
    return summary_model(summary)


def nixl_findings(initiator: dict) -> dict | None:
    """The NIXL arm's proof and set-up: which transports UCX used on each side (its lane lines), and the
    first transfer, which carries UCX's connection set-up and so is reported apart from the rows. None
    when the run did not ask for NIXL."""
    if "nixl" not in (initiator.get("backends") or []):
        return None
    mine, theirs = initiator.get("nixl_transport") or {}, initiator.get("target_nixl_transport") or {}
    return {"transport": mine.get("verdict"), "transports": mine.get("transports"),
            "target_transport": theirs.get("verdict"), "target_transports": theirs.get("transports"),
            "summary": mine.get("summary"), "target_summary": theirs.get("summary"),
            "evidence": mine.get("lines", []), "ucx_tls": "tcp", "memory": "DRAM (host)",
            "setup": initiator.get("nixl_setup")}
