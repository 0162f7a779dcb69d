"""The failure and retry figures a pinned SGLang server's ``/metrics`` has (``--enable-metrics``), read from
one scrape or from the sweep's difference of two (RUN/.../metrics/<role>-<L>.prom).

Which ones, from the recorded scrapes of SGLang 0.5.15.post1 (tests/recorded/h200-ab-mooncake-tcp-vs-nixl-
sglang-0.5.15.post1/ab/*/metrics/raw/): the server has no counter named for failed or retried KV transfers;
what it does count is
  sglang:http_responses_total{endpoint,method,status_code}  counter: a /generate answered with a status other
                                                            than 2xx is a request the server failed
  sglang:num_requests_total{engine_type,model_name}         counter: requests the server processed
  sglang:failed_session_recoveries_total                    counter: Mooncake sessions taken off the blacklist
                                                            by a probe (each one a peer that had failed)
  sglang:num_retracted_reqs{...}                            gauge: requests retracted (pushed back to the queue
                                                            for lack of KV memory) as the scrape was taken
The counters' difference over a step is the step's own count; the gauge is its value after the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from ..core import runfile
from ..core.errors import UserError

RESPONSES = "sglang:http_responses_total"
REQUESTS = "sglang:num_requests_total"
RECOVERIES = "sglang:failed_session_recoveries_total"
RETRACTED = "sglang:num_retracted_reqs"
_READ = (RESPONSES, REQUESTS, RECOVERIES, RETRACTED)


@dataclass(frozen=True)
class ServerCounters:
    """Counts over the span a scrape (or a difference) covers; None where the server did not serve the figure."""

    generate_responses: float | None = None
    generate_failed: float | None = None
    requests: float | None = None
    session_recoveries: float | None = None
    retracted: float | None = None


def _add(into: dict[str, float], key: str, value: float) -> None:
    into[key] = into.get(key, 0.0) + value


def counters_text(text: str, source: str) -> ServerCounters:
    found: dict[str, float] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line.startswith(_READ):
            continue
        try:
            samples = [s for family in text_string_to_metric_families(line) for s in family.samples]
        except ValueError:
            raise UserError(f"{source}: line {number} is not Prometheus text format; save the scrape of /metrics "
                            "unchanged") from None
        for sample in samples:
            value = float(sample.value)
            if not math.isfinite(value) or value < 0:
                raise UserError(f"{source}: line {number} holds {value!r}, which no counter can hold; scrape /metrics "
                                "again (a server that restarted mid-run resets its counters)")
            if sample.name == RESPONSES:
                if sample.labels.get("endpoint") != "/generate":
                    continue
                _add(found, "generate_responses", value)
                if not str(sample.labels.get("status_code", "")).startswith("2"):
                    _add(found, "generate_failed", value)
                else:
                    _add(found, "generate_failed", 0.0)
            elif sample.name == REQUESTS:
                _add(found, "requests", value)
            elif sample.name == RECOVERIES:
                _add(found, "session_recoveries", value)
            elif sample.name == RETRACTED:
                _add(found, "retracted", value)
    return ServerCounters(**found)


def counters_file(path: Path) -> ServerCounters:
    try:
        text = runfile.read_text(path, kind=runfile.METRICS)
    except FileNotFoundError:
        raise UserError(f"{path}: no such metrics file; rerun the load with --metrics") from None
    return counters_text(text, str(path))
