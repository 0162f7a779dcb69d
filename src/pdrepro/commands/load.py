"""``pdrepro load``: steps of concurrency and/or request rate at one prompt length against a running PD stack,
with failure accounting, per-request transfer and TTFT p50/p99 per step and the load gates; `pdrepro check RUN`
judges a load run (kinds/load.py's ``check_load``) as it judges a sweep's."""

from __future__ import annotations

import argparse
import sys

from ..core.errors import UserError
from ..core.exits import EXIT_FAILED

# The options only: the run directory, the scenario and the sweep (pydantic, YAML, HTTP) are imported where the
# command runs, so that building the command line (`pdrepro --help`) stays light.
from .shared_options import add_prompt_lens, check_inputs
from .sweep import add_stack_options, stack_config

# Upper bounds of what a person means: longer prompts than any released model reads, more requests per step
# than any load sweep sends.
MAX_LENGTH, MAX_PROMPTS = 10_000_000, 1_000_000
# The thresholds the load gates read (verdicts.load): a judgement by other values of these is named.


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
    add_stack_options(p, what="load step", shared_names=True)
    p.add_argument("--concurrency", metavar="LIST", help="requests in flight at most, one step each: e.g. 1,2,4,8")
    p.add_argument("--request-rate", metavar="LIST", help="requests per second, one step each (inf: all at once): "
                                                          "e.g. 2,4,inf; with --concurrency, every pairing")
    add_prompt_lens(p, "--length", dest="length", metavar="TOKENS",
                    help="the prompt length of every request, one length in tokens (default: the scenario's longest "
                         "sweep length)")
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
    from ..scenario.model import is_unbounded
    from ..sweep.loadsteps import parse_steps

    sweep = scenario.sweep
    steps = parse_steps(args.concurrency, args.request_rate, default_concurrency=sweep.max_concurrency,
                        default_rate=None if is_unbounded(sweep.request_rate) else sweep.request_rate)
    return LoadPlan(scenario_fingerprint=scenario.fingerprint,
                    prompt_len=_count("--prompt-lens", args.length, max(sweep.prompt_lens), MAX_LENGTH),
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
    from ..rundir import ownoutputs
    from ..scenario.model import resolve_scenario
    from ..sweep.loadrun import run_load

    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file, not a run directory; give a folder (new, or a load run to resume)")
    scenario = resolve_scenario(args.scenario, None, args.thresholds)
    plan = plan_of(args, scenario)
    if not (args.prefill and args.decode):
        raise UserError("pass --prefill URL and --decode URL (the PD servers behind the router) so their health is "
                        "checked and their /metrics read")
    # The inputs every step's bench client reads, checked as `ab`, `tune` and `compare` check their members'
    # (commands.shared_options): the model folder (its tokenizer) and the dataset, one line naming the option and
    # the fix, before the image is asked for, a step runs or RUN is touched. The paths go on absolute: what was
    # checked is what the client is given. No serving package is asked for: the stack is already up.
    args.model_path, args.dataset_path = check_inputs("load", model=args.model_path, dataset=args.dataset_path)
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
