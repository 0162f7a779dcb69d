"""The ranker: each cause's answer into the diagnosis, the findings ordered by their share of the largest gap
(largest first), a fault before a part of a gap of the same share, then the registry's order."""

from __future__ import annotations

from ..rundir.diagnosismodel import Cause, Cleared, Diagnosis, Unknown
from .causes import base
from .causes.base import Answer
from .evidence import RunEvidence
from .gaps import Gaps


def rank(ev: RunEvidence, gaps: Gaps, answers: list[tuple[str, Answer]]) -> Diagnosis:
    found: list[tuple[int, Cause]] = []
    unknown: list[Unknown] = []
    cleared: list[Cleared] = []
    for order, (name, answer) in enumerate(answers):
        if isinstance(answer, base.Finding):
            found.append((order, Cause(name=name, fault=answer.fault, share=gaps.share(answer.loss),
                                       summary=answer.summary, evidence=list(answer.evidence), fix=answer.fix)))
        elif isinstance(answer, base.Missing):
            unknown.append(Unknown(name=name, missing=answer.missing))
        else:
            cleared.append(Cleared(name=name, why=answer.why))
    found.sort(key=lambda oc: (-oc[1].share, not oc[1].fault, oc[0]))
    return Diagnosis(run=str(ev.root), kind=ev.kind, members=[m.rel for m in ev.members], gaps=gaps.found,
                     causes=[c for _, c in found], unknown=unknown, cleared=cleared)
