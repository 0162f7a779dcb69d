"""Every kind of issue a summary can carry, in one enumeration.

An issue's ``kind`` is what tools match on (the checks, the report, anyone's script reading
summary.json), so a kind is declared here once and the code names it by member; ``contract.issue``
refuses any other. The values are the strings summary.json has always held. Grouped by the input
the issue is about.
"""

from __future__ import annotations

from enum import Enum


class IssueKind(str, Enum):
    # Bench client results (RUN/bench).
    BENCH_UNREADABLE = "bench_unreadable"
    # The client's own notes on a length. A comparison once wrote "bench_note" for the same thing.
    BENCH_NOTES = "bench_notes"
    MISSING_LENGTH = "missing_length"
    UNEXPECTED_LENGTH = "unexpected_length"
    INCOMPLETE = "incomplete"
    REQUEST_ERRORS = "request_errors"
    EXTRA_REQUESTS = "extra_requests"
    CACHE_HITS = "cache_hits"
    KV_SIZE_MISMATCH = "kv_size_mismatch"
    # Server logs (RUN/logs): the request-stats lines.
    PREFILL_LOG_MISSING = "prefill_log_missing"
    DECODE_LOG_MISSING = "decode_log_missing"
    # Fewer server logs of a role than its topology runs.
    PREFILL_LOGS_MISSING = "prefill_logs_missing"
    DECODE_LOGS_MISSING = "decode_logs_missing"
    NO_REQSTATS = "no_reqstats"
    INVALID_REQSTATS = "invalid_reqstats"
    DUPLICATE_REQSTATS = "duplicate_reqstats"
    CONFLICTING_REQSTATS = "conflicting_reqstats"
    UNMATCHED_REQUESTS = "unmatched_requests"
    FEWER_LOGGED_REQUESTS = "fewer_logged_requests"
    UNPARSEABLE_LINES = "unparseable_lines"
    INTERLEAVED_SERVERS = "interleaved_servers"
    STRAY_SERVER_LOG = "stray_server_log"
    # A phase duration no request can take (infinite, or longer than a day): left out of the phase medians.
    IMPLAUSIBLE_PHASE = "implausible_phase"
    NO_TRANSFER_FIGURES = "no_transfer_figures"
    ZERO_TRANSFER_SPEED = "zero_transfer_speed"
    # NIC counters (RUN/counters), the witness.
    COUNTERS_UNREADABLE = "counters_unreadable"
    COUNTERS_OTHER_LENGTH = "counters_other_length"
    COUNTERS_IMPOSSIBLE = "counters_impossible"
    LOGS_OUTSIDE_COUNTER_WINDOW = "logs_outside_counter_window"
    NIC_TROUBLE = "nic_trouble"
    NIC_EXTRA_TRAFFIC = "nic_extra_traffic"
    # Other files of the run.
    METRICS_UNREADABLE = "metrics_unreadable"
    PROVENANCE_UNREADABLE = "provenance_unreadable"
    # What ran (provenance.json) differs from docker/versions.env (whatran.py).
    PINS_DIFFER = "pins_differ"
    # The engine alone on the run's box (RUN/engine-ceiling*), the one-box ceiling.
    ENGINE_CEILING_UNREADABLE = "engine_ceiling_unreadable"
    ENGINE_CEILING_TRANSPORT = "engine_ceiling_transport"
    # A comparison's configurations.
    CONFIGURATION_MISSING = "configuration_missing"
    # A composite's member whose own files contradict the plan (analysis.members): its check fails.
    MEMBER_IDENTITY = "member_identity"
    # The smoke test.
    SMOKE_FAILED = "smoke_failed"
    CHECKSUM_MISMATCH = "checksum_mismatch"
    SOCKET_CHECKSUM_MISMATCH = "socket_checksum_mismatch"
    BELOW_SOCKET = "below_socket"
    STALL = "stall"

    def __str__(self) -> str:
        return self.value

    # Equal to its value as text (the str mixin), so it hashes as that text too: a member finds the
    # issues of its kind in a mapping keyed by the kinds read back from summary.json.
    def __hash__(self) -> int:
        return str.__hash__(self.value)
