"""What one `pdrepro stack up` or `stack down` is asked to do, as a typed request (issue 33 item 3).

The command line parses into it (commands.stack) and a runner builds one per member (commands.requests, at the
edge where a composite command's options are checked), so the stage is handed the same type either way, never a
word list rebuilt from words. Each field is named as the command's option stores it (``prefill_ip``,
``server_arg``, ...): the stack command reads a request as it reads its parsed command line. Light on purpose (no
pydantic, no YAML): the command line imports it while it builds its parser.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ...core.flagwords import flag_words
from ..site import DEFAULT_LOG_DIR, MEMLOCK_UNLIMITED, SERVER_START_SECONDS
from .kinds import STACK_KINDS

DEFAULT_SCENARIO = "onebox-qwen25-0.5b"


def _values(cls, args) -> dict:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}


@dataclass(frozen=True)
class StackUpRequest:
    """One `pdrepro stack up`: which scenario's stack (and which of its stacks), on which site (model, dataset,
    GPUs, address, the servers' memory share and extra flags, the transfer backend), how long to wait for it,
    and its run folder (``out``: logs/, stack.json)."""

    out: Path
    target: str = "onebox"
    launcher: str = "host"
    scenario: str = DEFAULT_SCENARIO
    stack: str = STACK_KINDS[0]
    prefill_ip: str | None = None
    model: str | None = None
    dataset: str | None = None
    gpus: str | None = None
    mem_fraction: float | None = None
    server_arg: tuple[str, ...] = ()
    transfer_backend: str | None = None
    force_tcp: bool = False
    start_timeout: float = float(SERVER_START_SECONDS)
    poll: float = 1.0
    progress_every: float = 10.0
    grace: float = 30.0
    sysfs_root: Path = Path("/sys")  # where the node records (RUN/nodes) read the node's sysfs
    # The render options a one-box host launch does not take, at the values render gives them.
    decode_ip: str | None = None
    ib_devices: str | None = None
    log_dir: str = DEFAULT_LOG_DIR
    memlock: int = MEMLOCK_UNLIMITED
    func: object = field(default=None, compare=False, repr=False)  # what the parsed command line carries

    @classmethod
    def from_args(cls, args) -> StackUpRequest:
        """The request a parsed `pdrepro stack up` command line (or a request) holds."""
        if isinstance(args, cls):
            return args
        values = _values(cls, args)
        values["server_arg"] = tuple(values.get("server_arg") or ())
        values["out"] = Path(values["out"])
        return cls(**values)

    def words(self) -> tuple[str, ...]:
        """The request as `stack up` flags, without --out: how a runner's state records a member's stack."""
        return flag_words(self, skip=("out",))


@dataclass(frozen=True)
class StackDownRequest:
    """One `pdrepro stack down`: the run folder whose recorded stack is stopped, and the grace before SIGKILL."""

    run: Path
    grace: float = 30.0
    func: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_args(cls, args) -> StackDownRequest:
        if isinstance(args, cls):
            return args
        return cls(**{**_values(cls, args), "run": Path(args.run)})
