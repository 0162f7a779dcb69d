"""Where a request's time goes besides the KV transfer: the phases SGLang's servers log per request.

Each server's request-stats line times the request's phases as ``<phase>_duration=`` figures (prefill:
bootstrap, queue, forward; decode: bootstrap, alloc_wait, transfer, queue, forward). A row carries the
median of each phase, keyed ``<role>.<phase>``, over the very requests its transfer figures come from:
the prefill's measured requests, and the decode lines of those same requests.

A request has a different rid on each server (SGLang names it anew on each; the recorded H200 logs share
none), but one bootstrap room on both: the room is how the decode finds the prefill's KV. So a decode line
is matched by rid where rids are shared, else by room. Only where the logs carry no rooms to compare (an
older build) are the decode lines of the same length taken instead, warm-up left out.
"""

from __future__ import annotations

import math

from ..parsers.reqstats import Keep, ReqStat, merge_scans, parse_log
from ..rundir import RunDir
from ..rundir.contract import WARNING, issue
from ..rundir.issuekind import IssueKind
from ..scenario.model import Scenario
from .serverlogs import refuse_stale_start, refuse_wrong_role, topology_logs

SUFFIX = "_duration"
# No phase of one request in a benchmark lasts a day: a longer figure (or one too large for a float) is a
# damaged line, and left out rather than let it carry a median or overflow one.
MAX_PHASE_MS = 86_400_000.0


def _client_request(stat: ReqStat) -> bool:
    return not (stat.is_health_check or stat.is_server_warmup)


def read_decode(run: RunDir, scenario: Scenario, issues: list[dict], keep: Keep | None = None) -> list[ReqStat]:
    """The client's decode requests in every decode server's log of the run, merged (a request once), with
    ``keep`` the newest of each length (serverlogs.length_keep); a log whose server started again after its last
    request refuses the run (serverlogs)."""
    scans = []
    for path in topology_logs(run, scenario, "decode", issues):
        scan = parse_log(path, keep)
        refuse_wrong_role(run, scenario, "decode", scan)
        refuse_stale_start(scan, [s for s in scan.stats if _client_request(s)])
        scans.append(scan)
    return [s for s in merge_scans(scans).stats if _client_request(s) and s.kind in ("decode", "")]


def decode_of(samples: list[ReqStat], decode: list[ReqStat], same_length: list[ReqStat], warmup: int) -> list[ReqStat]:
    """The decode lines of the prefill's measured ``samples``: by rid, else by bootstrap room. When the logs
    carry no rooms on one side, ``same_length`` (the decode lines of the row's length, in finishing order)
    less the warm-up, and no more of them than the prefill measured."""
    by_rid = {s.rid: s for s in decode if s.rid}
    by_room = {s.bootstrap_room: s for s in decode if s.bootstrap_room}  # room 0 is the server's own warm-up
    matched = [d for p in samples if (d := by_rid.get(p.rid) or by_room.get(p.bootstrap_room or 0)) is not None]
    if matched or (by_room and any(p.bootstrap_room for p in samples)):
        # Rooms on both sides that match none are another run's requests: nothing, rather than guess.
        return matched
    kept = same_length[warmup:]
    return kept[-len(samples):] if samples and len(kept) > len(samples) else kept


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    # Halves before the sum: two figures near the float's limit would overflow their sum to infinity.
    return s[mid] if len(s) % 2 else s[mid - 1] / 2 + s[mid] / 2


def phase_figures(L: int, prefill: list[ReqStat], decode: list[ReqStat], issues: list[dict],
                  logs: str) -> dict:
    """``phase_ms_median`` and ``phase_samples`` of a row (each phase's median in milliseconds, and how many
    requests logged it), or nothing when no line times a phase. ``logs`` names the folder of the logs."""
    values: dict[str, list[float]] = {}
    bad: list[tuple[ReqStat, str, float]] = []
    for role, stats in (("prefill", prefill), ("decode", decode)):
        for stat in stats:
            for key, seconds in stat.durations_s.items():
                if not key.endswith(SUFFIX) or key == SUFFIX:
                    continue
                ms = seconds * 1000
                if not (math.isfinite(ms) and 0 <= ms <= MAX_PHASE_MS):
                    bad.append((stat, key, seconds))
                    continue
                values.setdefault(f"{role}.{key[: -len(SUFFIX)]}", []).append(ms)
    if bad:
        stat, key, seconds = bad[0]
        issues.append(issue(WARNING, IssueKind.IMPLAUSIBLE_PHASE,
                            f"{logs}: {len(bad)} phase figure(s) of length {L} are no duration of one request (first: "
                            f"the {stat.kind} log's line {stat.line_no}, rid={stat.rid}, {key}={seconds * 1000:g} ms); "
                            "they were left out of the phase medians: use the servers' own logs", L))
    if not values:
        return {}
    return {"phase_ms_median": {k: _median(v) for k, v in values.items()},
            "phase_samples": {k: len(v) for k, v in values.items()}}
