"""The smoke's own section of report.md: both ways (and NIXL's, when asked for) side by side per size,
the spread, the stalls, the verdicts and the transport proof; the shared report lacks all of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.figures import against
from ..core.units import GB
from ..rundir.summarymodel import Summary
from .ways import MOONCAKE, NIXL, SOCKET, Figures, all_verified, as_smoke, asked_nixl, ways_of

SMOKE_NOTE = (
    "This is a smoke run, not a benchmark of SGLang: each \"request\" below is one KV-sized transfer "
    "through the Mooncake Transfer Engine, timed in the decode container (median of the timed transfers). "
    "There is no TTFT, and a container bridge has no line rate. The socket copy moves the same bytes "
    "between the same containers; the last section shows both side by side, with the spread of every size."
)


def _ms(f: Figures | None) -> str:
    return "—" if f is None else f"{f.ms_min:.2f} / {f.ms_median:.2f} / {f.ms_max:.2f}"


def _gbs(value: float | None) -> str:
    return "—" if not value else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def smoke_section(data: Summary | Mapping[str, Any]) -> str:
    """What the shared report lacks for the smoke: the socket comparison, the spread, the stalls, the verdicts."""
    from tabulate import tabulate

    summary = as_smoke(data)
    s = summary.smoke or {}
    rows = summary.rows
    with_nixl = asked_nixl(summary)
    lines = ["## Smoke: Mooncake against a plain socket copy" + (", with NIXL beside them" if with_nixl else ""), "",
             ("All three" if with_nixl else "Both")
             + " move the same KV-sized bytes between the same two containers in the same run, taking turns; "
             "every transfer is checked (BLAKE2b of the received bytes against the prefill side's pattern). "
             "Times in ms as min / median / max of the timed transfers (warm-up left out); bandwidth of the "
             "median in decimal GB/s.", ""]
    headers = ["Prompt Length", "KV (MB)", "Mooncake ms (min/med/max)", "Mooncake GB/s",
               "Socket ms (min/med/max)", "Socket GB/s", "Mooncake / socket", "Verified"]
    table = [[str(r.prompt_len), f"{(r.kv_bytes or 0) / 1e6:.2f}", _ms(MOONCAKE.figures(r)), _gbs(r.bandwidth_GB_s),
              _ms(SOCKET.figures(r)), _gbs(r.socket_bandwidth_GB_s), _ratio(r.mooncake_vs_socket),
              "yes" if all_verified(r) else "NO"]
             for r in rows]
    if with_nixl:
        # Beside Mooncake's columns, only in a run that asked for NIXL: an arm not asked for is absent.
        headers[4:4] = ["NIXL ms (min/med/max)", "NIXL GB/s"]
        for cells, r in zip(table, rows):
            cells[4:4] = [_ms(NIXL.figures(r)), _gbs(r.nixl_bandwidth_GB_s)]
    if any(r.mooncake_stall for r in rows):
        # Only when a size stalled: a column of dashes says nothing (the Stalls line below says "none").
        headers.insert(-1, "Mooncake stalled")
        for cells, r in zip(table, rows):
            st = r.mooncake_stall
            cells.insert(-1, f"{st.stalled}/{st.of}" if st else "—")
    lines.append(tabulate(table, headers=headers, tablefmt="github", disable_numparse=True,
                          colalign=("right",) * len(headers)))
    lines.append("")
    if "transfers_verified" in s:
        lines.append(f"- Transfers verified: **{s['transfers_verified']} of {s['transfers_checked']}** "
                     "(every way, every size, warm-ups included).")
    ratio = s.get("mooncake_vs_socket_at_largest")
    if ratio is not None:
        where = " and ".join(map(str, s["ratio_prompt_lens"]))
        mark = "meets" if ratio >= s["ratio_target"] else "is BELOW"
        lines.append(f"- Mooncake / socket at {where} tokens (pooled): **{against(ratio, '>=', s['ratio_target'])}**, "
                     f"{mark} its target (>= {s['ratio_target']:.2f}).")
    below = s.get("below_target_prompt_lens")
    if below is not None:
        lines.append(f"- Sizes of 1 MB and more below {s['ratio_target']:.2f} of the socket: "
                     + (", ".join(map(str, below)) + " tokens" if below else "none") + ".")
    ways = ways_of(summary)
    stalled = [(r, way, f.stall) for r in rows for way in ways
               if (f := way.figures(r)) is not None and f.stall is not None]
    if stalled:
        lines.append("- Stalls (a size whose transfers split into a fast and a much slower group; the median "
                     "then says little):")
        for r, way, st in stalled:
            lines.append(f"  - {r.prompt_len} tokens, {way.short}: {st.stalled} of {st.of} took "
                         f"{st.slow_ms_median:.1f} ms, the rest {st.fast_ms_median:.2f} ms "
                         f"(+{st.extra_ms:.0f} ms); likely {st.likely_cause}.")
    else:
        lines.append("- Stalls: none (every size's transfers form one group).")
    lines.append(f"- Transport: **{summary.transport}** (requested: {s.get('requested_transport')}; "
                 f"HCAs the engine found: {s.get('hcas_found')}); TCP_NODELAY forced (--tcp-nodelay): "
                 f"{'yes' if s.get('tcp_nodelay') else 'no'}; delayed ACKs off (--quickack): "
                 f"{'yes' if s.get('quickack') else 'no'}.")
    lines += nixl_lines(s.get("nixl"))
    peak = s.get("memory_peak_bytes")
    if peak is not None:
        verdict = "fits" if s.get("fits_8GB_laptop") else "does NOT fit"
        lines.append(f"- Peak memory of the two containers together: {peak / GB:.2f} GB; {verdict} an 8 GB laptop.")
    lines += ["- Engine lines the transport was read from:", ""]
    lines += [f"      {x}" for x in s.get("transport_evidence", [])] or ["      (none)"]
    lines.append("")
    return "\n".join(lines)


def nixl_lines(nx: dict | None) -> list[str]:
    """NIXL's set-up and transport proof, as bullet lines; none when the run did not ask for NIXL."""
    if nx is None:
        return []
    out = [f"- NIXL: UCX restricted to TCP (UCX_TLS={nx['ucx_tls']}), {nx['memory']} on both sides; transports "
           f"UCX used: decode side **{nx.get('transport')}** {nx.get('transports')}, prefill side "
           f"**{nx.get('target_transport')}** {nx.get('target_transports')}."]
    setup = nx.get("setup")
    if setup:
        out.append(f"- NIXL connection set-up, apart from the rows: loading the prefill agent's metadata took "
                   f"{setup['metadata_load_s'] * 1000:.1f} ms; the first transfer "
                   f"({setup['first_transfer_bytes'] / 1e6:.1f} MB, UCX's connection set-up included) took "
                   f"**{setup['first_transfer_s']:.2f} s** "
                   f"({'verified' if setup['first_transfer_verified'] else 'WRONG BYTES'}). The rows' NIXL figures "
                   "are later transfers over the open connection.")
    else:
        out.append("- NIXL connection set-up: not reached (see the issues and logs/).")
    out += ["- UCX lane lines the NIXL transport was read from:", ""]
    out += [f"      {x}" for x in nx.get("evidence", [])] or ["      (none)"]
    out.append("")
    return out
