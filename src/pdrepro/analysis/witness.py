"""The NICs' own count of what a length moved, set against the KV the model says was sent.

SGLang's per-request transfer figures come from the engine being judged; a
stack can also report success while its KV went over TCP or nowhere. The
sweep reads each node's RDMA port counters before and after every length
(RUN/counters/<L>.json); here the bytes they moved in the KV's direction
(prefill node: sent, decode node: received) are compared with

    KV = prompt_len x KV bytes per token x completed requests
         / nodes of that role (the router spreads requests evenly over them).

The NICs must show at least the scenario's thresholds.min_nic_kv_share_pct of it: an intact RDMA path
shows all of it plus headers, a TCP fallback or a dead path next to nothing
(mlx5 fills these counters from the port's RDMA unicast and multicast octets,
so TCP through the same port is not counted).
Above KV, the ALLOWANCE (RoCE headers and acknowledgements, per-request
control messages, the warm-up and failed requests' KV) is what the path may
add; more than that means other traffic shared the NICs, so the figure is
kept but flagged. The bytes over the time between the readings can never
exceed the node's line rate.

Problems come back as (is_error, kind, message) for the analysis to file as
issues of the length: an error is an unreadable record (bad input), the rest
are warnings.
"""

from __future__ import annotations

import datetime as dt
import math

from pydantic import ValidationError

from ..core.roles import SERVER_ROLES
from ..core.units import GB, MiB, human_bytes
from ..rundir import RunDir
from ..rundir.counters import WORD_BYTES, is_wide, words_moved
from ..rundir.issuekind import IssueKind
from ..scenario.model import Scenario
from ..scenario.sections import Thresholds
from .rails import rail_map, rails_of_node

ALLOWANCE = {
    # Ethernet, IPv4, UDP, BTH, RETH and ICRC around each 4096-byte RoCE payload,
    # plus the acknowledgements, rounded up.
    "header_fraction": 0.05,
    # Per request: the transfer engine's and SGLang's small RDMA messages (aux
    # data, status), far above what they carry.
    "control_bytes_per_request": 4 * MiB,
}
# Which way the KV crosses each node's ports.
DIRECTION = {"prefill": "port_xmit_data", "decode": "port_rcv_data"}
# hw_counters that only rise when the fabric drops or repeats packets.
_TROUBLE = ("retrans", "timeout", "seq_err", "out_of_sequence", "nak", "_err")


def describe_allowance(min_kv_share_pct: float | None = None, min_rail_share: float | None = None) -> dict:
    """The witness's bounds for the summary; without a scenario's figure, the thresholds' own default."""
    if min_kv_share_pct is None:
        min_kv_share_pct = Thresholds.model_fields["min_nic_kv_share_pct"].default
    if min_rail_share is None:
        min_rail_share = Thresholds.model_fields["min_rail_share"].default
    return {"min_kv_share_pct": min_kv_share_pct, "min_rail_share": min_rail_share, **ALLOWANCE,
            "counted": {role: f"{name} (x {WORD_BYTES} bytes)" for role, name in DIRECTION.items()}}


class BadRecord(ValueError):
    """A counter record that no counter can have written (its message names the port)."""


def _node_bytes(role: str, node: dict) -> dict:
    """Bytes one node's active ports moved in the KV's direction, or why not."""
    before, after = node.get("before") or {}, node.get("after") or {}
    # ports: each counted port's bytes, for the per-rail witness (rails.py); listed: every port read.
    out: dict = {"counter": DIRECTION[role], "bytes": None, "window_s": None, "problem": None, "trouble": {},
                 "ports": {}, "listed": [], "rates": {}}
    if node.get("error"):
        out["problem"] = node["error"]
        return out
    if not before or not after:
        out["problem"] = "no reading " + ("before" if not before else "after") + " the length"
        return out
    window = float(after.get("at", 0)) - float(before.get("at", 0))
    if not math.isfinite(window):
        raise ValueError("reading times are not numbers")
    out["window_s"] = window
    out["span"] = (float(before.get("at", 0)), float(after.get("at", 0)))
    if window <= 0:
        out["problem"] = "the readings carry no time span"
        return out
    total, problems, counted = 0, [], 0
    for name, b in (before.get("ports") or {}).items():
        a = (after.get("ports") or {}).get(name)
        out["listed"].append(str(name))
        if a is None or b.get("state") not in (None, "ACTIVE"):
            continue
        out["rates"][str(name)] = a.get("rate") if isinstance(a.get("rate"), str) else None
        counter = DIRECTION[role]
        if counter not in b or counter not in a:
            problems.append(f"{name} has no counters/{counter}")
            continue
        was, now = int(b[counter]), int(a[counter])
        if was < 0 or now < 0:
            raise BadRecord(f"{name} {counter} is negative ({was} -> {now} words); no counter counts below zero")
        if is_wide(was, now, bool(a.get("extended"))) and now < was:
            raise BadRecord(f"{name} {counter} ran backwards ({was} -> {now} words) on a 64-bit counter, which never "
                            "wraps: the readings are not of one port in one run (or the port was reset)")
        words, why = words_moved(was, now, window, a.get("rate"), bool(a.get("extended")))
        if words is None:
            problems.append(f"{name} {counter} {why}")
            continue
        total += words * WORD_BYTES
        out["ports"][str(name)] = words * WORD_BYTES
        counted += 1
        for hw, value in (a.get("hw_counters") or {}).items():
            rise = value - (b.get("hw_counters") or {}).get(hw, value)
            if rise > 0 and any(t in hw for t in _TROUBLE):
                out["trouble"][f"{name} {hw}"] = rise
    if problems:
        out["problem"] = "; ".join(problems)
    elif not counted:
        out["problem"] = "no active RDMA port with counters"
    else:
        out["bytes"] = total
    return out


