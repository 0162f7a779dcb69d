"""The summary a verdict is drawn from: never a summary.json taken on trust.

Where a run holds its raw inputs they are analysed again (cheap: a 500 MB log
takes seconds) and that analysis is what `pdrepro check` and the gates judge;
summary.json is only its cache. A stored summary stamped with the same inputs,
scenario and analysing code that says something else was edited after the
analysis: bad input naming it. One stamped otherwise is stale and rewritten.
"""

from __future__ import annotations

import json

from ..analysis.comparison import compute_comparison
from ..analysis.summarize import compute_summary
from ..core.errors import UserError
from ..rundir import RunDir
from ..rundir.contract import SUMMARY_SCHEMA_VERSION, is_current, stamp
from ..scenario.model import ComparisonScenario, Scenario
from ..scenario.recorded import own_scenario
from .results import analyze_run, write_outputs

# What a verdict is derived from; a stored summary must match a fresh analysis in all of these.
_VERDICT_KEYS = ("rows", "headline", "transport", "transport_evidence", "what_ran", "line_rate_GB_s", "witness",
                 "configurations", "comparison")


def _disagreement(stored: dict, fresh: dict) -> str | None:
    """The first part of a stored summary that its run's inputs do not reproduce, or None."""
    for key in _VERDICT_KEYS:
        if stored.get(key) != fresh.get(key):
            if key == "rows":
                rows = stored.get("rows")
                old = {r.get("prompt_len"): r for r in (rows if isinstance(rows, list) else []) if isinstance(r, dict)}
                for row in fresh["rows"]:
                    if old.get(row["prompt_len"]) != row:
                        return f"its row for prompt length {row['prompt_len']}"
            return f"its {key!r}"
    def kinds(summary):
        found = summary.get("issues")
        return sorted(json.dumps([i.get("severity"), i.get("kind"), i.get("prompt_len")])
                      for i in (found if isinstance(found, list) else []) if isinstance(i, dict))
    if kinds(stored) != kinds(fresh):
        return "its list of issues"
    return None


# Files only `pdrepro sweep` (or a copy of its run) leaves in a run directory: a smoke writes none of them.
_SWEEP_MARKS = ("bench", "logs", "counters", "sweep-state.json")


def _sweep_marks(run: RunDir) -> list[str]:
    return [name for name in _SWEEP_MARKS if (run.root / name).exists()]


def _refuse_other_kind(run: RunDir, scenario: Scenario, stored: dict | None) -> None:
    """A summary of another kind of run than this one (a smoke's in a sweep's run, a comparison's in a
    single configuration's, or the reverse) was put there: it judges nothing of this run."""
    if stored is None:
        return
    fix = f"it is not this run's: delete it and run `pdrepro analyze {run.root}` to make the run's own"
    marks = _sweep_marks(run)
    if stored.get("source") == "smoke" and marks:
        raise UserError(f"{run.summary_file}: calls itself a smoke result, but {run.root} is a sweep's run (it holds "
                        f"{', '.join(marks)}); {fix}")
    record = run.agent_result("initiator")
    if stored.get("source") == "smoke" and not (isinstance(stored.get("smoke"), dict) and record.is_file()):
        # A smoke's summary is its result only beside the smoke's own record, with the smoke's findings in it: a
        # sweep's summary relabelled "smoke" (its raw inputs gone) would otherwise be judged without its gates.
        raise UserError(f"{run.summary_file}: calls itself a smoke result, but {run.root} holds no smoke's own record "
                        f"({record.relative_to(run.root)}) or the summary no smoke findings; {fix}")
    is_comparison = stored.get("kind") == "comparison"
    if is_comparison != isinstance(scenario, ComparisonScenario):
        said = "a comparison's summary" if is_comparison else f"a {stored.get('source') or 'single'} run's summary"
        raise UserError(f"{run.summary_file}: is {said}, but the run's scenario {scenario.name} is a {scenario.kind} "
                        f"run; {fix}")


