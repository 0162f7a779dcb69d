"""Plots of a summary dict, like the published ones (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..core.units import GB  # noqa: E402

# Drawn as a guide, not judged: field acceptance tests pass a fabric at about
# this share of its line rate (the scenario's thresholds do the judging).
FIELD_ACCEPTANCE_SHARE = 0.9


def _rows(summary: dict, *keys: str) -> list[dict]:
    return [r for r in summary.get("rows", []) if all(r.get(k) is not None for k in keys)]


def _title(summary: dict) -> str:
    name = (summary.get("scenario") or {}).get("name")
    return f"({name})" if name else ""


def _finish(fig, ax, title: str, path: Path) -> None:
    """Every plot ends the same way: titled, laid out, written, closed."""
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bandwidth(summary: dict, path: Path) -> Path | None:
    rows = _rows(summary, "bandwidth_GB_s")
    if not rows:
        return None
    lengths = [r["prompt_len"] for r in rows]
    bw = [r["bandwidth_GB_s"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot(lengths, bw, marker="o", label="measured", zorder=3)
    ref = ((summary.get("scenario") or {}).get("reference") or {}).get("rows") or []
    if ref:
        ax.plot([r["prompt_len"] for r in ref], [r["bandwidth_GB_s"] for r in ref], marker="s", linestyle="--",
                color="gray", label="published")
    line_rate = summary.get("line_rate_GB_s")
    if line_rate:
        ax.axhline(line_rate, color="red", linestyle=":", label=f"line rate {line_rate:g} GB/s")
        ax.axhline(FIELD_ACCEPTANCE_SHARE * line_rate, color="orange", linestyle=":",
                   label=f"{FIELD_ACCEPTANCE_SHARE * 100:.0f} % of line rate")
    if summary.get("baseline_GB_s"):
        ax.axhline(summary["baseline_GB_s"], color="green", linestyle="-.",
                   label=f"measured ceiling {summary['baseline_GB_s']:.1f} GB/s")
    for x, y in zip(lengths, bw):
        ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [str(x) for x in lengths], rotation=45)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("KV transfer bandwidth (GB/s, decimal)")
    if line_rate:
        right = ax.secondary_yaxis("right", functions=(lambda v: v / line_rate * 100, lambda p: p * line_rate / 100))
        right.set_ylabel("utilization of line rate (%)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    _finish(fig, ax, f"KV transfer bandwidth vs prompt length {_title(summary)}", path)
    return path


def _ttft_split(summary: dict, path: Path) -> Path | None:
    rows = _rows(summary, "ttft_ms_mean", "transfer_ms_median")
    if not rows:
        return None
    labels = [str(r["prompt_len"]) for r in rows]
    transfer = [r["transfer_ms_median"] for r in rows]
    rest = [max(r["ttft_ms_mean"] - r["transfer_ms_median"], 0.0) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.bar(labels, rest, label="rest of TTFT (prefill compute, queueing, first decode step)", color="#9ecae1")
    ax.bar(labels, transfer, bottom=rest, label="KV transfer (median)", color="#e6550d")
    for i, r in enumerate(rows):
        share = r.get("transfer_share_of_ttft_pct")
        if share is not None:
            ax.annotate(f"{share:.1f} %", (i, r["ttft_ms_mean"]), textcoords="offset points", xytext=(0, 4),
                        ha="center", fontsize=8)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("mean TTFT (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    _finish(fig, ax, f"TTFT split: KV transfer vs the rest {_title(summary)}", path)
    return path


def _transfer_vs_size(summary: dict, path: Path) -> Path | None:
    rows = _rows(summary, "transfer_ms_median", "kv_bytes")
    if not rows:
        return None
    size = [r["kv_bytes"] / GB for r in rows]
    ms = [r["transfer_ms_median"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot(size, ms, marker="o", label="measured (median)")
    line_rate = summary.get("line_rate_GB_s")
    if line_rate:
        ax.plot(size, [s / line_rate * 1000 for s in size], linestyle=":", color="red",
                label=f"at line rate {line_rate:g} GB/s")
    for x, y, r in zip(size, ms, rows):
        ax.annotate(str(r["prompt_len"]), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("KV size per request (GB, decimal)")
    ax.set_ylabel("transfer time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    _finish(fig, ax, f"KV transfer time vs KV size {_title(summary)}", path)
    return path


def render_plots(summary: dict, out_dir: Path) -> list[Path]:
    """Write the plots the summary has data for; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = [
        _bandwidth(summary, out_dir / "bandwidth.png"),
        _ttft_split(summary, out_dir / "ttft-split.png"),
        _transfer_vs_size(summary, out_dir / "transfer-vs-size.png"),
    ]
    return [p for p in made if p is not None]
