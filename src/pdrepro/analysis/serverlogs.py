"""Which of a run's server logs are the run's: one per server of the scenario's topology.

RUN/logs/ holds ``<role>.log``, ``<role>-1.log`` ... (rundir.server_log_name).
A log numbered past the topology's servers (a ``prefill-1.log`` an earlier 2P2D
run left in a shared folder, in a 1P1D run) is no server of this run: merging
its requests would count another run's transfers as this one's. It is set
aside, left out of the figures, with an error naming it; fewer logs than
servers is a warning (the others' requests are missing, which the per-length
count of logged requests then fails).

The requests the figures are drawn from must be this sweep's: each logged while the sweep measured its
length (sweep-state.json: when the length ended and how long it ran), and no server may have started
again after the last of them (its later start-up lines would speak for the run). Either fault refuses the
run on one line (exit 2) rather than leave a warning under a green verdict.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..parsers.reqstats import Keep, LogScan, ReqStat
from ..parsers.serverstart import START_MARKER, start_mode
from ..rundir import RunDir, server_log_index
from ..rundir.contract import ERROR, WARNING, issue
from ..rundir.issuekind import IssueKind
from ..scenario.model import Scenario


def length_tolerance(prompt_len: int) -> int:
    """Tokens a logged input length may differ from the configured one (chat templates add a few)."""
    return max(32, prompt_len * 3 // 100)


def nearest_length(input_len: int | None, lengths: list[int]) -> int | None:
    """The sweep length a request belongs to, or None (a line without input_len belongs to none)."""
    if input_len is None:
        return None
    best = min(lengths, key=lambda L: abs(L - input_len))
    return best if abs(best - input_len) <= length_tolerance(best) else None


# How many request-stats lines of one length a scan holds: the figures are drawn from the last requests of
# each length (as many as the bench completed, after the warm-up), so a log of the usual size is held whole and
# judged as it always was, while one with a million extra lines of a length holds its newest few thousand and
# counts the rest (a 500 MB log of request lines took 2.2 GB to analyse when every line was held).
HELD_PER_REQUEST = 4
HELD_SLACK = 1000


def length_keep(scenario: Scenario, completed: dict[int, int], kind: str) -> Keep:
    """What a scan of a ``kind`` server's log holds: per sweep length, the newest lines of the client's
    requests of that length, up to a few times the requests judged; the rest grouped and bounded alike."""
    lengths = list(scenario.sweep.prompt_lens)
    warm, prompts = scenario.sweep.warmup_requests, scenario.sweep.num_prompts

    def group(stat: ReqStat) -> int | str:
        if stat.is_health_check or stat.is_server_warmup or stat.kind not in (kind, ""):
            return "other"
        L = nearest_length(stat.input_len, lengths)
        return "stray" if L is None else L

    def cap(key) -> int:
        judged = max(completed.get(key, 0), prompts) if isinstance(key, int) else prompts
        return HELD_PER_REQUEST * (warm + judged) + HELD_SLACK

    return Keep(group, cap)


def topology_logs(run: RunDir, scenario: Scenario, role: str, issues: list[dict]) -> list[Path]:
    """The role's server logs that belong to the scenario's topology, by server index."""
    t = scenario.topology
    servers = t.servers(role)
    found = run.role_logs(role)
    own = [p for p in found if (index := server_log_index(role, p.name)) is not None and index < servers]
    stray = [p for p in found if p not in own]
    if stray:
        issues.append(issue(ERROR, IssueKind.STRAY_SERVER_LOG,
                            f"{', '.join(str(p) for p in stray)}: the {t.label} topology runs {servers} {role} server(s), "
                            f"so this log is of no server of the run (left by an earlier run in a shared log folder?); "
                            f"it was set aside, not merged: move it out of {run.logs_dir}"))
    if 0 < len(own) < servers:
        issues.append(issue(WARNING, IssueKind(f"{role}_logs_missing"),
                            f"{run.logs_dir}: {len(own)} {role} server log(s), the {t.label} topology runs {servers}; the "
                            f"others' requests are not in the figures: copy every server's log ({role}.log, {role}-1.log, "
                            "...) with `pdrepro sweep --logs-from` the folder they share"))
    return own


_PD_ROLES = ("prefill", "decode")


def _latest_mode(path: Path) -> str | None:
    mode = None
    try:
        for line in runfile.lines(path):
            if START_MARKER in line:
                mode = start_mode(line)
    except (OSError, UserError):
        return None
    return mode


def refuse_wrong_role(run: RunDir, scenario: Scenario, role: str, scan: LogScan) -> None:
    """Refuses a ``role`` log whose server started as the other PD role (its latest start's
    disaggregation_mode): prefill and decode logs given the wrong way round are named as swapped, exit 2, not
    read as a run whose prefill logged no transfer."""
    if role not in _PD_ROLES or scan.mode is None or scan.mode[1] not in _PD_ROLES or scan.mode[1] == role:
        return
    line, mode = scan.mode
    other = "decode" if role == "prefill" else "prefill"
    others = run.role_logs(other)[:scenario.topology.servers(other)]
    swapped = [p for p in others if _latest_mode(p) == role]
    said = f"{scan.path}: holds a {mode} server's start (disaggregation_mode='{mode}' at line {line}), not a {role} server's"
    if swapped:
        raise UserError(f"{said}, and {swapped[0]} holds a {role} server's: the prefill and decode logs are swapped; "
                        f"give each log its own role's name (or swap the folders given as --logs-from and "
                        f"--prefill-logs-from to `pdrepro sweep`) and analyse again")
    raise UserError(f"{said}; put the {role} server's own log there (`pdrepro sweep --logs-from` its folder) and "
                    "analyse again")


def logs_label(run: RunDir, paths: list[Path]) -> str:
    """How messages name a role's logs: the file, or the files when several servers logged."""
    if len(paths) <= 1:
        return str(paths[0]) if paths else str(run.prefill_log)
    return f"{run.logs_dir}/{{{','.join(p.name for p in paths)}}}"