def _load(run: RunDir, L: int, issues: list) -> dict | None:
    path = run.counters_file(L)
    try:
        record = run.read_counters(L)
    except ValidationError:
        issues.append((True, IssueKind.COUNTERS_UNREADABLE,
                       f"{path}: holds no 'nodes' object; it is not a counter record `pdrepro sweep` wrote"))
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        issues.append((True, IssueKind.COUNTERS_UNREADABLE,
                       f"{path}: not readable JSON ({type(exc).__name__}); rerun `pdrepro sweep` for this length "
                       "(move the file aside first) to record the counters again"))
        return None
    if record is None:
        return None
    data = record.to_json()
    if data.get("prompt_len") != L:
        # Another length's readings would witness another length's KV.
        issues.append((True, IssueKind.COUNTERS_OTHER_LENGTH,
                       f"{path}: records prompt length {data.get('prompt_len')!r}, not {L}; it is not this length's "
                       f"counter record (copied or renamed?): restore counters/{L}.json from the sweep, or rerun "
                       "the length with `pdrepro sweep`"))
        return None
    return data


def _epochs(stamp: str, offset: dt.timedelta) -> set[float]:
    """A log line's time (SGLang writes its process's local time, UTC in the images; whole seconds) as seconds
    since the epoch, read as UTC and as the sweep host's zone; empty when the stamp is no time."""
    try:
        naive = dt.datetime.fromisoformat(stamp.replace("T", " "))
    except ValueError:
        return set()
    return {naive.replace(tzinfo=zone).timestamp() for zone in {dt.timezone.utc, dt.timezone(offset)}}


# How far a length's counter readings may lie from the window the sweep recorded for it, seconds: the sweep reads
# them just before it starts the client and just after it ends, and stamps the length once the after-reading is
# written (whole seconds), so a reading of the length itself lies a moment (a remote node's read: seconds) off.
READING_SLACK_S = 120.0


def _sweep_window_problem(spans: dict, window: tuple[float, float, dt.timedelta]) -> str | None:
    """Why the counters' readings are not the ones the sweep took around its measurement of the length, or None."""
    start, end, offset = window
    zone = dt.timezone(offset)
    for role, (before, after) in sorted(spans.items()):
        if abs(before - start) <= READING_SLACK_S + 1 and abs(after - end) <= READING_SLACK_S + 1:
            continue
        shown = [dt.datetime.fromtimestamp(t, zone).strftime("%Y-%m-%d %H:%M:%S%z") for t in (before, after, start, end)]
        return (f"the {role} node's counters were read from {shown[0]} to {shown[1]}, while the sweep measured the "
                f"length from {shown[2]} to {shown[3]} (sweep-state.json): they are not readings of this length")
    return None


def _log_problem(spans: dict, stamps: list[str], offset: dt.timedelta) -> str | None:
    start = min(s[0] for s in spans.values()) - 1.0  # log times are whole seconds
    end = max(s[1] for s in spans.values()) + 1.0
    times = [found for found in (_epochs(s, offset) for s in stamps) if found]
    out = [t for t in times if not any(start <= one <= end for one in t)]
    if not out:
        return None if times else ("nothing places the readings around the length's requests (no sweep window in "
                                   "sweep-state.json, no time on the request lines)")
    return (f"{len(out)} of its {len(times)} request lines were logged outside the window the NIC counters were "
            f"read over ({end - start - 2:.1f} s), so the counters did not count (only) this length's KV (the "
            "server's clock, or its log's time zone, off the sweep's?)")


def outside_window(row: dict, stamps: list[str], offset: dt.timedelta = dt.timedelta(0),
                   window: tuple[float, float, dt.timedelta] | None = None) -> str | None:
    """Why the counters' readings are not of the stretch in which the length's requests ran, or None. The sweep's
    own window for the length (``window``, from sweep-state.json) and the request lines' times both place it."""
    spans = row.pop("nic_span", None) or {}
    if not spans:
        return None
    problem = _sweep_window_problem(spans, window) if window is not None else None
    if problem is None and (window is None or stamps):
        problem = _log_problem(spans, stamps, offset)
    return problem


