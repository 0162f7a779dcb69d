"""The fault run's summary (OUT/fault-summary.json, written by `pdrepro fault`): per fault, every request the
load sent with how it ended, the moment and target of the fault, the recovery, and what the servers' /metrics
and logs said in the window. The classes (answered, errored, lost) are drawn from the requests by
``account``; the counts the file holds are a claim the judge checks against them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field

from ..core import runfile
from ..core.errors import UserError
from ..core.strictmodel import FiniteNumber, IntBounds, NumberBounds, Record, load

FILE = "fault-summary.json"
REPORT = "fault-report.md"
FaultName = Literal["kill-decode", "kill-prefill", "stop-decode", "kill-router"]
FAULTS: tuple[str, ...] = get_args(FaultName)
# How a request ended, as the client saw it. not_ended: the load was cut short (a stop) before it ended.
Outcome = Literal["answered", "http_error", "client_error", "no_answer", "not_ended"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
RequestClass = Literal["answered", "errored", "lost"]
# Each outcome is in exactly one class. An error the client saw (an HTTP status, a refused or reset connection) is
# errored; no answer and no error before the timeout, or no end at all, is lost: unknown evidence never passes.
CLASS_OF: dict[str, str] = {"answered": "answered", "http_error": "errored", "client_error": "errored",
                            "no_answer": "lost", "not_ended": "lost"}
Seconds = Annotated[float, NumberBounds(ge=0)]
Count = Annotated[int, IntBounds(0)]


class RequestRecord(Record):
    index: Count
    sent_s: Seconds | None        # seconds after the load started; None: never sent
    ended_s: Seconds | None       # None: it had not ended when the load was collected
    outcome: Outcome
    status: Annotated[int, IntBounds(100, 599)] | None = None   # the HTTP status, where one came
    error: Annotated[str, Field(max_length=400)] | None = None  # what the client saw, shortened


class Counts(Record):
    answered: Count
    errored: Count
    lost: Count


def account(requests: tuple[RequestRecord, ...] | list[RequestRecord]) -> Counts:
    """Every request in exactly one class, by how it ended."""
    found = {"answered": 0, "errored": 0, "lost": 0}
    for r in requests:
        found[CLASS_OF[r.outcome]] += 1
    return Counts(**found)


class LogLine(Record):
    server: str
    line: Annotated[str, Field(max_length=400)]


class ServerMetrics(Record):
    """A server's counters over the fault's window (the difference of a scrape of /metrics before the load and
    one after: sglang:http_responses_total for /generate, sglang:num_requests_total); None where a scrape failed,
    the server serves no /metrics, or it was started again (its counters began at zero)."""

    server: str
    generate_responses: FiniteNumber | None = None
    generate_failed: FiniteNumber | None = None    # /generate answered with a status other than 2xx
    requests_processed: FiniteNumber | None = None
    note: str = ""


class FaultResult(Record):
    fault: FaultName
    target: str                         # the recorded process the fault was aimed at (decode-0, router, ...)
    signalled: tuple[str, ...] = ()     # "name (pid N)" of each process a signal reached
    error: str | None = None            # why the fault could not be run as asked (then it fails)
    started_at: str                     # UTC, ISO 8601: when the load started
    fault_at_s: Seconds | None = None   # seconds after the load started
    stopped_for_s: Seconds | None = None  # stop-decode: seconds between SIGSTOP and SIGCONT
    resumed: bool | None = None         # stop-decode: SIGCONT reached every stopped process
    restarted: bool | None = None       # kill-*: the role was started again from its recorded command
    in_flight_at_fault: Count = 0
    recovery_s: Seconds | None = None   # seconds from the kill (or the SIGCONT) until the router answered again
    recovery_bound_s: Annotated[float, NumberBounds(ge=0)]
    recovery_note: str = ""
    client_timeout_s: Annotated[float, NumberBounds(ge=0)]
    requests: tuple[RequestRecord, ...]
    counts: Counts
    log_lines: tuple[LogLine, ...] = ()
    log_lines_more: Count = 0           # error lines past the ones kept
    metrics: tuple[ServerMetrics, ...] = ()


class FaultSummary(Record):
    schema_version: Literal[1] = 1
    kind: Literal["fault"] = "fault"
    stack_run: str
    scenario: str
    stack_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]
    router_url: str
    requests_per_fault: Annotated[int, IntBounds(1)]
    concurrency: Annotated[int, IntBounds(1)]
    recovery_bound_s: Annotated[float, NumberBounds(ge=0)]
    bound_source: str                   # where the bound came from (the scenario's threshold, or --recovery-bound)
    faults: tuple[FaultResult, ...]
    stack_up_after: bool | None = None  # every recorded process proven ours and answering at the end


def path(run: Path) -> Path:
    return Path(run) / FILE


def present(run: Path) -> bool:
    return path(run).is_file()


def read(run: Path) -> FaultSummary:
    file = path(run)
    try:
        data = runfile.read_json(file)
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"{file}: not readable JSON ({exc}); it is written by `pdrepro fault`") from None
    return load(FaultSummary, data, str(file), fix=f"{FILE} is written by `pdrepro fault`; run it again")
