"""What the servers say about a fault's window, beside the client's record: their /metrics counters before
and after the load, and the error lines their logs gained from the moment the load started (the logs of the
stack run, RUN/logs/, which a restarted process appends to)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..launch.stack.record import StackRecord
from ..parsers.promcounters import ServerCounters, counters_text
from ..rundir.faultsummary import LogLine, ServerMetrics
from . import metrics

# A scrape of /metrics is a few hundred kB; more is not a server's answer.
# A line a server logs when something went wrong (SGLang logs through `logging`: ERROR, WARNING with a failure,
# a traceback; Mooncake's glog lines start with E).
# An access log line of a 5xx answer ("POST /generate HTTP/1.1" 502) is one too.
ERROR_LINE = re.compile(r"error|exception|traceback|fail|timed? ?out|abort|refused|reset by peer|^E\d{4} |\" 5\d\d ",
                        re.IGNORECASE)
# Lines a server logs each time it starts, harmless, that ERROR_LINE's words catch: a model module it could not
# import and skips, a model folder without generation_config.json, the open-files limit it may not raise, its
# ServerArgs dump, and its 503 to /health while it loads (the restart's own wait polling it). A restarted server
# logs them all again; they are counted apart, never shown as errors.
STARTUP_NOISE = re.compile(r"Ignore import error when loading|Failed to load generation config|"
                           r"Fail to set RLIMIT_NOFILE|server_args=ServerArgs\(|\"GET /health HTTP/1\.[01]\" 503 ")
KEEP_LINES = 20          # per server and fault
MAX_LINE_CHARS = 300


def scrape(url: str, timeout_s: float = 5.0) -> ServerCounters | None:
    """The server's counters now, or None (no /metrics served, not reachable, not readable)."""
    text, _ = metrics.fetch(url, timeout_s)
    if text is None:
        return None
    try:
        return counters_text(text, url)
    except UserError:
        return None


def metrics_url(health_url: str) -> str:
    parts = health_url.split("/", 3)
    return f"{parts[0]}//{parts[2]}/metrics"


def servers(rec: StackRecord) -> list[tuple[str, str]]:
    """(name, /metrics URL) of each server of the stack (the router serves none of SGLang's counters)."""
    return [(p.name, metrics_url(p.health_url)) for p in rec.processes if p.role.value != "router"]


def _delta(after: float | None, before: float | None) -> float | None:
    if after is None or before is None or after < before:
        return None
    return round(after - before, 3)


def window(name: str, before: ServerCounters | None, after: ServerCounters | None, restarted: bool) -> ServerMetrics:
    if restarted:
        return ServerMetrics(server=name, note="started again during the fault: its counters began at zero")
    # Which scrape failed says what happened: none at all is a server without metrics; one before the load and
    # none after it is a server that stopped answering during the fault (it died or hangs), metrics or not.
    if before is None and after is None:
        return ServerMetrics(server=name, note="no /metrics scrape before or after the load (start the stack with "
                                               "--enable-metrics)")
    if after is None:
        return ServerMetrics(server=name, note="/metrics answered before the load, not after it: the server stopped "
                                               "answering during the fault (not running or hung: see `pdrepro stack "
                                               "status`)")
    if before is None:
        return ServerMetrics(server=name, note="/metrics did not answer before the load, only after it")
    got = ServerMetrics(server=name, generate_responses=_delta(after.generate_responses, before.generate_responses),
                        generate_failed=_delta(after.generate_failed, before.generate_failed),
                        requests_processed=_delta(after.requests, before.requests))
    if after.generate_responses is not None and before.generate_responses is not None \
            and after.generate_responses < before.generate_responses:
        got = got.model_copy(update={"note": "its counters went down: the server was started again"})
    return got


@dataclass(frozen=True)
class LogMark:
    name: str
    path: Path
    lines: int          # lines the log held at the mark


def _lines(path: Path):
    """The log's lines through the one reader (its size and line caps), or none: absent, or not readable."""
    try:
        yield from runfile.lines(path)
    except (OSError, UserError):
        return


def marks(run: Path, rec: StackRecord) -> list[LogMark]:
    """Where each recorded process's log ends now, in lines."""
    return [LogMark(p.name, Path(run) / p.log, sum(1 for _ in _lines(Path(run) / p.log))) for p in rec.processes]


def error_lines(found: list[LogMark]) -> tuple[list[LogLine], int, int]:
    """The error lines each log gained after its mark (at most KEEP_LINES per server); how many more there were;
    and how many start-up lines (STARTUP_NOISE) were left out."""
    kept: list[LogLine] = []
    more = startup = 0
    for m in found:
        n = 0
        for raw in itertools.islice(_lines(m.path), m.lines, None):
            if not ERROR_LINE.search(raw):
                continue
            if STARTUP_NOISE.search(raw):
                startup += 1
                continue
            n += 1
            if n <= KEEP_LINES:
                kept.append(LogLine(server=m.name, line=raw.strip()[:MAX_LINE_CHARS]))
            else:
                more += 1
    return kept, more, startup
