"""Prometheus text from a server's ``/metrics`` (``--enable-metrics``).

Only the KV-transfer histograms are read: ``sglang:kv_transfer_speed_gb_s``
(GiB/s, as the server's log), ``..._latency_ms``, ``..._total_mb`` (MiB, rank 0),
``..._bootstrap_ms``, ``..._alloc_ms``. Each gives a sum and a count; a scrape
is cumulative since server start, so the mean over a run is the difference of
two scrapes, or the one scrape when the server served only that run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

PREFIX = "sglang:kv_transfer_"
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+\d+)?\s*$")


@dataclass(frozen=True)
class Histogram:
    name: str            # without the sglang:kv_transfer_ prefix, e.g. "latency_ms"
    sum: float
    count: float

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None


def parse_metrics_text(text: str, source: str = "metrics") -> dict[str, Histogram]:
    """KV-transfer histograms summed over label sets (e.g. several TP ranks)."""
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or not line.startswith(PREFIX):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise UserError(f"{source}: line {number} is not Prometheus text format; save the scrape of /metrics unchanged")
        name = m.group("name")[len(PREFIX):]
        try:
            value = float(m.group("value"))
        except ValueError:
            raise UserError(f"{source}: line {number} has a non-numeric value; save the scrape of /metrics unchanged") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise UserError(f"{source}: line {number} holds {m.group('value')}, not a figure; scrape /metrics again "
                            "(a server that restarted mid-run resets its histograms)")
        if name.endswith("_sum"):
            base = name[:-4]
            sums[base] = sums.get(base, 0.0) + value
        elif name.endswith("_count"):
            base = name[:-6]
            counts[base] = counts.get(base, 0.0) + value
    return {k: Histogram(k, sums[k], counts.get(k, 0.0)) for k in sorted(sums)}


def parse_metrics_file(path: Path) -> dict[str, Histogram]:
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        raise UserError(f"{path}: no such metrics file; scrape the prefill server's /metrics into it") from None
    return parse_metrics_text(text, str(path))
