"""Which of a run's server logs are the run's: one per server of the scenario's topology.

RUN/logs/ holds ``<role>.log``, ``<role>-1.log`` ... (rundir.server_log_name).
A log numbered past the topology's servers (a ``prefill-1.log`` an earlier 2P2D
run left in a shared folder, in a 1P1D run) is no server of this run: merging
its requests would count another run's transfers as this one's. It is set
aside, left out of the figures, with an error naming it; fewer logs than
servers is a warning (the others' requests are missing, which the per-length
count of logged requests then fails).
"""

from __future__ import annotations

from pathlib import Path

from ..rundir import RunDir, server_log_index
from ..rundir.contract import ERROR, WARNING, issue
from ..rundir.issuekind import IssueKind
from ..scenario.model import Scenario


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


def logs_label(run: RunDir, paths: list[Path]) -> str:
    """How messages name a role's logs: the file, or the files when several servers logged."""
    if len(paths) <= 1:
        return str(paths[0]) if paths else str(run.prefill_log)
    return f"{run.logs_dir}/{{{','.join(p.name for p in paths)}}}"
