"""The smoke's run (`pdrepro smoke`): its agents' raw result (raw/initiator.json) and provenance.json, which
records "kind": "smoke"; its summary is made again from them (smoke.summary), and written with the smoke's own
report section and plots. A smoke times bare transfers between two containers: no TTFT, no fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis.verdictsource import Judged, judge_made, open_run
from ..core import advice, runfile
from ..core.errors import UserError
from ..report.markdown import render_report
from ..rundir import RunDir
from ..rundir.contract import write_atomic
from ..rundir.portable import portable
from ..rundir.summarymodel import SmokeSummary
from ..scenario.model import Scenario
from ..smoke.plot import render_smoke_plots
from ..smoke.section import SMOKE_NOTE, smoke_section
from ..smoke.summary import build_summary
from . import recorded
from .summarykind import SummaryKind
from .sweep import refuse_comparison_scenario, sweep_marks

NAME = "smoke"  # what a smoke's provenance.json records as its "kind" and its summary.json as its "source"


def smoke_result(run: RunDir) -> bool:
    """The run holds a smoke agent's raw result (anything there, so a damaged one is refused by name)."""
    path = run.agent_result("initiator")
    return path.exists() or path.is_symlink()


def _json_object(path: Any, what: str, fix: str) -> dict[str, Any]:
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable as {what} ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: is not {what} (a JSON object); {fix}")
    return data


def smoke_summary(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """The smoke's summary made again from raw/initiator.json and provenance.json, in memory."""
    fix = "measure again with `pdrepro smoke`"
    if not smoke_result(run):
        raise UserError(f"{run.agent_result('initiator')}: missing, and a smoke's summary is made from it (the run's "
                        f"provenance.json says the smoke recorded it); {fix}")
    initiator = _json_object(run.agent_result("initiator"), "a smoke agent's result", fix)
    provenance = _json_object(run.provenance_file, "the smoke's provenance", fix) if run.provenance_file.exists() else {}
    try:
        return build_summary(scenario, initiator, provenance)
    except UserError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        # The agent writes one shape (smoke/initiator.py); anything else was changed after it was written.
        raise UserError(f"{run.agent_result('initiator')}: not the shape a smoke agent writes ({type(exc).__name__}: "
                        f"{exc}); {fix}") from None


def write_outputs(run: RunDir, summary: dict[str, Any]) -> list[Path]:
    """summary.json, report.md (the shared report with the smoke's section) and the smoke's plots."""
    run.write_summary(summary)
    head, sep, rest = render_report(summary).partition("## Headline")
    write_atomic(run.report_file, head + SMOKE_NOTE + "\n\n" + sep + rest + "\n" + smoke_section(summary))
    return render_smoke_plots(summary, run.plots_dir)


class Smoke(SummaryKind):
    name = NAME
    summary_model = SmokeSummary
    measures_ttft = SmokeSummary.measures_ttft
    has_fabric = SmokeSummary.has_fabric

    def records(self, run: RunDir) -> bool:
        return (smoke_result(run) or recorded.provenance_kind(run) == NAME
                or recorded.summary_value(run, "source") == NAME)

    def _refuse_mixed(self, run: RunDir) -> None:
        marks = sweep_marks(run)
        if marks and (smoke_result(run) or recorded.provenance_kind(run) == NAME):
            raise UserError(f"{run.root}: holds a smoke's files (raw/{run.agent_result('initiator').name} or a smoke's "
                            f"provenance.json) and a sweep's ({', '.join(marks)}): two runs in one folder judge "
                            "nothing; keep each run in its own folder")

    def judged(self, run: RunDir, scenario: Scenario) -> Judged:
        stored, notes = open_run(run)
        fix = f"it is not this run's: delete it and run `{advice.analyze(run.root)}` to make the run's own"
        marks = sweep_marks(run)
        # A summary.json that says "smoke" is held to it even where it does not read as a smoke's (a sweep's rows,
        # with their TTFT, relabelled "smoke" are refused by the smoke's row model): it is named, not passed over.
        if isinstance(stored, SmokeSummary) or (stored is None and recorded.summary_value(run, "source") == NAME):
            if marks:
                raise UserError(f"{run.summary_file}: calls itself a smoke result, but {run.root} is a sweep's run (it "
                                f"holds {', '.join(marks)}); {fix}")
            record = run.agent_result("initiator")
            if not record.is_file() or (stored is not None and stored.smoke is None):
                # A sweep's summary relabelled "smoke" (its raw inputs gone) would otherwise be judged without its gates.
                raise UserError(f"{run.summary_file}: calls itself a smoke result, but {run.root} holds no smoke's own "
                                f"record ({record.relative_to(run.root)}) or the summary no smoke findings; {fix}")
        elif stored is not None and smoke_result(run) and not marks:
            raise UserError(f"{run.summary_file}: calls itself a sweep's result, but {run.root} is a smoke's run (it "
                            f"holds raw/{run.agent_result('initiator').name} and no bench/); {fix}")
        refuse_comparison_scenario(run, scenario, "a smoke's run")
        self._refuse_mixed(run)
        return judge_made(run, scenario, stored, notes, smoke_summary(run, scenario), None)

    def write(self, run: RunDir, scenario: Scenario) -> dict[str, Any]:
        if not run.root.is_dir():
            raise UserError(f"{run.root}: no such run directory; give the folder the smoke made")
        refuse_comparison_scenario(run, scenario, "a smoke's run")
        self._refuse_mixed(run)
        summary = smoke_summary(run, scenario)
        write_outputs(run, portable(summary, run.root))
        return summary
