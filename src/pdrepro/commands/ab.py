"""``pdrepro ab``: the same stack once per transfer backend, one after the other, judged side by side.

One box: each backend is an arm of the arms runner (pdrepro.arms): `stack up --transfer-backend NAME`, the
sweep, `stack down`, each arm in its own run folder RUN/<backend>; then the arms are judged (publish.abjudge)
into RUN/ab-summary.json and RUN/report.md. A cluster: ``--render TARGET`` writes one job per arm
(RUN/<backend>/job/, `pdrepro render --transfer-backend NAME`) and runs nothing; once the scheduler ran them,
``--judge RUN`` judges their folders without starting anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import arms as runner
from ..backends.registry import backend, names
from ..core.errors import UserError
from ..pipeline import split_words
from ..publish.abjudge import ArmInput, judge
from ..report.ab import render as render_report
from ..rundir import armsstate
from ..rundir.absummary import AbSummary
from ..rundir.armsstate import ArmRecord, ArmsState
from ..rundir.contract import dumps_json, write_atomic
from ..scenario.model import Scenario, load_scenario
from . import run_command

HELP = "A/B of transfer backends: the same stack and sweep once per backend, one after the other, side by side"
DEFAULT_SCENARIO = "onebox-qwen25-0.5b"
SUMMARY, REPORT = "ab-summary.json", "report.md"
# Site options passed to `stack up` (and `render`) as given: (flag, takes a value, help).
SITE = (("--model", "model folder (also the sweep's --model-path)"),
        ("--dataset", "ShareGPT JSON (also the sweep's --dataset-path)"),
        ("--gpus", "GPU ids, comma-separated (one GPU: both servers share it)"),
        ("--mem-fraction", "every server's --mem-fraction-static"),
        ("--prefill-ip", "the prefill node's address the servers advertise"),
        ("--decode-ip", "a cluster: the decode node's address (`render` only)"))
# Taken by `render` only: the one-box host launcher runs both servers on this host.
RENDER_ONLY = ("--decode-ip",)


def register(sub) -> None:
    p = sub.add_parser("ab", help=HELP, description=(
        "Run the scenario's stack once per transfer backend (--backends, or the scenario's ab.backends), one "
        "after the other: `pdrepro stack up --transfer-backend NAME`, `pdrepro sweep`, `pdrepro stack down`, "
        "each arm in RUN/<backend>; then judge the arms side by side (RUN/ab-summary.json, RUN/report.md): "
        "client TTFT per length, KV bytes from the model, each engine's logged figure with what it measures, "
        "TTFT ratios, a verdict per arm. Rerunning with the same --out resumes at the arm (and the length) it "
        "reached. Exit 0: every arm passes; 1: an arm fails; 2: bad input; 130/143: stopped by a signal."))
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, help="shipped scenario name or YAML path "
                                                                "(default %(default)s)")
    p.add_argument("--backends", metavar="A,B", help=f"transfer backends, comma-separated, one arm each, the first "
                                                     f"the ratios' base (known: {', '.join(names())})")
    p.add_argument("--out", type=Path, metavar="RUN", help="the A/B's run folder (reused to resume)")
    for flag, text in SITE:
        p.add_argument(flag, help=f"{text}: passed to `stack up` (and `render`)" if flag not in RENDER_ONLY else text)
    p.add_argument("--server-arg", action="append", default=[], metavar="'FLAG [VALUE]'",
                   help="extra server flags, repeatable: passed to `stack up` (and `render`)")
    p.add_argument("--stack-args", metavar="WORDS", help="more `pdrepro stack up` flags, one shell-quoted string")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--metrics --length-timeout 120"')
    p.add_argument("--render", metavar="TARGET", help="a cluster: write one job per arm with `pdrepro render --target "
                                                      "TARGET` into RUN/<backend>/job/ and run nothing")
    p.add_argument("--judge", type=Path, metavar="RUN", help="judge the arms' run folders in RUN (after the jobs "
                                                             "ran); starts nothing")
    p.set_defaults(func=run)


def _backends(args, scenario: Scenario | None = None) -> tuple[str, ...]:
    if args.backends is None and scenario is not None and scenario.ab is not None:
        return tuple(scenario.ab.backends)  # the scenario names its arms (validated where it was loaded)
    if args.backends is None:
        raise UserError("name the arms: --backends A,B (e.g. --backends mooncake_tcp,nixl), or in the scenario's "
                        "ab.backends")
    picked = tuple(w.strip() for w in args.backends.split(",") if w.strip())
    for name in picked:
        backend(name)  # an unknown one: one line naming the known ones
    if len(picked) < 2 or len(set(picked)) != len(picked):
        raise UserError(f"--backends {args.backends}: give two or more different backends, comma-separated")
    return picked


def _site(args, onebox: bool) -> list[str]:
    words: list[str] = []
    for flag, _ in SITE:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and onebox and flag in RENDER_ONLY:
            raise UserError(f"{flag}: one box runs both servers on this host; drop it (or give --render TARGET)")
        if value is not None:
            words += [flag, str(Path(value).expanduser().absolute()) if flag in ("--model", "--dataset") else value]
    return words + [f"--server-arg={v}" for v in args.server_arg]


def _label(scenario: str, picked: tuple[str, ...]) -> str:
    return f"ab {scenario}: {', '.join(picked)}"


def run(args) -> int:
    if args.judge is not None:
        return _judge(args.judge, args)
    if args.out is None:
        raise UserError("give the A/B's run folder: --out RUN")
    scenario = load_scenario(args.scenario)
    picked = _backends(args, scenario)
    if args.render:
        return _render(args, scenario.name, picked)
    stack = ["--target", "onebox", "--launcher", "host", "--scenario", args.scenario, *_site(args, True),
             *split_words(args.stack_args, "--stack-args")]
    if not (args.model and args.dataset):
        raise UserError("one box: give --model MODEL_DIR and --dataset SHAREGPT_JSON (the stack serves the model, "
                        "the sweep draws its prompts from the dataset)")
    extra = split_words(args.sweep_args, "--sweep-args")
    model, dataset = (str(Path(p).expanduser().absolute()) for p in (args.model, args.dataset))
    out = args.out.absolute()
    arms = [runner.Arm(name=b, backend=b, stack=(*stack, "--transfer-backend", b),
                       sweep=("--scenario", args.scenario, "--model-path", model, "--dataset-path", dataset,
                              "--bench-in-place", "--logs-from", str(out / b / "logs"), *extra)) for b in picked]
    status = runner.run_arms(out, _label(scenario.name, picked), arms, cli=run_command)
    if status in runner.STOPPED:
        return status
    state = armsstate.read(out)
    judged = _write(out, judge(out, _label(scenario.name, picked), _inputs(state) if state else []))
    # An arm refused (2) says so even when the judging found the rest; else the verdict decides.
    return status if status == runner.EXIT_BAD_INPUT else 0 if status == 0 and judged.passed else runner.EXIT_FAILED


def _render(args, scenario: str, picked: tuple[str, ...]) -> int:
    out = args.out.absolute()
    label = _label(scenario, picked)
    wanted = ArmsState(label=label, arms=tuple(ArmRecord(name=b, backend=b, status="rendered") for b in picked))
    found = armsstate.read(out) if out.is_dir() else None
    if found is not None and found.label != label:
        armsstate.check_same(found, wanted, armsstate.path(out))
    for b in picked:
        argv = ["render", "--target", args.render, "--scenario", args.scenario, *_site(args, False),
                *split_words(args.stack_args, "--stack-args"), "--transfer-backend", b, "--out", str(out / b / "job")]
        status = run_command(argv)
        if status:
            return status
    armsstate.write(out, wanted)
    print(f"ab: one job per arm in {out}/<backend>/job/; run each with its sweep into {out}/<backend>, then: "
          f"pdrepro ab --judge {out}")
    return 0


def _judge(run: Path, args) -> int:
    run = run.absolute()
    if not run.is_dir():
        raise UserError(f"--judge {run}: no such folder; give the A/B's run folder")
    state = armsstate.read(run)
    if state is not None:
        label, inputs = state.label, _inputs(state)
    else:
        scenario = load_scenario(args.scenario)
        picked = _backends(args, scenario)
        label, inputs = _label(scenario.name, picked), [ArmInput(b, b) for b in picked]
    for arm in inputs:
        if not (run / arm.name).is_dir():
            raise UserError(f"{run / arm.name}: no such arm folder; run the arm (or its job) first")
    return 0 if _write(run, judge(run, label, inputs)).passed else runner.EXIT_FAILED


def _inputs(state: ArmsState) -> list[ArmInput]:
    return [ArmInput(a.name, a.backend, a.reason if a.status == "failed" else None) for a in state.arms]


def _write(run: Path, summary: AbSummary) -> AbSummary:
    text = render_report(summary)
    write_atomic(run / SUMMARY, dumps_json(summary.model_dump(mode="json"), run / SUMMARY, indent=2), run)
    write_atomic(run / REPORT, text, run)
    print(text)
    print(f"summary: {run / SUMMARY}\nreport:  {run / REPORT}", file=sys.stderr)
    return summary
