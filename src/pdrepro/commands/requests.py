"""Typed requests between a runner's stages (issue 33 item 3): what a runner hands the sweep of a member is a
``SweepRequest``, not a word list rebuilt from words.

A request holds each of the sweep's options under the name its parsed command line stores it (``model_path``,
``logs_from``, ...), so ``commands.sweep.run`` reads a request as it reads its own command line: the CLI parses
argv into the same type (``SweepRequest.from_args``) and the arms runner builds one from the member's options and
the endpoints its stack recorded (``SweepRequest.of_member``). ``run_sweep`` runs the stage in this process with
the command's own error handling (one line and exit 2 for bad input, 128 + N for a signal), as the CLI would.
The member's own options stay words where a person gave them (``--sweep-args``): they are parsed once, here, by
the sweep's own parser, so each flag means what it means on the command line.
This module declares no command of its own (``register`` adds nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sweep.config import DEFAULT_WAIT_S, FAILURE_POLICIES


def register(sub) -> None:
    """No command: the sweep's request type and its stage."""


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

    @classmethod
    def of_member(cls, words: Sequence[str], *, out: Path, router: str, prefill: str | None = None,
                  decode: str | None = None, workers: Sequence[str] = (), configuration: str | None = None,
                  ) -> SweepRequest:
        """A member's sweep: its options (``words``, as the runner recorded them) read by the sweep's own parser,
        and what the runner sets itself (the endpoints, the configuration, the run folder) as typed fields."""
        from . import sweep as command

        parser = argparse.ArgumentParser(prog="pdrepro")
        command.register(parser.add_subparsers(dest="command"))
        # The runner's own fields are typed below; the parser needs its required ones only to accept the words.
        args = parser.parse_args(["sweep", *words, "--router", router, "--out", str(out)])
        return dataclasses.replace(cls.from_args(args), router=router, prefill=prefill, decode=decode,
                                   worker=tuple(workers), configuration=configuration, out=Path(out))


def run_sweep(request: SweepRequest) -> int:
    """The sweep stage on ``request``, in this process, with the command's own error handling."""
    from . import run_guarded
    from . import sweep as command

    return run_guarded("sweep", lambda req: command.run(req), request)  # looked up at the call: one module's run
