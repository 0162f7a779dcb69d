"""One interface for a cause of a shortfall: it reads the run's evidence (diagnosis.evidence) and the gaps
(diagnosis.gaps) and answers with a finding (its evidence, what it can cost, its fix), with what evidence the run
lacks to say, or with what rules it out. A cause never guesses: where the run holds nothing on it, it is missing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from ...rundir.diagnosismodel import EvidenceItem
from ..evidence import RunEvidence
from ..gaps import Gaps


@dataclass(frozen=True)
class Finding:
    """The cause is seen. ``loss``: the fraction of the run's figure it can cost (0 to 1), which the ranker turns
    into its share of the largest gap; ``fault``: the evidence shows something wrong, listed whatever the gaps."""

    fault: bool
    loss: float
    summary: str
    evidence: tuple[EvidenceItem, ...]
    fix: str


@dataclass(frozen=True)
class Missing:
    """The run holds no evidence on the cause: what it lacks, and how to record it."""

    missing: str


@dataclass(frozen=True)
class Cleared:
    """The run's evidence rules the cause out."""

    why: str


Answer = Finding | Missing | Cleared


class Cause(ABC):
    name: ClassVar[str]

    @abstractmethod
    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        """The cause judged from the run's evidence; nothing is written."""


def item(kind: str, file: str, text: str, line: int | None = None) -> EvidenceItem:
    return EvidenceItem.model_validate({"kind": kind, "file": file, "line": line, "text": text[:500]})
