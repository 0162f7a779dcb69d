"""A knob: a tune in the same folder, or beside it, that found a setting better than the run's own (tune.judge's
summary: the best setting's knobs and its mean bandwidth gain over the baseline beyond the baseline's spread). A
gain g% means the baseline reaches 100 / (100 + g) of the best, so the knob can cost g / (100 + g) of the figure.
A tune with no better setting rules the knobs of its grid out."""

from __future__ import annotations

from ..evidence import RunEvidence
from ..gaps import Gaps
from .base import Answer, Cause, Cleared, Finding, Missing, item


class Knob(Cause):
    name = "a knob"

    def read(self, ev: RunEvidence, gaps: Gaps) -> Answer:
        tune = ev.tune
        if tune is None:
            return Missing("no tune in the folder or beside it (`pdrepro tune` tries the knobs on this scenario)"
                           + (f": {ev.tune_problem}" if ev.tune_problem else ""))
        where = ev.rel(ev.tune_root) if ev.tune_root is not None else "the tune"
        if tune.best is None:
            knobs = ", ".join(k.name for k in tune.knobs)
            return Cleared(f"the tune ({where}) found no setting of {knobs or 'its grid'} beating the baseline beyond "
                           "its spread" + (f" (not judged over TCP: {', '.join(t.name for t in tune.tcp_cannot_judge)})"
                                           if tune.tcp_cannot_judge else ""))
        best = tune.best
        gain = max(0.0, best.mean_gain_pct)
        loss = gain / (100.0 + gain)
        values = ", ".join(f"{k}={v}" for k, v in sorted(best.values.items()))
        evidence = (item("knob", where, f"setting {best.setting}: {values}: +{best.mean_gain_pct:.1f}% mean bandwidth "
                                        f"over the baseline, better at {best.better_at}"),
                    *(item("figure", e, "a run the best setting's figures are drawn from") for e in best.evidence[:4]))
        return Finding(fault=True, loss=loss,
                       summary=f"the tune found {values} better by {best.mean_gain_pct:.1f}% on average "
                               f"(setting {best.setting})",
                       evidence=evidence, fix=f"run with {values}: the tune wrote the overlay {best.overlay}")
