"""The sweep stage of a runner (issue 33 item 3): each member's sweep is a typed request (sweep.request.
SweepRequest), not a word list rebuilt from words.

``member_request`` builds a member's request: its options, as the runner recorded them (``--sweep-args`` a person
gave among them), read once by the sweep's own parser, so each flag means what it means on the command line; and
what the runner sets itself (the endpoints its stack recorded, the configuration, the run folder) as typed fields.
``run_sweep`` runs the stage in this process by the sweep command's own function with the CLI's error handling
(one line and exit 2 for bad input, 128 + N for a signal). ``SWEEP`` is the stage the arms runner is handed.
This module declares no command of its own (``register`` adds nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ..sweep.request import SweepRequest


def register(sub) -> None:
    """No command: the sweep stage of the runners."""


def member_request(words: Sequence[str], *, out: Path, router: str, prefill: str | None = None,
                   decode: str | None = None, workers: Sequence[str] = (), configuration: str | None = None,
                   ) -> SweepRequest:
    """A member's sweep: its options read by the sweep's own parser, the runner's own fields typed."""
    from . import sweep as command

    parser = argparse.ArgumentParser(prog="pdrepro")
    command.register(parser.add_subparsers(dest="command"))
    # The runner's own fields are set below; the parser is given its required ones only to accept the words.
    args = parser.parse_args(["sweep", *words, "--router", router, "--out", str(out)])
    return dataclasses.replace(SweepRequest.from_args(args), router=router, prefill=prefill, decode=decode,
                               worker=tuple(workers), configuration=configuration, out=Path(out))


def run_sweep(request: SweepRequest) -> int:
    """The sweep stage on ``request``, in this process, with the command's own error handling."""
    from . import run_guarded
    from . import sweep as command

    return run_guarded("sweep", lambda req: command.run(req), request)  # looked up at the call: one module's run


class Sweep:
    """The sweep stage as the arms runner takes it (arms.SweepStage): a request per member, then the stage."""

    def request(self, words: Sequence[str], **fields) -> SweepRequest:
        return member_request(words, **fields)

    def __call__(self, request: SweepRequest) -> int:
        return run_sweep(request)


SWEEP = Sweep()
