"""What one `pdrepro sweep` is asked to do, as a typed request (issue 33 item 3): the command line parses into it
(commands.sweep) and a runner builds one per member (commands.requests, pdrepro.arms), so the sweep is handed
the same type either way, not a word list rebuilt from words. Each field is named as the sweep's option stores it
(``model_path``, ``logs_from``, ...): the sweep command reads a request as it reads its parsed command line.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..core.flagwords import flag_words
from .choices import DEFAULT_WAIT_S, FAILURE_POLICIES

# What a runner sets on each member's sweep itself: the endpoints its stack recorded, its run folder, its
# configuration. A runner's state records a member's sweep without them.
RUNNER_FIELDS = ("router", "prefill", "decode", "worker", "out", "configuration")


@dataclass(frozen=True)
class SweepRequest:
    """One `pdrepro sweep`: where to send (router, prefill, decode, workers), what to run (scenario, lengths),
    with which files (model, dataset, the servers' logs) and where the run goes (out, configuration)."""

    scenario: str
    out: Path
    router: str
    model_path: str
    dataset_path: str
    prefill: str | None = None
    decode: str | None = None
    worker: tuple[str, ...] = ()
    configuration: str | None = None
    thresholds: str | None = None
    served_model_name: str | None = None
    tokenizer: str | None = None
    image: str | None = None
    bench_in_place: bool = False
    logs_from: str | None = None
    prefill_logs_from: str | None = None
    prefill_container: str = "pdrepro-prefill"
    decode_container: str = "pdrepro-decode"
    router_container: str = "pdrepro-router"
    length_timeout: float | None = None
    wait_timeout: float = DEFAULT_WAIT_S
    on_failure: str = FAILURE_POLICIES[0]
    metrics: bool = False
    no_transport_proof: bool = False
    ib_devices: Path | None = None
    prompt_lens: str | None = None
    no_analyze: bool = False
    func: object = field(default=None, compare=False, repr=False)  # what the parsed command line carries

    @classmethod
    def from_args(cls, args) -> SweepRequest:
        """The request a parsed `pdrepro sweep` command line (or a request) holds."""
        if isinstance(args, cls):
            return args
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        values["worker"] = tuple(values.get("worker") or ())
        values["out"] = Path(values["out"])
        return cls(**values)

    def words(self) -> tuple[str, ...]:
        """The request as `pdrepro sweep` flags, without what a runner sets (``RUNNER_FIELDS``): how a runner's state
        records a member's sweep."""
        return flag_words(self, skip=RUNNER_FIELDS)

    def command_line(self) -> str:
        """The whole request as the `pdrepro sweep` command a person could run again, shell-quoted: for display (a
        message naming what stopped); the stage itself is handed the request."""
        return shlex.join(["pdrepro", "sweep", *flag_words(self)])
