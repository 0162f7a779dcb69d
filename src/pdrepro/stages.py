"""The stages a runner is handed (issue 33 item 3): each a callable that takes its typed request and returns the
stage's exit status (0, 1 a failed measurement, 2 bad input, 128 + N a signal), never a list of command words.

``Stages`` bundles the four a member of a composite run goes through: its stack up, its sweep, its stack down, and
the analysis of a member measured whole by an earlier run. commands.requests.STAGES is the CLI's own (each
command's function, in this process, with the CLI's error handling); a command hands the arms runner that, or one
with a stage of its own (a comparison's sweep of several scenarios; a test's stand-in). ``Reproduction`` is
`pdrepro repro`'s (commands.requests.REPRODUCTION): its preflight, pair check, sweep and judging. Light on purpose:
the request types are named for the type checker only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .fabric.request import DoctorRequest, PairRequest
    from .launch.stack.request import StackDownRequest, StackUpRequest
    from .rundir.request import AnalyzeRequest, CheckRequest
    from .sweep.request import SweepRequest


@dataclass(frozen=True)
class Stages:
    stack_up: Callable[[StackUpRequest], int]
    sweep: Callable[[SweepRequest], int]
    stack_down: Callable[[StackDownRequest], int]
    analyze: Callable[[AnalyzeRequest], int]


@dataclass(frozen=True)
class Judging:
    """The stages that analyse and judge a finished run (`pdrepro repro`'s third and fourth, a comparison's end)."""

    analyze: Callable[[AnalyzeRequest], int]
    check: Callable[[CheckRequest], int]


@dataclass(frozen=True)
class Reproduction:
    """The stages of the reproduction pipeline (pdrepro.pipeline): this node's checks (`pdrepro doctor --role`),
    the two nodes' records held against each other (`doctor --pair`), the sweep, then the run's judging."""

    doctor: Callable[[DoctorRequest], int]
    pair: Callable[[PairRequest], int]
    sweep: Callable[[SweepRequest], int]
    judging: Judging
