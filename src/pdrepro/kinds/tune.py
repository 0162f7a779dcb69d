"""A tune (`pdrepro tune`): a grid of knob settings and baseline repeats, each a sweep's run in RUN/<setting>/,
planned in RUN/tune-plan.json and recorded in RUN/arms-state.json under a label opening with "tune"; judged by
tune.judge (its typed summary, TuneSummary) and written by tune.collect (`pdrepro tune --collect`)."""

from __future__ import annotations

from ..core.errors import UserError
from ..rundir import RunDir, armsstate, tuneplan
from ..rundir.tunesummary import TUNE_LABEL, TuneSummary
from ..tune.collect import collected
from ..tune.judge import judge
from . import recorded
from .composite import CompositeKind


class Tune(CompositeKind):
    name = TUNE_LABEL.word
    summary_model = TuneSummary
    judge_command = "pdrepro tune --judge RUN"
    what = "a tune of knob settings"

    def records(self, run: RunDir) -> bool:
        return recorded.arms_label_head(run) == TUNE_LABEL.word or tuneplan.path(run.root).is_file()

    def summary(self, run: RunDir) -> TuneSummary:
        """The tune judged from its settings' folders as its plan names them, without writing into them."""
        plan = tuneplan.read(run.root)
        if plan is None:
            raise UserError(f"{tuneplan.path(run.root)}: missing; the tune's settings are planned there")
        state = armsstate.read(run.root)
        return judge(run.root, plan, state if state is not None and state.label == plan.label else None)

    def judged(self, run: RunDir) -> tuple[TuneSummary, str, bool]:
        plan = tuneplan.read(run.root)
        if plan is None:
            raise UserError(f"{tuneplan.path(run.root)}: missing; the tune's settings are planned there")
        state = armsstate.read(run.root)
        if state is not None and state.label != plan.label:
            raise UserError(f"{armsstate.path(run.root)}: holds {state.label!r}, not this tune's {plan.label!r}; the "
                            "folder mixes two runs: give the tune's own folder")
        summary, text, _overlay = collected(run.root, plan)
        return summary, text, all(r.passed for s in summary.settings for r in s.runs)
