"""What ``pdrepro smoke`` prints at the end: per size both ways with their spread, the stalls and
why, how many transfers were verified, and where the report is."""

from __future__ import annotations

from ..core.figures import against
from ..core.units import GB
from ..rundir import RunDir
from .ways import MOONCAKE, NIXL, SOCKET, all_verified, as_smoke


def say(msg: str) -> None:
    print(f"smoke: {msg}", flush=True)


def _gbs(nbytes: int, ms: float) -> float:
    return nbytes / (ms / 1000) / GB


def print_result(summary: dict, run: RunDir, seconds: float) -> None:
    s = summary["smoke"]
    say(f"transport used: {summary['transport']} (requested {s['requested_transport']})"
        + ("; TCP_NODELAY forced on (--tcp-nodelay)" if s.get("tcp_nodelay") else "")
        + ("; delayed ACKs off (--quickack)" if s.get("quickack") else ""))
    say("GB/s of the median transfer [slowest-fastest transfer]:")
    model = as_smoke(summary)
    for r in model.rows:
        n = r.kv_bytes or 0
        spans = [f"{way.short} {f.bandwidth_GB_s or 0:6.2f} [{_gbs(n, f.ms_max):.2f}-{_gbs(n, f.ms_min):.2f}]"
                 for way in (MOONCAKE, SOCKET, NIXL) if (f := way.figures(r)) is not None and n]
        st = r.mooncake_stall
        say(f"{r.prompt_len:>6} tokens {n / 1e6:9.2f} MB: " + ", ".join(spans)
            + (f", ratio {against(r.mooncake_vs_socket, '>=', s['ratio_target'])}" if r.mooncake_vs_socket is not None
               else "")
            + f", verified {'yes' if all_verified(r) else 'NO'}"
            + (f"  STALLED {st.stalled}/{st.of}" if st else ""))
    for i in summary["issues"]:
        if i["kind"] == "stall":
            say(f"stall: {i['message']}")
    ratio = s["mooncake_vs_socket_at_largest"]
    if ratio is not None:
        mark = "meets" if ratio >= s["ratio_target"] else "is below"
        where = " and ".join(map(str, s["ratio_prompt_lens"]))
        say(f"Mooncake / socket at {where} tokens (pooled): {against(ratio, '>=', s['ratio_target'])} ({mark} the "
            f"{s['ratio_target']:.2f} target)")
    below = s.get("below_target_prompt_lens") or []
    if below:
        say(f"sizes of 1 MB and more below {s['ratio_target']:.2f} of the socket: {', '.join(map(str, below))} tokens")
    setup = (s.get("nixl") or {}).get("setup")
    if s.get("nixl"):
        say(f"NIXL transports UCX used: {s['nixl']['transport']} {s['nixl']['transports']} (UCX_TLS=tcp, host memory)"
            + (f"; first transfer, connection set-up included: {setup['first_transfer_s']:.2f} s" if setup else ""))
    if s["memory_peak_bytes"] is not None:
        say(f"peak memory of the stack: {s['memory_peak_bytes'] / GB:.2f} GB "
            f"({'fits' if s['fits_8GB_laptop'] else 'does NOT fit'} an 8 GB laptop)")
    say(f"verified {s['transfers_verified']} of {s['transfers_checked']} transfers byte for byte (every way, "
        f"warm-ups included): {'all good' if s['all_verified'] else 'MISMATCH'}; took {seconds:.0f} s")
    say(f"report: {run.report_file}  (also {run.root.parent / 'latest'}/report.md)")
