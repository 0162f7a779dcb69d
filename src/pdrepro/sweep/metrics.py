"""Per-length /metrics: the servers' histograms count from start-up, so each
length's own figures are the difference between a scrape before and after it.

RUN/metrics/raw/<role>-{before,after}-<L>.prom keep the scrapes as served;
RUN/metrics/<role>-<L>.prom holds the difference, in the same exposition
format, so the analysis reads it like any scrape.
"""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^(?P<key>[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?)\s+(?P<value>\S+)(?:\s+\d+)?\s*$")
_CUMULATIVE = ("_bucket", "_sum", "_count", "_total")


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m:
            try:
                out[m["key"]] = float(m["value"])
            except ValueError:
                continue
    return out


def _cumulative(key: str) -> bool:
    return key.split("{", 1)[0].endswith(_CUMULATIVE)


def difference(before: str, after: str) -> str:
    """``after`` with every counter and histogram series reduced by ``before``."""
    base = _samples(before)
    lines = []
    for line in after.splitlines():
        m = _SAMPLE.match(line) if line and not line.startswith("#") else None
        if m and _cumulative(m["key"]):
            try:
                value = float(m["value"]) - base.get(m["key"], 0.0)
            except ValueError:
                lines.append(line)
                continue
            lines.append(f"{m['key']} {max(value, 0.0)}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"