# ---- one run's evidence: the requests the figures are drawn from were served while the sweep measured ----------

# Log times are whole seconds, and a request's line is written a moment after the client saw it end.
_SLACK_S = 2.0
_STAMP = "%Y-%m-%dT%H:%M:%S%z"


def _window_error(where: str, what: str) -> UserError:
    return UserError(f"{where}: {what}, which no sweep-state.json `pdrepro sweep` writes holds; restore the run's "
                     "own file (or rerun `pdrepro sweep`)")


def sweep_windows(run: RunDir) -> dict[int, tuple[float, float, dt.timedelta]]:
    """Per length the sweep completed: (start, end) in seconds since the epoch, and the sweep host's UTC offset.
    The sweep records when a length ended (``at``, local time with its offset) and how long it ran (``seconds``);
    a length without both abstains."""
    path = run.sweep_state_file
    out: dict[int, tuple[float, float, dt.timedelta]] = {}
    for key, record in run.read_sweep_state().lengths.items():
        seconds = (record.model_extra or {}).get("seconds")
        if not key.isdigit() or record.status != "done" or record.at is None or seconds is None:
            continue
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                or seconds < 0:
            raise _window_error(f"{path} lengths.{key}.seconds", f"is {seconds!r}, not a duration in seconds")
        try:
            end = dt.datetime.strptime(record.at, _STAMP)
        except ValueError:
            raise _window_error(f"{path} lengths.{key}.at", f"is {record.at!r}, not a local time with its offset") from None
        offset = end.utcoffset() or dt.timedelta(0)
        out[int(key)] = (end.timestamp() - seconds, end.timestamp(), offset)
    return out


def _inside(stamp: str, start: float, end: float, offset: dt.timedelta) -> bool | None:
    """Whether a log line's time (no zone: SGLang writes its process's local time, UTC in the images) falls in
    [start, end] read as UTC or as the sweep host's zone; None when the stamp is no time."""
    try:
        naive = dt.datetime.fromisoformat(stamp.replace("T", " "))
    except ValueError:
        return None
    for zone in {dt.timezone.utc, dt.timezone(offset)}:
        t = naive.replace(tzinfo=zone).timestamp()
        if start - _SLACK_S <= t <= end + _SLACK_S:
            return True
    return False


def refuse_outside_window(L: int, samples: list[ReqStat], windows: dict[int, tuple[float, float, dt.timedelta]],
                          label: str, state_file: Path) -> None:
    """Refuses a run whose figures for ``L`` come from requests logged while the sweep was not measuring ``L``:
    they were served by an earlier start of the server, another run or another length, not by this sweep."""
    if L not in windows:
        return
    start, end, offset = windows[L]
    stamped = [s for s in samples if s.timestamp]
    outside = [s for s in stamped if _inside(s.timestamp or "", start, end, offset) is False]
    if outside:
        first = outside[0]
        when = dt.datetime.fromtimestamp(start, dt.timezone(offset)).strftime("%H:%M:%S")
        until = dt.datetime.fromtimestamp(end, dt.timezone(offset)).strftime("%H:%M:%S%z")
        raise UserError(f"{label}: {len(outside)} of the {len(stamped)} requests of length {L} the figures are drawn "
                        f"from were logged outside the {when}-{until} the sweep measured that length in ({state_file}; "
                        f"first: line {first.line_no} at {first.timestamp}); they are not this sweep's requests (an "
                        "earlier start of the server, or another run's log): keep only the sweep's own logs, or "
                        "rerun the length")


def refuse_stale_start(scan: LogScan, benchmark: list[ReqStat]) -> None:
    """Refuses a log whose server started again after the last request it served for the sweep: its latest
    start's lines (the engine's transport among them) are of a server that measured nothing of this run."""
    if not benchmark:
        return
    last = max(s.line_no for s in benchmark)
    start = 0
    for number, line in enumerate(runfile.lines(scan.path), 1):
        if START_MARKER in line:
            start = number
    if start > last:
        raise UserError(f"{scan.path}: the server started again at line {start}, after the last request it served "
                        f"for the sweep (line {last}); that later start's lines (its transport among them) are not this "
                        "run's: keep the log as the sweep left it (cut it at that line), or rerun the sweep")
