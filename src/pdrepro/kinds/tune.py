"""A tune (`pdrepro tune`): a grid of knob settings and baseline repeats, each a sweep's run in RUN/<setting>/,
planned in RUN/tune-plan.json and recorded in RUN/arms-state.json under a label opening with "tune"; judged by
tune.judge (its typed summary, TuneSummary) and written by tune.collect (`pdrepro tune --collect`)."""

from __future__ import annotations

from ..rundir import RunDir, tuneplan
from ..rundir.tunesummary import TUNE_LABEL, TuneSummary
from ..scenario.model import Scenario
from ..tune.collect import collected, own_plan, passed
from . import recorded
from .composite import CompositeKind


class Tune(CompositeKind):
    name = TUNE_LABEL.word
    summary_model = TuneSummary
    judge_command = "pdrepro tune --judge RUN"
    what = "a tune of knob settings"

    def records(self, run: RunDir) -> bool:
        return recorded.arms_label_head(run) == TUNE_LABEL.word or tuneplan.path(run.root).is_file()

    def composite_summary(self, run: RunDir, scenario: Scenario | None) -> TuneSummary:
        # The tune judges its settings by their own scenarios (its plan's), not by the one given.
        summary, _text, _overlay = collected(run.root, own_plan(run.root))
        return summary

    def judged(self, run: RunDir) -> tuple[TuneSummary, str, bool]:
        # The tune judged from its settings' folders as its plan names them, as `tune --judge` judges it.
        summary, text, _overlay = collected(run.root, own_plan(run.root))
        return summary, text, passed(summary)
