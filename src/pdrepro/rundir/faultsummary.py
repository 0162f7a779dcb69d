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


def _d(text: str, default=...):
    return Field(default, description=text)


class RequestRecord(Record):
    index: Count = _d("the request's number in the load, from 0")
    sent_s: Seconds | None = _d("seconds after the load started that it was sent; null: never sent")
    ended_s: Seconds | None = _d("seconds after the load started that it ended; null: it had not ended when the load "
                                 "was collected")
    outcome: Outcome = _d("how it ended as the client saw it: answered (HTTP 200 with a body), http_error, "
                          "client_error (refused, reset, closed without an answer), no_answer (nothing before the "
                          "client's timeout), not_ended")
    status: Annotated[int, IntBounds(100, 599)] | None = _d("the HTTP status, where one came", None)
    error: Annotated[str, Field(max_length=400)] | None = _d("what the client saw, shortened", None)


class Counts(Record):
    answered: Count = _d("requests answered")
    errored: Count = _d("requests that ended with an error the client saw")
    lost: Count = _d("requests with neither an answer nor an error before the client's timeout (or no end)")


def account(requests: tuple[RequestRecord, ...] | list[RequestRecord]) -> Counts:
    """Every request in exactly one class, by how it ended."""
    found = {"answered": 0, "errored": 0, "lost": 0}
    for r in requests:
        found[CLASS_OF[r.outcome]] += 1
    return Counts(**found)


class LogLine(Record):
    server: str = _d("the recorded process whose log holds the line (prefill-0, decode-0, router)")
    line: Annotated[str, Field(max_length=400)] = _d("the line, shortened")


class ServerMetrics(Record):
    """A server's counters over the fault's window (the difference of a scrape of /metrics before the load and
    one after: sglang:http_responses_total for /generate, sglang:num_requests_total); None where a scrape failed,
    the server serves no /metrics, or it was started again (its counters began at zero)."""

    server: str = _d("the recorded server")
    generate_responses: FiniteNumber | None = _d("/generate requests it answered in the window", None)
    generate_failed: FiniteNumber | None = _d("of them, answered with a status other than 2xx", None)
    requests_processed: FiniteNumber | None = _d("requests it processed in the window (sglang:num_requests_total)", None)
    note: str = _d("why a figure is missing", "")


class Undo(Record):
    """What `pdrepro fault` undid of a fault a signal cut short, before it ended."""

    action: Literal["nothing", "resumed", "restarted"] = _d("nothing (the fault had not hit yet, or its role was up "
                                                            "again already), resumed (SIGCONT), restarted")
    ok: bool = _d("the role runs as before the fault: resumed, or started again and answering its health")
    line: Annotated[str, Field(max_length=1000)] = _d("what was restored, or what could not be and the command "
                                                      "that fixes it")


class FaultResult(Record):
    fault: FaultName = _d("the fault injected")
    target: str = _d("the recorded process the fault was aimed at")
    signalled: tuple[str, ...] = _d("each process a signal reached, as 'name (pid N)': the target and what it forked",
                                    ())
    error: str | None = _d("why the fault could not be run as asked (it then fails)", None)
    started_at: str = _d("when the fault's load started, UTC, ISO 8601")
    fault_at_s: Seconds | None = _d("seconds after the load started that the signal was sent", None)
    stopped_for_s: Seconds | None = _d("stop-decode: seconds between SIGSTOP and SIGCONT", None)
    resumed: bool | None = _d("stop-decode: SIGCONT reached every stopped process", None)
    restarted: bool | None = _d("kill-*: the role was started again from its recorded command and came up", None)
    restart_up_s: Seconds | None = _d("kill-*: seconds from the kill until the restarted process was up (its health "
                                      "URL, its port, its server info), as `stack up` waits for it", None)
    in_flight_at_fault: Count = _d("requests sent and not ended when the signal was sent", 0)
    recovery_s: Seconds | None = _d("seconds from the kill (or the SIGCONT) until the router answered a request "
                                    "again; null: not within the bound", None)
    recovery_bound_s: Annotated[float, NumberBounds(ge=0)] = _d("the longest recovery that passes, seconds")
    recovery_note: str = _d("why the recovery was not measured", "")
    client_timeout_s: Annotated[float, NumberBounds(ge=0)] = _d("seconds a request could wait for its answer")
    requests: tuple[RequestRecord, ...] = _d("every request of the fault's load, in order")
    counts: Counts = _d("the requests' classes, as written (the judge counts them again from the requests)")
    log_lines: tuple[LogLine, ...] = _d("error lines the servers' logs gained from the load's start on", ())
    log_lines_more: Count = _d("error lines past the ones kept", 0)
    log_lines_startup: Count = _d("lines a (re)starting server logs every time, harmless, that the error words "
                                  "match (skipped optional imports, a missing generation config): left out of "
                                  "log_lines", 0)
    metrics: tuple[ServerMetrics, ...] = _d("each server's /metrics counters over the window", ())
    interrupted: str | None = _d("the signal that cut this fault short (SIGINT, SIGTERM, SIGHUP): its requests not "
                                 "ended count as lost; null: it ran to its end", None)
    undo: Undo | None = _d("what was undone before the command ended, when a signal cut the fault short", None)


class FaultSummary(Record):
    schema_version: Literal[1] = _d("the version of this file's shape", 1)
    kind: Literal["fault"] = _d("the kind of run", "fault")
    stack_run: str = _d("the folder of the stack the faults hit (`pdrepro stack up --out`)")
    scenario: str = _d("the scenario the stack record names")
    stack_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")] = _d("the stack record's id")
    router_url: str = _d("the router the load went through")
    requests_per_fault: Annotated[int, IntBounds(1)] = _d("requests each fault's load sent")
    concurrency: Annotated[int, IntBounds(1)] = _d("requests in flight at most")
    recovery_bound_s: Annotated[float, NumberBounds(ge=0)] = _d("the longest recovery that passes, seconds")
    bound_source: str = _d("where the bound came from (the scenario's threshold, or --recovery-bound)")
    faults: tuple[FaultResult, ...] = _d("each fault run, in order")
    stack_up_after: bool | None = _d("every recorded process proven the stack's and answering at the end", None)
    interrupted: str | None = _d("the signal that stopped the run before every fault asked had ended: a partial "
                                 "run, which fails (unknown never passes); null: it ran to its end", None)


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
