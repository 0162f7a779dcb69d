"""What `pdrepro stack up` started, written into the run (RUN/stack.json) as it goes, so that
`stack down` stops exactly those processes and `stack status` can say how they are.

The record is a claim, not a proof: `stack down` and `status` prove each process against /proc
(launch/stack/proof.py) before they call it ours. Each entry is written before its process is spawned
and completed after, and the stack id every child carries in its environment names what a signal at
the wrong moment kept out of the record."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ...core import runfile
from ...core.errors import UserError
from ...core.roles import Role
from ...core.strictmodel import Record, load
from ...rundir.contract import write_json_atomic
from ...rundir.layout import STACK_FILE
from .kinds import STACK_KINDS, StackKind  # noqa: F401  (declared without pydantic for the CLI; read from here too)

FILE_NAME = STACK_FILE
ROLES = tuple(r.value for r in Role)  # prefill, decode, router, regular


class Started(Record):
    """One process the launcher started, in its own session (its PID is its process group)."""

    name: str                          # prefill-0, decode-0, router
    role: Role
    # None: recorded before its spawn, and the spawn did not happen (or was not recorded: the stack id finds it).
    pid: int | None = None
    # Clock ticks after boot at which the process started (/proc/PID/stat field 22): with the
    # boot id, this tells the process apart from a later one given the same PID; None: it had ended
    # before its start time could be read, or it was not spawned.
    start_ticks: int | None = None
    port: int | None = None            # the port it serves on, which it must hold to count as up (version 1: none)
    argv: tuple[str, ...]
    # The command line /proc showed once the process was up, where it differs from argv: SGLang's router
    # renames itself in place (`sglang::router`). Read while the process was the launcher's own unreaped
    # child, so it names that very process; down proves the command line against argv or this.
    title: tuple[str, ...] | None = None
    env: dict[str, str]                # set on top of the launcher's own environment
    env_removed: tuple[str, ...] = ()  # inherited variables the launch sets itself, dropped when it does not
    log: str                           # relative to the run directory
    health_url: str
    started_at: str                    # UTC, ISO 8601
    healthy_after_s: float | None = None


class StackRecord(Record):
    # Version 1 records (the recorded runs) hold no stack id and no ports: they are read, but nothing
    # they name can be proven this stack's, so nothing is ever signalled through them.
    schema_version: Literal[1, 2] = 2
    # Random, one per `stack up`; every child has PDREPRO_STACK_ID=<it> in its environment.
    stack_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")] | None = None
    scenario: str
    target: Literal["onebox"] = "onebox"
    # Which of the scenario's stacks runs: the disaggregated one (prefill, decode, router) or a comparison's
    # regular one (regular-0, regular-1 and the router in regular mode).
    stack: StackKind = "disaggregated"
    launcher: Literal["host"] = "host"
    boot_id: str
    python: str                        # the interpreter of every argv (sys.executable of `stack up`)
    python_version: str
    # Distribution -> version installed in that Python (None: not installed as a distribution).
    packages: dict[str, str | None]
    # Module -> the file that Python imports it from.
    modules: dict[str, str]
    # The engine and transfer backend the plan ran (registry names); older records hold none, read as the
    # scenario's (whose default backend is the one those runs used).
    engine: str | None = None
    transfer_backend: str | None = None
    # Flags `stack up --server-arg` set over the scenario's own launch.extra_server_args (the last one given
    # wins): "--flag: the scenario's V, --server-arg's W".
    server_arg_overrides: tuple[str, ...] = ()
    processes: tuple[Started, ...] = ()
    stopped_at: str | None = None


def path(run: Path) -> Path:
    return Path(run) / FILE_NAME


def save(run: Path, record: StackRecord) -> None:
    write_json_atomic(path(run), record.model_dump(mode="json"), indent=2)


def read(run: Path) -> StackRecord:
    file = path(run)
    if not file.is_file():
        raise UserError(f"{run}: no {FILE_NAME} there; give the run folder `pdrepro stack up --out RUN` wrote")
    try:
        data = runfile.read_json(file)
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"{file}: not readable JSON ({exc}); it is written by `pdrepro stack up`") from None
    return load(StackRecord, data, str(file),
                fix=f"{FILE_NAME} is written by `pdrepro stack up`; nothing a record that is not one names is "
                    "proven this stack's, so nothing is signalled through it")