def not_measured(row: dict, why: str) -> None:
    """Counters of another stretch of time witness nothing of this length: the share and each rail's split are
    not measured (what the readings moved stays in nic_nodes and nic_rails, for the report)."""
    row["nic_kv_share_pct"] = None
    row["nic_problem"] = f"{why}; rerun the length with `pdrepro sweep` to read them around it"
    for entry in row.get("nic_nodes", {}).values():
        entry["kv_share_pct"] = None
    for rail in row.get("nic_rails", []):
        if rail.get("judged"):
            rail["share_of_mean"] = None
            rail["note"] = "not measured: the counters were not read around this length's requests"


def witness_row(run: RunDir, scenario: Scenario, row: dict) -> list[tuple[bool, IssueKind, str]]:
    """Adds the NIC figures of row's length to it (nic_* keys); returns the problems found."""
    L = row["prompt_len"]
    issues: list[tuple[bool, IssueKind, str]] = []
    row.update(nic_kv_share_pct=None, nic_rate_GB_s=None, nic_problem=None, nic_nodes={}, nic_rails=[],
               nic_rails_note=None)
    data = _load(run, L, issues)
    if data is None:
        row["nic_problem"] = issues[0][2] if issues else (
            f"{run.counters_file(L)}: no RDMA port counters recorded for this length (the sweep records them "
            "where the nodes have RDMA counters); rerun the length with `pdrepro sweep`")
        return issues
    completed = row.get("requests") or 0
    extra_requests = scenario.sweep.warmup_requests + (row.get("request_errors") or 0)
    problems, shares, rates = [], [], []
    # GPUs 0..n-1 of each node of a role serve it: TP of a server x servers on the node.
    named, why_unnamed = rail_map(run.root, {
        role: scenario.parallel.tp(role) * getattr(scenario.topology, role).servers_per_node for role in SERVER_ROLES})
    row["nic_rails_note"] = why_unnamed
    for role in SERVER_ROLES:
        node = data["nodes"].get(role)
        if not isinstance(node, dict):
            continue
        # With several nodes of a role the round-robin router gives each node an even share.
        nodes = getattr(scenario.topology, role).nodes
        kv = scenario.kv_bytes(L) * completed / nodes
        ceiling = ((scenario.kv_bytes(L) * (completed + extra_requests) * (1 + ALLOWANCE["header_fraction"])
                    + ALLOWANCE["control_bytes_per_request"] * (completed + extra_requests)) / nodes
                   + scenario.kv_bytes(L) * extra_requests)
        try:
            figures = _node_bytes(role, node)
        except BadRecord as exc:
            message = (f"{run.counters_file(L)}: the {role} node's {exc}; the record is damaged or edited: rerun the "
                       "length with `pdrepro sweep`")
            issues.append((True, IssueKind.COUNTERS_IMPOSSIBLE, message))
            row["nic_problem"] = message
            return issues
        except (TypeError, ValueError, AttributeError, KeyError):
            message = (f"{run.counters_file(L)}: the {role} node's readings are not counters as the sweep records "
                       "them (numbers of 4-byte words per port, times in seconds); rerun the length with `pdrepro sweep`")
            issues.append((True, IssueKind.COUNTERS_UNREADABLE, message))
            row["nic_problem"] = message
            return issues
        if figures.get("span"):
            row.setdefault("nic_span", {})[role] = list(figures["span"])
        entry = {"counter": figures["counter"], "bytes": figures["bytes"], "window_s": figures["window_s"],
                 "source": node.get("source"), "problem": figures["problem"], "kv_share_pct": None, "rate_GB_s": None}
        row["nic_nodes"][role] = entry
        if figures["listed"]:  # a node whose counters were not read has no rails to judge
            row["nic_rails"] += rails_of_node(role, figures["counter"], figures["ports"], figures["listed"],
                                              None if named is None else named.get(role, set()),
                                              figures["window_s"], figures["rates"])
        if figures["trouble"]:
            worst = ", ".join(f"{k} +{v}" for k, v in sorted(figures["trouble"].items())[:4])
            issues.append((False, IssueKind.NIC_TROUBLE, f"length {L}: the {role} node's NICs counted drops or "
                           f"retries ({worst}); check the fabric's PFC/ECN settings"))
        if figures["bytes"] is None:
            problems.append(f"{role} node: {figures['problem']}")
            continue
        moved = figures["bytes"]
        entry["rate_GB_s"] = moved / figures["window_s"] / GB
        rates.append(entry["rate_GB_s"])
        if kv > 0:
            entry["kv_share_pct"] = moved / kv * 100
            shares.append(entry["kv_share_pct"])
        if moved > ceiling:
            issues.append((False, IssueKind.NIC_EXTRA_TRAFFIC,
                           f"length {L}: the {role} node's NICs moved {human_bytes(moved)}, more than the "
                           f"{human_bytes(ceiling)} its KV and the allowance explain: other traffic shared "
                           "them, so their count cannot single out this run's KV"))
    if shares:
        row["nic_kv_share_pct"] = min(shares)
    if rates:
        row["nic_rate_GB_s"] = max(rates)
    if not shares:
        if problems:
            row["nic_problem"] = "; ".join(problems)
        elif not completed:
            row["nic_problem"] = "no request completed, so there is no KV to compare with"
        else:
            row["nic_problem"] = f"{run.counters_file(L)}: names no prefill or decode node"
    return issues
