"""What kind of run a folder holds, from the files only that kind writes, and a smoke's summary made again
from its raw result.

A sweep leaves bench/, counters/ and sweep-state.json; a smoke leaves its agents' results in raw/ (both keep
the servers' or containers' logs in logs/, so logs/ tells nothing). A smoke summarises as it measures, so
its raw result (raw/initiator.json) and provenance.json are the inputs its summary is made again from.
"""

from __future__ import annotations

from typing import Any

from ..core import runfile
from ..core.errors import UserError
from ..rundir import RunDir
from ..rundir.summarymodel import RunProvenance
from ..scenario.model import Scenario
from ..smoke.summary import build_summary

# Files only `pdrepro sweep` (or a copy of its run) leaves in a run directory: a smoke writes none of them.
SWEEP_MARKS = ("bench", "counters", "sweep-state.json")


def sweep_marks(run: RunDir) -> list[str]:
    return [name for name in SWEEP_MARKS if (run.root / name).exists()]


def smoke_result(run: RunDir) -> bool:
    """The run holds a smoke agent's raw result (anything there, so a damaged one is refused by name)."""
    path = run.agent_result("initiator")
    return path.exists() or path.is_symlink()


def _smoke_provenance(run: RunDir) -> bool:
    """provenance.json says the smoke recorded it (an unreadable one says nothing here: its reader names it)."""
    try:
        data = runfile.read_json(run.provenance_file) if run.provenance_file.is_file() else None
        return data is not None and RunProvenance.model_validate(data).kind == "smoke"
    except (OSError, ValueError):
        return False


def is_smoke_run(run: RunDir) -> bool:
    """A smoke's run: its raw result or its provenance, and none of the sweep's files (both at once is refused
    by name). A smoke's run whose raw result is gone is refused where its summary would be made again."""
    if not smoke_result(run) and not _smoke_provenance(run):
        return False
    marks = sweep_marks(run)
    if marks:
        raise UserError(f"{run.root}: holds a smoke's files (raw/{run.agent_result('initiator').name} or a smoke's "
                        f"provenance.json) and a sweep's ({', '.join(marks)}): two runs in one folder judge nothing; "
                        "keep each run in its own folder")
    return True


def _json_object(path: Any, what: str, fix: str) -> dict[str, Any]:
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable as {what} ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: is not {what} (a JSON object); {fix}")
    return data


def smoke_summary(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """The smoke's summary made again from raw/initiator.json and provenance.json, in memory."""
    fix = "measure again with `pdrepro smoke`"
    if not smoke_result(run):
        raise UserError(f"{run.agent_result('initiator')}: missing, and a smoke's summary is made from it (the run's "
                        f"provenance.json says the smoke recorded it); {fix}")
    initiator = _json_object(run.agent_result("initiator"), "a smoke agent's result", fix)
    provenance = _json_object(run.provenance_file, "the smoke's provenance", fix) if run.provenance_file.exists() else {}
    try:
        return build_summary(scenario, initiator, provenance)
    except UserError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        # The agent writes one shape (smoke/initiator.py); anything else was changed after it was written.
        raise UserError(f"{run.agent_result('initiator')}: not the shape a smoke agent writes ({type(exc).__name__}: "
                        f"{exc}); {fix}") from None
