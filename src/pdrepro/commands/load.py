"""``pdrepro load``: steps of concurrency and/or request rate at one prompt length against a running PD stack,
with failure accounting, per-request transfer and TTFT p50/p99 per step and the load gates; `pdrepro check RUN`
judges a load run (this module's ``check_load``) as it judges a sweep's."""

from __future__ import annotations

import argparse
import sys

from tabulate import tabulate

from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED
from ..rundir import RunDir, ownoutputs
from ..scenario.model import is_unbounded, resolve_scenario
from .sweep import add_stack_options, stack_config

# Upper bounds of what a person means: longer prompts than any released model reads, more requests per step
# than any load sweep sends.
MAX_LENGTH, MAX_PROMPTS = 10_000_000, 1_000_000
# The thresholds the load gates read (verdicts.load): a judgement by other values of these is named.
LOAD_BOUNDS = ("max_request_errors", "max_transfer_p99_over_p50")


def register(sub) -> None:
    p = sub.add_parser(
        "load",
        help="a load sweep: steps of concurrency and/or request rate at one prompt length against a running PD stack",
        description=(
            "Wait for the router and workers, prove the KV transport, then run the bench client once per load step "
            "(--concurrency 1,2,4,8 and/or --request-rate 2,4,inf; both: every pairing) at one prompt length, each "
            "step's results in RUN/steps/<step>/; collect the servers' logs and provenance, then write "
            "RUN/load-summary.json, RUN/report.md and RUN/plots/load.png: per step the bench client's failed "
            "requests, the servers' failed /generate answers, session recoveries and retracted requests (--metrics), "
            "the prefill log's #retries, KV transfer time and TTFT p50/p99. `pdrepro check RUN` judges it: no failed "
            "request (thresholds.max_request_errors) and transfer p99 within thresholds.max_transfer_p99_over_p50 "
            "(default 3) x its p50, per step. Rerunning with the same --out resumes at the step it reached. Exit 0: "
            "every step measured; 1: a step failed; 2: bad input; 130/143: stopped by a signal (measured steps kept)."
        ),
    )
    add_stack_options(p, what="load step")
    p.add_argument("--concurrency", metavar="LIST", help="requests in flight at most, one step each: e.g. 1,2,4,8")
    p.add_argument("--request-rate", metavar="LIST", help="requests per second, one step each (inf: all at once): "
                                                          "e.g. 2,4,inf; with --concurrency, every pairing")
    p.add_argument("--length", metavar="TOKENS", help="prompt length of every request (default: the scenario's "
                                                      "longest sweep length)")
    p.add_argument("--prompts", metavar="N", help="requests per step (default: the scenario's sweep.num_prompts)")
    p.add_argument("--no-analyze", action="store_true", help="skip the load summary and report at the end")
    p.set_defaults(func=run)


def _count(option: str, text: str | None, default: int, top: int) -> int:
    if text is None:
        return default
    word = text.strip()
    if not word.isascii() or not word.isdigit() or not 1 <= int(word) <= top:
        raise UserError(f"{option} {text!r}: not a whole number from 1 to {top}")
    return int(word)


def plan_of(args: argparse.Namespace, scenario):
    from ..rundir.loadstate import LoadPlan
    from ..sweep.loadsteps import parse_steps

    sweep = scenario.sweep
    steps = parse_steps(args.concurrency, args.request_rate, default_concurrency=sweep.max_concurrency,
                        default_rate=None if is_unbounded(sweep.request_rate) else sweep.request_rate)
    return LoadPlan(scenario_fingerprint=scenario.fingerprint,
                    prompt_len=_count("--length", args.length, max(sweep.prompt_lens), MAX_LENGTH),
                    num_prompts=_count("--prompts", args.prompts, sweep.num_prompts, MAX_PROMPTS), steps=steps)


def _table(summary) -> str:
    from ..report.load import step_table

    return step_table(summary)


def _outputs() -> tuple[str, ...]:
    from ..report.load import PLOT
    from ..rundir.loadsummary import FILE

    return (FILE, "report.md", f"plots/{PLOT}")


