"""Plots of a summary (read as its model, summarymodel.Summary), like the published ones (matplotlib, Agg backend:
no display needed)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..core.safewrite import write_file  # noqa: E402
from ..core.units import GB  # noqa: E402
from ..rundir.summarymodel import Row, Summary, as_summary  # noqa: E402
from ..scenario.seams import summary_backend
from .placement import no_fabric  # noqa: E402

# Drawn as a guide, not judged: field acceptance tests pass a fabric at about
# this share of its line rate (the scenario's thresholds do the judging).
FIELD_ACCEPTANCE_SHARE = 0.9


def _title(summary: Summary) -> str:
    name = summary.scenario.name
    return f"({name})" if name else ""


def _line_rate(summary: Summary) -> float | None:
    """The line rate to draw against: none where the KV stayed inside one box over TCP."""
    return None if no_fabric(summary) else summary.line_rate_GB_s


def finish(fig, ax, title: str, path: Path) -> None:
    """Every plot ends the same way: titled, laid out, written, closed. The PNG is made in memory and written
    by the safe writer: savefig given the path would open it itself and follow a link planted there."""
    ax.set_title(title, fontsize=10)
    write_file(path, png(fig), "the report")


def png(fig) -> bytes:
    """The figure as PNG bytes, laid out and closed: every plot of the bundle is made in memory like this."""
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _bandwidth(summary: Summary, path: Path) -> Path | None:
    measured = [(r.prompt_len, r.bandwidth_GB_s) for r in summary.rows if r.bandwidth_GB_s is not None]
    if not measured:
        return None
    lengths = [L for L, _ in measured]
    bw = [b for _, b in measured]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot(lengths, bw, marker="o", label="measured", zorder=3)
    ref = summary.scenario.reference.rows if summary.scenario.reference else []
    if ref:
        published = [(r.prompt_len, r.bandwidth_GB_s) for r in ref if r.bandwidth_GB_s is not None]
        ax.plot([L for L, _ in published], [b for _, b in published], marker="s", linestyle="--",
                color="gray", label="published")
    line_rate = _line_rate(summary)
    engine = [(int(L), c.engine_GB_s) for L, c in (summary.engine_ceiling or {}).items()
              if c.engine_GB_s is not None and L.isdigit()]
    if engine:
        ax.plot([L for L, _ in sorted(engine)], [g for _, g in sorted(engine)], marker="^", linestyle="--",
                color="purple", label=f"{summary_backend(summary).label} engine alone, same box")
    if line_rate:
        ax.axhline(line_rate, color="red", linestyle=":", label=f"line rate {line_rate:g} GB/s")
        ax.axhline(FIELD_ACCEPTANCE_SHARE * line_rate, color="orange", linestyle=":",
                   label=f"{FIELD_ACCEPTANCE_SHARE * 100:.0f} % of line rate")
    if summary.baseline_GB_s:
        # The smoke's baseline is its socket copy at the largest size, no ceiling of anything.
        name = "measured ceiling" if summary.has_fabric else "socket copy, largest size"
        ax.axhline(summary.baseline_GB_s, color="green", linestyle="-.",
                   label=f"{name} {summary.baseline_GB_s:.2f} GB/s")
    for x, y in zip(lengths, bw):  # two decimals, as the report's tables
        ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(x) for x in lengths], rotation=45)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("KV transfer bandwidth (GB/s, decimal)")
    if line_rate:
        rate: Any = line_rate  # the axis hands arrays to these conversions
        right = ax.secondary_yaxis("right", functions=(lambda v: v / rate * 100, lambda p: p * rate / 100))
        right.set_ylabel("utilization of line rate (%)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    finish(fig, ax, f"KV transfer bandwidth vs prompt length {_title(summary)}", path)
    return path


def _ttft_split(summary: Summary, path: Path) -> Path | None:
    rows: list[tuple[Row, float, float]] = [(r, r.ttft_ms_mean, r.transfer_ms_median) for r in summary.rows
                                            if r.ttft_ms_mean is not None and r.transfer_ms_median is not None]
    if not rows:
        return None
    labels = [str(r.prompt_len) for r, _, _ in rows]
    transfer = [t for _, _, t in rows]
    rest = [max(ttft - t, 0.0) for _, ttft, t in rows]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.bar(labels, rest, label="rest of TTFT (prefill compute, queueing, first decode step)", color="#9ecae1")
    ax.bar(labels, transfer, bottom=rest, label="KV transfer (median)", color="#e6550d")
    for i, (r, ttft, _) in enumerate(rows):
        share = r.transfer_share_of_ttft_pct
        if share is not None:
            ax.annotate(f"{share:.1f} %", (i, ttft), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=8)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("mean TTFT (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    finish(fig, ax, f"TTFT split: KV transfer vs the rest {_title(summary)}", path)
    return path


def _transfer_vs_size(summary: Summary, path: Path) -> Path | None:
    rows = [(r.prompt_len, r.kv_bytes / GB, r.transfer_ms_median) for r in summary.rows
            if r.transfer_ms_median is not None and r.kv_bytes is not None]
    if not rows:
        return None
    size = [s for _, s, _ in rows]
    ms = [t for _, _, t in rows]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot(size, ms, marker="o", label="measured (median)")
    line_rate = _line_rate(summary)
    if line_rate:
        ax.plot(size, [s / line_rate * 1000 for s in size], linestyle=":", color="red",
                label=f"at line rate {line_rate:g} GB/s")
    for x, y, (L, _, _) in zip(size, ms, rows):
        ax.annotate(str(L), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("KV size per request (GB, decimal)")
    ax.set_ylabel("transfer time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    finish(fig, ax, f"KV transfer time vs KV size {_title(summary)}", path)
    return path


def render_plots(data: Summary | Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Write the plots the summary has data for; returns their paths."""
    summary = as_summary(data)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = [
        _bandwidth(summary, out_dir / "bandwidth.png"),
        _ttft_split(summary, out_dir / "ttft-split.png"),
        _transfer_vs_size(summary, out_dir / "transfer-vs-size.png"),
    ]
    return [p for p in made if p is not None]
