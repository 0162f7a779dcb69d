"""The summary a verdict is drawn from: never a summary.json taken on trust, and never written.

Where a run holds its raw inputs they are analysed again, in memory (cheap: a 500 MB log takes seconds),
and that analysis is what `pdrepro check` and the gates judge; summary.json is only its cache, which only
`pdrepro analyze` writes. A stored summary stamped with the same inputs, scenario and analysing code that
says something else was edited after the analysis: bad input naming it. One stamped otherwise (or not at
all, or made under another scenario) is stale: the verdict is drawn from the fresh analysis and a note says
so. Which kind of run a folder holds, and a summary of another kind put there, is the kinds room's question
(pdrepro.kinds): this module judges a sweep's run and a comparison's, and serves every kind's fresh summary.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from ..core import advice
from ..core.errors import UserError
from ..rundir import RunDir, why_absent
from ..rundir.contract import analysis_code_stamp, dumps_json, stamp
from ..rundir.portable import portable
from ..rundir.summarymodel import Summary
from ..scenario.model import Scenario
from ..scenario.recorded import own_scenario
from .comparison import compute_comparison
from .requestsamples import RequestSamples
from .summarize import compute_summary


@dataclass(frozen=True)
class Judged:
    """The summary a verdict is drawn from, and what was found of the run's stored summary.json."""

    summary: Summary
    notes: list[str] = field(default_factory=list)
    # A sweep's per-request figures by length, as its rows were drawn from them (the intervals of repeats).
    samples: dict[int, RequestSamples] = field(default_factory=dict)


def _disagreement(stored: Summary, fresh: Summary) -> str | None:
    """The first part of a stored summary that its run's inputs do not reproduce, or None."""
    if stored.rows != fresh.rows:
        old = stored.rows_by_length()
        for row in fresh.rows:
            if old.get(row.prompt_len) != row:
                return f"its row for prompt length {row.prompt_len}"
        return "its 'rows'"
    # What a verdict is derived from besides the rows; a stored summary must match a fresh analysis in all of them.
    parts = (("headline", stored.headline, fresh.headline), ("transport", stored.transport, fresh.transport),
             ("transport_evidence", stored.transport_evidence, fresh.transport_evidence),
             ("what_ran", stored.what_ran, fresh.what_ran), ("line_rate_GB_s", stored.line_rate_GB_s, fresh.line_rate_GB_s),
             ("witness", stored.witness, fresh.witness), ("configurations", stored.configurations, fresh.configurations),
             ("comparison", stored.comparison, fresh.comparison))
    for name, old_part, new_part in parts:
        if old_part != new_part:
            return f"its {name!r}"

    def kinds(summary: Summary) -> list[tuple[str, str, int]]:
        return sorted((i.severity, i.kind.value, -1 if i.prompt_len is None else i.prompt_len) for i in summary.issues)
    if kinds(stored) != kinds(fresh):
        return "its list of issues"
    return None


def _is_current(stored: Summary, signature: str | None, fingerprint: str) -> bool:
    """Made from these very inputs, scenario and analysing code (contract.is_current, on the model)."""
    return (signature is not None and stored.inputs_signature == signature
            and stored.scenario_fingerprint == fingerprint and stored.analysis_code == analysis_code_stamp())


def _read_stored(run: RunDir) -> tuple[Summary | None, list[str]]:
    """summary.json as stored, as the model: None when absent; a file this release cannot read as a summary
    is None and a note (the verdict is drawn from the inputs; a run without them refuses on its own)."""
    path = run.summary_file
    if not path.exists() and not path.is_symlink():
        return None, []
    data = run.read_stored_summary() if path.is_file() else None
    if data is not None:
        try:
            return run.read_summary(data), []
        except UserError as exc:
            why = str(exc).removeprefix(f"{path}: ").replace("; ", ", ")
            return None, [f"{path}: not a summary this release reads ({why}); it judges nothing: the verdict is drawn "
                          f"from the run's inputs, and `{advice.analyze(run.root)}` rewrites it"]
    why = "not a JSON object" if path.is_file() else why_absent(path)
    return None, [f"{path}: not a summary ({why}); the verdict is drawn from the run's inputs; "
                  f"`{advice.analyze(run.root)}` rewrites it"]


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


