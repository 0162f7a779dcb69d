"""An A/B of transfer backends (`pdrepro ab`): one arm per backend, each a sweep's run in RUN/<arm>/, recorded in
RUN/arms-state.json under a label opening with "ab"; judged by publish.abjudge (its typed summary, AbSummary)."""

from __future__ import annotations

from ..core.errors import UserError
from ..publish.abjudge import ArmInput, judge
from ..report.ab import render as render_report
from ..rundir import RunDir, armsstate
from ..rundir.absummary import AB_LABEL, AbSummary
from . import recorded
from .composite import CompositeKind


class Ab(CompositeKind):
    name = AB_LABEL.word
    summary_model = AbSummary
    judge_command = "pdrepro ab --judge RUN"
    what = "an A/B of transfer backends"

    def records(self, run: RunDir) -> bool:
        return recorded.arms_label_head(run) == AB_LABEL.word

    def summary(self, run: RunDir) -> AbSummary:
        """The A/B judged from its arms' folders as its state names them, without writing into them."""
        state = armsstate.read(run.root)
        if state is None:
            raise UserError(f"{armsstate.path(run.root)}: missing; the A/B's arms are named there")
        return judge(run.root, state.label, [ArmInput(a.name, a.backend, a.unfinished()) for a in state.arms])

    def judged(self, run: RunDir) -> tuple[AbSummary, str, bool]:
        state = armsstate.read(run.root)
        for arm in state.arms if state is not None else []:
            if not (run.root / arm.name).is_dir():  # as `ab --judge` refuses it: nothing of that arm to judge
                raise UserError(f"{run.root / arm.name}: no such arm folder; run the arm (or its job) first")
        summary = self.summary(run)
        return summary, render_report(summary), summary.passed
