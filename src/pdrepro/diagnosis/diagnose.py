"""`pdrepro diagnose RUN`: the run's evidence gathered once, its gaps measured, every cause asked, the answers
ranked. Reads only; nothing in RUN is written."""

from __future__ import annotations

from pathlib import Path

from ..rundir.diagnosismodel import Diagnosis
from .causes.registry import CAUSES
from .evidence import gather
from .gaps import measure
from .rank import rank


def diagnose(root: Path, scenario: str | None = None) -> Diagnosis:
    ev = gather(Path(root), scenario)
    gaps = measure(ev)
    return rank(ev, gaps, [(cause.name, cause.read(ev, gaps)) for cause in CAUSES])


def render(d: Diagnosis) -> str:
    """The diagnosis for people: the gaps, the causes ranked with their evidence and fix, the unknowns."""
    out = [f"diagnosis of {d.run} ({d.kind} run; read: {', '.join(d.members) or 'its own summary'})", ""]
    out.append("gaps:" if d.gaps else "gaps: none measured (no figure with a reference to hold it against)")
    out += [f"  {g.name}: {g.fraction * 100:.1f}% short ({g.measured:.3g} of {g.reference:.3g} {g.unit}; {g.where})"
            for g in d.gaps]
    out.append("")
    out.append("causes, ranked:" if d.causes else "causes: none found in the run's evidence")
    for i, c in enumerate(d.causes, start=1):
        out.append(f"  {i}. {c.name}{' (fault)' if c.fault else ''}: share {c.share:.2f} of the largest gap")
        out.append(f"     {c.summary}")
        for e in c.evidence:
            where = f"{e.file}:{e.line}" if e.line is not None else e.file
            out.append(f"     - {e.kind} {where}: {e.text}")
        out.append(f"     fix: {c.fix}")
    if d.unknown:
        out += ["", "unknown (no evidence in the run):"] + [f"  {u.name}: {u.missing}" for u in d.unknown]
    if d.cleared:
        out += ["", "ruled out:"] + [f"  {c.name}: {c.why}" for c in d.cleared]
    return "\n".join(out)
