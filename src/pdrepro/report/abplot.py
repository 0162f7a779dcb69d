"""An A/B's one picture: the arms side by side on the one clock they share, the client's time to first token, per
prompt length (median as the bar, p99 as the mark above it). Each arm's own plots measure its own window and
invite the comparison the A/B report forbids; this one sets only the shared clock against itself."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..rundir.absummary import AbSummary  # noqa: E402
from .plots import png  # noqa: E402

PLOT = "ab-ttft.png"


def has_ttft(summary: AbSummary) -> bool:
    return any(a.ttft_ms_median is not None for length in summary.lengths for a in length.arms)


def ttft_png(summary: AbSummary) -> bytes | None:
    """The PNG's bytes (the runner writes them with its report), None when no arm measured a TTFT."""
    if not has_ttft(summary):
        return None
    lengths = [length.prompt_len for length in summary.lengths]
    names = [a.name for a in summary.arms]
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(lengths) * max(1, len(names)) / 2 + 3), 4.8))
    for k, name in enumerate(names):
        xs, medians, p99s = [], [], []
        for i, length in enumerate(summary.lengths):
            arm = next((a for a in length.arms if a.arm == name), None)
            if arm is None or arm.ttft_ms_median is None:
                continue
            xs.append(i - 0.4 + width * (k + 0.5))
            medians.append(arm.ttft_ms_median)
            p99s.append(arm.ttft_ms_p99)
        label = summary.arm(name).backend_label or name
        bars = ax.bar(xs, medians, width * 0.9, label=f"{name} ({label}), median" if label != name else f"{name}, median")
        marks = [(x, p) for x, p in zip(xs, p99s) if p is not None]
        if marks:
            ax.plot([x for x, _ in marks], [p for _, p in marks], "v", color=bars.patches[0].get_facecolor(),
                    markeredgecolor="black", label=f"{name}, p99")
    ax.set_xticks(range(len(lengths)), [str(L) for L in lengths])
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("client TTFT (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("A/B: the client's time to first token per arm (the one clock the arms share)", fontsize=10)
    return png(fig)
