"""The serving engine and the transfer backend of a scenario, and of a run: the one question every reader
downstream (the sweep, the analysis, the verdicts, the report) asks instead of spelling a name.

A run's backend is the one its stack record says `pdrepro stack up` ran (a site's --transfer-backend may
override the scenario's); where the run holds no such record, or the record names none (older runs), the
scenario's launch.transfer_backend, whose default is the backend those runs used.
"""

from __future__ import annotations

from pathlib import Path

from .. import backends, engines
from ..backends import TransferBackend
from ..core import advice, runfile
from ..core.errors import UserError
from ..engines import ServingEngine
from ..rundir.layout import STACK_FILE
from ..rundir.summarymodel import Summary
from .launch_section import Launch
from .model import Scenario

DEFAULT_ENGINE: str = Launch.model_fields["engine"].default
DEFAULT_BACKEND: str = Launch.model_fields["transfer_backend"].default


def engine_of(scenario: Scenario) -> ServingEngine:
    return engines.engine(scenario.launch.engine if scenario.launch else DEFAULT_ENGINE)


def backend_of(scenario: Scenario) -> TransferBackend:
    return backends.backend(scenario.launch.transfer_backend if scenario.launch else DEFAULT_BACKEND)


def run_backend(run_root: Path, scenario: Scenario) -> TransferBackend:
    """The backend the run's servers ran: its stack record's, else the scenario's."""
    path = Path(run_root) / STACK_FILE
    if not path.is_file():
        return backend_of(scenario)
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError, RecursionError, UserError):
        # The analysis refuses an unreadable stack record where it reads it for proof; here it names nothing.
        return backend_of(scenario)
    name = data.get("transfer_backend") if isinstance(data, dict) else None
    if name is None:
        return backend_of(scenario)
    if not isinstance(name, str) or name not in backends.names():
        raise UserError(f"{path}: transfer_backend is {name!r}, not a backend the bundle knows "
                        f"({', '.join(backends.names())}); restore the record `pdrepro stack up` wrote")
    return backends.backend(name)


def summary_engine(summary: Summary) -> ServingEngine | None:
    """The engine that measured a summary's rows; None for a summary no engine measured (the smoke's)."""
    return engines.engine(summary.source) if summary.source in engines.names() else None


def summary_backend(summary: Summary) -> TransferBackend:
    """The backend whose lines the analysis read (summaries older than that field: the default, which they ran)."""
    name = summary.transport_evidence.backend if summary.transport_evidence else None
    if name is not None and name not in backends.names():
        raise UserError(f"summary.json transport_evidence.backend is {name!r}, not a backend the bundle knows "
                        f"({', '.join(backends.names())}); rerun `{advice.analyze(advice.RUN)}` on the run that holds it")
    return backends.backend(name or DEFAULT_BACKEND)