def _missing_inputs(run: RunDir) -> list[str]:
    """The raw inputs a sweep's run lacks: a folder, else a length's counter record. A sweep's run is
    judged on all of them or not at all: without the server logs there is no transfer figure, without
    the counters no witness, and a verdict drawn from what is left would pass on what was never measured."""
    missing = [f"{d.name}/ ({what})" for d, what in ((run.bench_dir, "the bench results"),
                                                     (run.logs_dir, "the server logs"),
                                                     (run.counters_dir, "the NICs' counters per length"))
               if not d.is_dir()]
    return missing or [f"{run.counters_dir.name}/{run.counters_file(L).name} (the NICs' counters of length {L})"
                       for L in run.bench_lengths() if not run.counters_file(L).exists()]


def _no_raw_inputs(run: RunDir) -> UserError:
    return UserError(f"{run.root}: the run's raw inputs are missing ({', '.join(_missing_inputs(run))}); a summary.json "
                     "alone is no verdict: restore them from the sweep (or rerun `pdrepro sweep`)")


def _refuse_partial_inputs(run: RunDir) -> None:
    missing = _missing_inputs(run)
    if missing:
        raise UserError(f"{run.root}: the run's raw inputs are incomplete, missing {', '.join(missing)}; no verdict is "
                        "drawn from part of a run: restore them from the sweep (or rerun `pdrepro sweep`)")


def load_or_analyze(run: RunDir, scenario: Scenario) -> dict:
    """The summary a verdict may be drawn from.

    Where the run holds its raw inputs (bench/, logs/), they are analysed again (cheap) and
    the fresh summary is what counts: a stored summary.json is only a cache of it. A stored
    summary stamped with these very inputs that says something else was edited after the
    analysis: that is an error, not a verdict. Without raw inputs (a smoke test summarises
    as it measures) the stored summary is all there is.
    """
    path = run.summary_file
    if run.root.is_dir():
        own_scenario(run)  # a scenario.yaml changed after the sweep judges nothing
    stored = run.read_stored_summary() if path.is_file() and run.root.is_dir() else None
    _refuse_other_kind(run, scenario, stored)
    if isinstance(scenario, ComparisonScenario):
        return _load_comparison(run, scenario, stored)
    if run.root.is_dir() and (run.bench_dir.is_dir() or run.logs_dir.is_dir()):
        _refuse_partial_inputs(run)
        signature = run.inputs_signature()
        fresh = stamp(compute_summary(run, scenario), signature)
        fresh = json.loads(json.dumps(fresh))  # as it reads back from summary.json
        if stored is not None and is_current(stored, signature, scenario.fingerprint):
            _refuse_edited(run, stored, fresh)
            return fresh
        write_outputs(run, fresh)
        return fresh
    if isinstance(stored, dict) and stored.get("source") != "smoke" and run.root.is_dir():
        # However it is stamped: a stamp is made of names, sizes and times anyone can reproduce.
        raise _no_raw_inputs(run)
    if isinstance(stored, dict) and stored.get("scenario_fingerprint") == scenario.fingerprint \
            and stored.get("schema_version") == SUMMARY_SCHEMA_VERSION:
        # A smoke summarises as it measures: its summary is its result. Taken as it stands, so it
        # must have the shape the report and the checks read.
        run.read_summary(stored, fix="the file was changed after it was written: restore it or measure again")
        return stored
    return analyze_run(run, scenario)


def _refuse_edited(run: RunDir, stored: dict, fresh: dict) -> None:
    where = _disagreement(stored, fresh)
    if where is not None:
        raise UserError(f"{run.summary_file}: {where} disagrees with what the run's own inputs give; the file was "
                        f"changed after the analysis: rerun `pdrepro analyze {run.root}` to rewrite it from the "
                        "inputs (or restore the original)")


def _load_comparison(run: RunDir, scenario: Scenario, stored: dict | None) -> dict:
    """A comparison's inputs live in one folder per configuration: its stamped summary is
    checked against them the same way, and analysed afresh when stale."""
    if stored is not None:
        signature = run.inputs_signature()
        if is_current(stored, signature, scenario.fingerprint):
            fresh = json.loads(json.dumps(stamp(compute_comparison(run, scenario), signature)))
            _refuse_edited(run, stored, fresh)
            return fresh
    return analyze_run(run, scenario)