def run(args: argparse.Namespace) -> int:
    from ..core.signals import checkpoint, stop_on_signals
    from ..publish.loadresults import summary_path, write_load_results
    from ..sweep.loadrun import run_load

    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file, not a run directory; give a folder (new, or a load run to resume)")
    scenario = resolve_scenario(args.scenario, None, args.thresholds)
    plan = plan_of(args, scenario)
    if not (args.prefill and args.decode):
        raise UserError("pass --prefill URL and --decode URL (the PD servers behind the router) so their health is "
                        "checked and their /metrics read")
    cfg = stack_config(args, scenario)
    # The load's outputs are written once, at its end, never over a file it did not write (an edited report):
    # refused before any step is measured.
    outputs = _outputs()
    if not args.no_analyze:
        ownoutputs.refuse_foreign(args.out, outputs, "load")
    with stop_on_signals():
        outcome = run_load(cfg, plan)
        if not args.no_analyze:
            checkpoint()
            ownoutputs.refuse_foreign(outcome.run.root, outputs, "load")
            summary = write_load_results(outcome.run, scenario)
            ownoutputs.remember(outcome.run.root, outputs)
            print(_table(summary))
            print(f"summary: {summary_path(outcome.run)}\nreport:  {outcome.run.report_file}")
    if outcome.failed:
        print(f"pdrepro load: {len(outcome.failed)} step(s) failed ({', '.join(outcome.failed)}); rerun with the same "
              "--out to retry them", file=sys.stderr)
        return EXIT_FAILED
    return 0


def check_load(run_dir: RunDir, args: argparse.Namespace):
    """`pdrepro check RUN` of a load run: the load gates per step, judged from a fresh analysis in memory (a
    ``Verdict``: nothing is written)."""
    from ..analysis.load import compute_load_summary
    from ..scenario.recorded import own_scenario
    from ..verdicts.bounds import bound_changes
    from ..verdicts.load import failed, run_checks, step_checks
    from ..verdicts.outcome import Verdict, result_data

    scenario = resolve_scenario(args.scenario, args.run, args.thresholds)
    summary = compute_load_summary(run_dir, scenario)
    per_step = [("(run)", r) for r in run_checks(summary)]
    per_step += [(step.name, r) for step in summary.steps for r in step_checks(summary, step)]
    results = [r for _, r in per_step]
    table = [[r.name, name, "—" if r.figure is None else f"{r.figure:.2f} {r.unit}".rstrip(),
              "" if r.bound is None else f"{r.op} {r.bound:g} {r.unit}".rstrip(), r.verdict] for name, r in per_step]
    out = [tabulate(table, headers=["check", "step", "figure", "bound", "verdict"], tablefmt="simple",
                    disable_numparse=True)]
    bad = failed(results)
    out.append("")
    out += [f"FAIL {r.detail}" for r in bad]
    warnings = [i.message for i in summary.issues if i.severity == "warning"]
    out += [f"WARN {w}" for w in warnings]
    own = own_scenario(run_dir) if run_dir.root.is_dir() else None
    bounds = []
    if own is not None and (args.scenario is not None or args.thresholds is not None):
        # Judged by other bounds than the run's own, as asked: say which of the load's.
        bounds = [line for line in bound_changes(own, scenario) if line.startswith(LOAD_BOUNDS)]
        out += [f"BOUND {line}" for line in bounds]
    errors = summary.input_errors()
    status = EXIT_BAD_INPUT if errors else EXIT_FAILED if bad else 0
    data = {"run": str(run_dir.root), "scenario": scenario.name, "passed": status == 0, "exit_status": status,
            "checks": [{**result_data(r), "step": name} for name, r in per_step], "warnings": warnings,
            "notes": [], "bounds": bounds, "input_error": errors[0].message if errors else None}
    return Verdict(out, f"{len(results) - len(bad)} passed, {len(bad)} failed", data, status,
                   errors[0].message if errors else None)
