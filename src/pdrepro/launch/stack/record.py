"""What `pdrepro stack up` started, written into the run (RUN/stack.json) as it goes, so that
`stack down` stops exactly those processes and `stack status` can say how they are."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ...core.errors import UserError
from ...core.roles import Role
from ...core.strictmodel import Record, load
from ...rundir.contract import write_json_atomic
from ...rundir.layout import STACK_FILE

FILE_NAME = STACK_FILE
ROLES = tuple(r.value for r in Role)  # prefill, decode, router


class Started(Record):
    """One process the launcher started, in its own session (its PID is its process group)."""

    name: str                          # prefill-0, decode-0, router
    role: Role
    pid: int
    # Clock ticks after boot at which the process started (/proc/PID/stat field 22): with the
    # boot id, this tells the process apart from a later one given the same PID; -1: it had ended
    # before its start time could be read.
    start_ticks: int
    argv: tuple[str, ...]
    env: dict[str, str]                # set on top of the launcher's own environment
    env_removed: tuple[str, ...] = ()  # inherited variables the launch sets itself, dropped when it does not
    log: str                           # relative to the run directory
    health_url: str
    started_at: str                    # UTC, ISO 8601
    healthy_after_s: float | None = None


class StackRecord(Record):
    schema_version: Literal[1] = 1
    scenario: str
    target: Literal["onebox"] = "onebox"
    launcher: Literal["host"] = "host"
    boot_id: str
    python: str                        # the interpreter of every argv (sys.executable of `stack up`)
    python_version: str
    # Distribution -> version installed in that Python (None: not installed as a distribution).
    packages: dict[str, str | None]
    # Module -> the file that Python imports it from.
    modules: dict[str, str]
    processes: tuple[Started, ...] = ()
    stopped_at: str | None = None


def path(run: Path) -> Path:
    return Path(run) / FILE_NAME


def save(run: Path, record: StackRecord) -> None:
    write_json_atomic(path(run), record.model_dump(mode="json"), indent=2)


def read(run: Path) -> StackRecord:
    import json

    file = path(run)
    if not file.is_file():
        raise UserError(f"{run}: no {FILE_NAME} there; give the run folder `pdrepro stack up --out RUN` wrote")
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{file}: not readable JSON ({exc}); it is written by `pdrepro stack up`") from None
    return load(StackRecord, data, str(file))
