"""Per-length /metrics: the servers' histograms count from start-up, so each
length's own figures are the difference between a scrape before and after it.

RUN/metrics/raw/<role>-{before,after}-<L>.prom keep the scrapes as served;
RUN/metrics/<role>-<L>.prom holds the difference, in the same exposition
format, so the analysis reads it like any scrape.
"""

from __future__ import annotations

import re

import requests

from ..core import runfile, signals

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


def fetch(url: str, timeout_s: float) -> tuple[str | None, str]:
    """A server's /metrics page: (its text, "") or (None, why not). The GET runs under core.signals, so a signal
    ends the command at once whatever the server does, and it is read up to the scrape's cap, never whole."""
    def get() -> tuple[str | None, str]:
        with requests.get(url, timeout=timeout_s, stream=True) as resp:
            if not resp.ok:
                return None, f"answered HTTP {resp.status_code}"
            cap = runfile.METRICS.cap or 0
            body = resp.raw.read(cap + 1, decode_content=True)
            if len(body) > cap:
                return None, f"answered more than {cap} bytes"
            return body.decode(resp.encoding or "utf-8", errors="replace"), ""

    try:
        return signals.wait_for(get)
    except requests.RequestException as exc:
        return None, f"unreachable ({type(exc).__name__})"
