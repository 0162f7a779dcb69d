"""The per-request figures a run's row is drawn from, kept beside the summary for the intervals of figures made
of repeats (analysis.interval): summary.json holds only their mean, median and p99, and a bootstrap over the
requests needs each one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestSamples:
    """One prompt length of one run: each completed request's client TTFT (empty when the bench kept no
    per-request figures) and each KV transfer time the row's median was taken over, milliseconds."""

    ttft_ms: tuple[float, ...]
    transfer_ms: tuple[float, ...]
