"""A tune's results: RUN/tune-summary.json, RUN/tune-report.md and RUN/best-overlay.yaml. ``collected`` makes
them in memory (`tune --judge` prints them and writes nothing into RUN); ``collect`` is the runner's end: it
writes them next to the settings' run folders, never inside one, and never over a file the tune did not write
(rundir.ownoutputs).

The overlay is the best setting as a scenario overlay: the launch keys to put over the scenario's own (the
variables it changes, and the servers' extra flags as that setting ran them), with its evidence in comments.
With no setting whose confidence interval clears the baseline's, the overlay is an empty mapping that says so
(a stale overlay from an earlier collection is replaced, never left behind).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from ..core.errors import UserError
from ..report.tune import render as render_report
from ..rundir import armsstate, ownoutputs, tuneplan
from ..rundir.contract import dumps_json
from ..rundir.tuneplan import TunePlan
from ..rundir.tunesummary import TUNE_LABEL, TuneBest, TuneSummary
from ..scenario.model import load_scenario
from .judge import judge, pick_best

SUMMARY, REPORT, OVERLAY = "tune-summary.json", "tune-report.md", "best-overlay.yaml"


def _overlay(run: Path, summary: TuneSummary, best: TuneBest | None) -> str:
    head = [f"# pdrepro tune: {TUNE_LABEL.strip(summary.label)}", f"# rule: {summary.rule}"]
    if best is None and summary.unmeasured:
        return "\n".join([*head, f"# Not judged yet: {', '.join(summary.unmeasured)} measured nothing; rerun the tune "
                          "with the same options to resume it: nothing to change until then.", "{}", ""])
    if best is None:
        return "\n".join([*head, "# No setting's interval cleared the baseline's without falling below it at a length: "
                          "nothing to change.", "{}", ""])
    setting = summary.setting(best.setting)
    scenario = load_scenario(run / setting.scenario_file)
    assert scenario.launch is not None  # a setting's scenario is a launch scenario (grid.check)
    kinds = {k.name: k.kind for k in summary.knobs}
    launch: dict = {}
    env = {k: v for k, v in setting.values.items() if kinds.get(k) == "env"}
    if env:
        launch["env"] = env
    if any(kinds.get(k) == "flag" for k in setting.values):
        launch["extra_server_args"] = list(scenario.launch.extra_server_args)
    changes = ", ".join(f"{k}={v}" for k, v in setting.values.items())
    lines = [*head, f"# best: {best.setting} ({changes}), better than the baseline at "
             f"{', '.join(map(str, best.better_at))} prompt tokens, mean bandwidth gain {best.mean_gain_pct:+.2f} %",
             f"# evidence: {run / SUMMARY}; runs {', '.join(str(run / f) for f in best.evidence)}",
             f"# the whole scenario it ran: {run / best.scenario_file}",
             "# Put these keys over the scenario's launch section (env merges; extra_server_args replaces the list).",
             yaml.safe_dump({"launch": launch}, sort_keys=False, default_flow_style=False).rstrip("\n"), ""]
    return "\n".join(lines)


def check_outputs(run: Path) -> None:
    """All three or none: a link (or a folder) where one of them goes, or a file the tune did not write (an
    edited report), is refused before any is written (and before a tune spends its GPU time), so a summary
    never stands beside a report of another collection."""
    ownoutputs.refuse_foreign(Path(run), (SUMMARY, REPORT, OVERLAY), "tune")


def own_plan(run: Path) -> TunePlan:
    """The tune's plan in ``run``, refused in one line where there is none or where the arms state beside it is
    another run's (the folder mixes two runs): what every judge of a tune reads first."""
    plan = tuneplan.read(run)
    if plan is None:
        raise UserError(f"{tuneplan.path(run)}: no tune plan there; give the folder `pdrepro tune --out` (or "
                        "--render) wrote")
    state = armsstate.read(run)
    if state is not None and state.label != plan.label:
        raise UserError(f"{armsstate.path(run)}: holds {state.label!r}, not this tune's {plan.label!r}; the folder "
                        "mixes two runs: give the tune's own folder")
    return plan


def passed(summary: TuneSummary) -> bool:
    """Every run of every setting passed its checks (the tune's exit status, 0 or 1)."""
    return all(r.passed for s in summary.settings for r in s.runs)


def collected(run: Path, plan: TunePlan) -> tuple[TuneSummary, str, str]:
    """The tune in ``run`` judged and its best picked, in memory: the summary, the report and the overlay's
    text; nothing is written."""
    run = Path(run)
    state = armsstate.read(run)
    # Another run's state is no word on this tune's runs (`--collect` refuses such a folder before this).
    summary = judge(run, plan, state if state is not None and state.label == plan.label else None)
    pick = pick_best(summary)
    if pick is not None:
        setting = summary.setting(pick.setting)
        best = TuneBest(setting=pick.setting, values=dict(setting.values), better_at=pick.better_at,
                        mean_gain_pct=pick.mean_gain_pct, overlay=OVERLAY, scenario_file=setting.scenario_file,
                        evidence=[r.folder for r in setting.runs] + [r.folder for s in summary.settings if s.baseline
                                                                     for r in s.runs])
        summary = summary.model_copy(update={"best": best})
    return summary, render_report(summary), _overlay(run, summary, summary.best)


def collect(run: Path, plan: TunePlan, say_report: bool = True) -> TuneSummary:
    """The runner's end: judge the tune in ``run``, pick its best, write the summary, the report and the
    overlay into ``run``, all three or none, and never over a file the tune did not write."""
    run = Path(run)
    # Every text made before any is written: one that cannot be made (the best setting's scenario file gone)
    # leaves the three files of the last collection as they were, never a mix.
    summary, text, overlay = collected(run, plan)
    ownoutputs.write_outputs(run, {SUMMARY: dumps_json(summary.model_dump(mode="json"), run / SUMMARY, indent=2),
                                   REPORT: text, OVERLAY: overlay}, "tune")
    if say_report:
        print(text)
    print(f"summary: {run / SUMMARY}\nreport:  {run / REPORT}\noverlay: {run / OVERLAY}", file=sys.stderr)
    return summary