def _strict(run: RunDir, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` as it reads back from JSON (strict: a NaN is refused by name, as analyze refuses it)."""
    data: dict[str, Any] = json.loads(dumps_json(summary, run.summary_file))
    return data


def _judge_fresh(run: RunDir, scenario: Scenario, stored: Summary | None, made: dict[str, Any],
                 signature: str | None) -> Judged:
    """The fresh analysis, after holding the stored summary to it: edited is refused, stale is noted."""
    fix = "the analysis made a summary of the wrong shape"
    made = _strict(run, made)
    # The verdict reads the summary naming this machine's paths (its messages are for whoever runs it here);
    # a stored summary is held to it in the form analyze writes, the run's own path made relative.
    judged = run.read_summary(made, fix=fix)
    fresh = run.read_summary(portable(made, run.root), fix=fix)
    notes: list[str] = []
    if stored is None:
        if not run.summary_file.exists():  # one that cannot be read was named already (_read_stored)
            notes.append(f"{run.summary_file}: not written yet; the verdict is drawn from the run's inputs; "
                         f"`{advice.analyze(run.root)}` writes it")
    elif _is_current(stored, signature, scenario.fingerprint):
        where = _disagreement(stored, fresh)
        if where is not None:
            raise UserError(f"{run.summary_file}: {where} disagrees with what the run's own inputs give; the file "
                            f"was changed after the analysis: rerun `{advice.analyze(run.root)}` to rewrite it from "
                            "the inputs (or restore the original)")
    elif _disagreement(stored, fresh) is not None or stored.scenario_fingerprint != scenario.fingerprint:
        notes.append(f"{run.summary_file}: stale (made from other inputs, another scenario or another release); "
                     f"the verdict is drawn from the run's inputs; `{advice.analyze(run.root)}` rewrites it")
    return Judged(judged, notes)


def open_run(run: RunDir) -> tuple[Summary | None, list[str]]:
    """A run folder opened for judging: it is a directory, its scenario.yaml is the one it ran, and its stored
    summary.json read as far as it reads (None and a note when it does not)."""
    if not run.root.is_dir():
        why = why_absent(run.root, "directory").replace("missing", "no such run directory")
        raise UserError(f"{run.root}: {why}; give the folder `pdrepro sweep --out` (or the smoke) made")
    own_scenario(run)  # a scenario.yaml changed after the sweep judges nothing
    return _read_stored(run)


def judge_made(run: RunDir, scenario: Scenario, stored: Summary | None, notes: list[str], made: dict[str, Any],
               signature: str | None) -> Judged:
    """A kind's fresh summary ``made`` from the run's inputs, with the stored summary held to it."""
    judged = _judge_fresh(run, scenario, stored, made, signature)
    return Judged(judged.summary, notes + judged.notes)


def judged_sweep(run: RunDir, scenario: Scenario) -> Judged:
    """A sweep's run judged from its raw inputs (bench/, logs/, counters/), analysed again in memory; nothing in
    the run is written. A sweep's summary.json alone is no verdict."""
    stored, notes = open_run(run)
    if run.bench_dir.is_dir() or run.logs_dir.is_dir():
        _refuse_partial_inputs(run)
        signature = run.inputs_signature()  # taken before reading: an input changing meanwhile is stale
        samples: dict[int, RequestSamples] = {}
        made = stamp(compute_summary(run, scenario, samples), signature)
        return dataclasses.replace(judge_made(run, scenario, stored, notes, made, signature), samples=samples)
    if stored is not None:
        # However it is stamped: a stamp is made of names, sizes and times anyone can reproduce.
        raise _no_raw_inputs(run)
    if notes:
        # summary.json is all the run holds, and it is not a summary: nothing to judge.
        raise UserError(notes[0].split("; ")[0] + "; and the run holds no raw inputs to judge instead: restore it or "
                        "measure again")
    raise UserError(f"{run.root}: has neither bench/ nor logs/ nor a smoke's raw/ result; is this a run directory?")


def judged_comparison(run: RunDir, scenario: Scenario) -> Judged:
    """A comparison's run: its configurations' raw inputs analysed again in memory."""
    stored, notes = open_run(run)
    signature = run.inputs_signature()
    return judge_made(run, scenario, stored, notes, stamp(compute_comparison(run, scenario), signature), signature)
