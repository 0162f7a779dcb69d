"""The smoke's figures: Mooncake, NIXL (when the run asked for it) and the socket copy side by side per size.

``bandwidth.png``: for each size, Mooncake's and the socket's median bandwidth
next to each other, the bar from the slowest to the fastest timed transfer,
on a linear axis that ends just above the fastest transfer measured (a
container bridge has no line rate to scale to). ``transfers.png``: every
timed transfer's time, so a size split into fast and stalled transfers shows
as two clusters. matplotlib with the Agg backend: no display needed.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..core.figures import against  # noqa: E402
from ..core.safewrite import write_file  # noqa: E402
from ..core.units import GB  # noqa: E402
from ..rundir.summarymodel import SmokeRow, Summary  # noqa: E402
from .ways import WAYS, Figures, Way, as_smoke, ways_of  # noqa: E402

SLOT = 0.72     # the share of a size's slot on the x axis that its bars fill
HEADROOM = 1.25  # the bandwidth axis's top over the fastest transfer


def _x(i: int, k: int, count: int) -> float:
    """Where way k of count sits in size i's slot."""
    return i + (k - (count - 1) / 2) * SLOT / count


def _gbs(nbytes: int, ms: float) -> float:
    return nbytes / (ms / 1000) / GB


def _labels(rows: list[SmokeRow]) -> list[str]:
    return [f"{r.prompt_len}\n{(r.kv_bytes or 0) / 1e6:.1f} MB" for r in rows]


def _of(way: Way, r: SmokeRow) -> Figures:
    f = way.figures(r)
    assert f is not None, "render_smoke_plots keeps only the rows every way measured"
    return f


def axis_top(rows: list[SmokeRow], ways: tuple[Way, ...] = WAYS) -> float:
    """The bandwidth axis ends a little above the fastest transfer of any way (room for the one-row
    legend): scaled to the data."""
    fastest = max((_gbs(r.kv_bytes or 0, _of(way, r).ms_min) for r in rows for way in ways), default=0.0)
    return fastest * HEADROOM if fastest > 0 else 1.0


def _bandwidth(summary: Summary, rows: list[SmokeRow], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(9, 5))
    ways = ways_of(summary)
    for k, way in enumerate(ways):
        x = [_x(i, k, len(ways)) for i in range(len(rows))]
        figs = [_of(way, r) for r in rows]
        med = [_gbs(r.kv_bytes or 0, f.ms_median) for r, f in zip(rows, figs)]
        lo = [_gbs(r.kv_bytes or 0, f.ms_max) for r, f in zip(rows, figs)]    # the slowest transfer
        hi = [_gbs(r.kv_bytes or 0, f.ms_min) for r, f in zip(rows, figs)]    # the fastest
        ax.bar(x, med, width=SLOT / len(ways) * 0.9, color=way.color, alpha=0.85, label=f"{way.name} (median)")
        ax.errorbar(x, med, yerr=[[m - a for m, a in zip(med, lo)], [b - m for m, b in zip(med, hi)]],
                    fmt="none", ecolor="black", elinewidth=1, capsize=3)
        for xi, f, top in zip(x, figs, hi):
            if f.stall:
                ax.annotate(f"{f.stall.stalled}/{f.stall.of}\nstalled", (xi, top), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7, color="red")
    ax.set_xticks(range(len(rows)), _labels(rows), fontsize=8)
    ax.set_xlabel("prompt length (tokens) and KV bytes per transfer")
    ax.set_ylabel("bandwidth (GB/s, decimal)")
    ax.set_ylim(0, axis_top(rows, ways))
    ax.grid(True, axis="y", alpha=0.3)
    ax.errorbar([], [], yerr=[], fmt="none", ecolor="black", label="slowest to fastest timed transfer")
    ax.legend(loc="upper center", ncol=3, fontsize=8)
    s = summary.smoke or {}
    ratio = s.get("mooncake_vs_socket_at_largest")
    extra = (f"; Mooncake/socket at the largest sizes {against(ratio, '>=', s.get('ratio_target'))}"
             if ratio is not None else "")
    nodelay = (", TCP_NODELAY forced" if s.get("tcp_nodelay") else "") + (", delayed ACKs off" if s.get("quickack") else "")
    versus = " and NIXL" if len(ways) > 2 else ""
    ax.set_title(f"Smoke: Mooncake{versus} vs a socket copy, same bytes, same containers ({summary.transport}"
                 f"{nodelay}){extra}", fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def _save(fig, path: Path) -> None:
    """The figure as a PNG through the safe writer (savefig itself opens the path and follows a link there)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_file(path, buf.getvalue(), "smoke")


def _transfers(summary: Summary, rows: list[SmokeRow], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(9, 5))
    ways = ways_of(summary)
    for k, way in enumerate(ways):
        xs, ys = [], []
        for i, r in enumerate(rows):
            for ms in _of(way, r).ms_all:
                xs.append(_x(i, k, len(ways)))
                ys.append(ms)
        ax.scatter(xs, ys, s=18, color=way.color, alpha=0.8, label=f"{way.name}: each timed transfer")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), _labels(rows), fontsize=8)
    ax.set_xlabel("prompt length (tokens) and KV bytes per transfer")
    ax.set_ylabel("transfer time (ms, log)")
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("Smoke: every timed transfer (a size split into two clusters stalled)", fontsize=9)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def render_smoke_plots(data: Summary | Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Both figures, for the rows that have every way measured; returns their paths."""
    summary = as_smoke(data)
    rows = [r for r in summary.rows if r.kv_bytes and all(way.figures(r) is not None for way in ways_of(summary))]
    if not rows:
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_bandwidth(summary, rows, out_dir / "bandwidth.png"), _transfers(summary, rows, out_dir / "transfers.png")]
