"""One interface for a kind of run: recognise a run folder by what it records, build its typed summary, judge
it (what `pdrepro check` prints and exits with) and write its report (what `pdrepro analyze` writes).

A kind that makes one run's summary.json (sweep, smoke, compare) shares the check and analyze commands'
output (``summarykind.SummaryKind``); a composite kind (ab, tune, load) holds its members and its own summary
file, and its judge is its own (``pdrepro ab --judge``, ``pdrepro tune --collect``, the load's steps).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from pydantic import BaseModel

from ..rundir import RunDir
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..scenario.model import Scenario
from ..verdicts.outcome import Verdict


class RunKind(ABC):
    """A kind of run. ``name`` is the kind as the folder records it (its provenance, its state file's label, its
    scenario's kind); ``measures_ttft`` and ``has_fabric`` say what its summary can be judged on."""

    name: ClassVar[str]
    # The model of the summary the kind builds and judges (summary.json's kind, or the composite's own file).
    summary_model: ClassVar[type[BaseModel]]
    # The rows hold a TTFT the bench client measured (a sweep does; the smoke times bare transfers).
    measures_ttft: ClassVar[bool] = True
    # The KV crossed a fabric whose line rate and NIC counters bear on the figures (the smoke's containers: no).
    has_fabric: ClassVar[bool] = True

    @abstractmethod
    def records(self, run: RunDir) -> bool:
        """The folder records this kind (its own files say so; the folder's name is never asked)."""

    def for_scenario(self, scenario: Scenario) -> bool:
        """A folder that records no kind is judged as this one when the scenario given is of this kind."""
        return False

    @abstractmethod
    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        """`pdrepro check RUN`: the run judged in memory, as a typed verdict (its text, its data for --json, its
        exit status); printing it is the command's, and nothing is written."""

    @abstractmethod
    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        """`pdrepro analyze RUN`: build the kind's typed summary and write it with its report."""

    def composite_summary(self, run: RunDir, scenario: Scenario | None) -> BaseModel | None:
        """A composite's own summary beyond its members' (a load's steps, a tune's settings), judged in memory for
        the readers that look past one run's figures (`pdrepro diagnose`); None where the kind has none."""
        return None
