"""Prometheus text from a server's ``/metrics`` (``--enable-metrics``).

Only the KV-transfer histograms are read: ``sglang:kv_transfer_speed_gb_s``
(GiB/s, as the server's log), ``..._latency_ms``, ``..._total_mb`` (MiB, rank 0),
``..._bootstrap_ms``, ``..._alloc_ms``. Each gives a sum and a count; a scrape
is cumulative since server start, so the mean over a run is the difference of
two scrapes, or the one scrape when the server served only that run.

Lines are handed to prometheus_client's parser one at a time: an error can then
name its line, and the server's other metrics, which are not read, cannot make
a scrape unreadable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from ..core import runfile
from ..core.errors import UserError

PREFIX = "sglang:kv_transfer_"


@dataclass(frozen=True)
class Histogram:
    name: str            # without the sglang:kv_transfer_ prefix, e.g. "latency_ms"
    sum: float
    count: float

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None


def _samples(line: str, number: int, source: str):
    try:
        return [s for family in text_string_to_metric_families(line) for s in family.samples]
    except ValueError:
        raise UserError(f"{source}: line {number} is not Prometheus text format; "
                        "save the scrape of /metrics unchanged") from None


def _as_text(value: float) -> str:
    # Spelled as the exposition format spells it, so the message matches the file.
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def parse_metrics_text(text: str, source: str = "metrics") -> dict[str, Histogram]:
    """KV-transfer histograms summed over label sets (e.g. several TP ranks)."""
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith(PREFIX):
            continue
        for sample in _samples(line, number, source):
            value = float(sample.value)
            if not math.isfinite(value):
                raise UserError(f"{source}: line {number} holds {_as_text(value)}, not a figure; scrape /metrics "
                                "again (a server that restarted mid-run resets its histograms)")
            name = sample.name[len(PREFIX):]
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
        text = runfile.read_text(path, kind=runfile.METRICS)
    except FileNotFoundError:
        raise UserError(f"{path}: no such metrics file; scrape the prefill server's /metrics into it") from None
    return parse_metrics_text(text, str(path))
