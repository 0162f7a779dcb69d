"""``pdrepro compare``: both configurations of a comparison scenario on this box, one after the other.

Each configuration is an arm of the arms runner (pdrepro.arms, the one `pdrepro ab` uses): ``stack up --stack
<its kind>`` into RUN/<configuration>, the sweep at the scenario's open-loop rate against that stack (``sweep
--configuration NAME --out RUN``, which writes into the same folder), then ``stack down``, always. The
disaggregated configuration runs first. RUN/arms-state.json says which arms are done; run again with the same
options and --out, it starts at the first arm not done (the sweep itself skips what it finished). Once every
arm is done the run is analysed and judged (``analyze``, ``check``): summary.json and report.md written once, at
the end, never over a file the comparison did not write (rundir.ownoutputs). ``--judge RUN`` judges a comparison
run again as `pdrepro check` does, reading only (the comparison's table and the checks on standard output,
--json, --report FILE), and starts nothing.

Several scenarios that share one launch (the rate 1.0 and 4.0 variants) can be given at once: each stack
is then started once and swept once per scenario, each scenario into its own comparison run RUN/<scenario
name>, which saves a GPU box one stack start per configuration and scenario.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import runfile
from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED, STOPPED
from ..core.safewrite import make_folder
from ..launch.stack.kinds import STACK_KINDS as STACKS
from ..pipeline import split_words
from ..sweep.request import RUNNER_FIELDS
from . import memberwords
from . import shared_options as shared
from . import stack as stack_words
from .check import add_judge_option, check_report_target, emit, judging_only, verdict_of
from .render import add_server_options, transfer_backend
from .requests import JUDGING, STAGES, member, run_sweep

# The arms runner, the scenario, the run directory and the analysis (pydantic, YAML, plots) are imported where the
# command runs, so that building the command line (`pdrepro --help`) stays light.
if TYPE_CHECKING:
    from .. import arms as runner
    from ..scenario.model import ComparisonScenario
    from ..sweep.request import SweepRequest

HELP = "run a comparison scenario's two configurations on this box, one after the other, and judge them"
# Flags this command sets on the sweep itself (and those the arms runner sets: the URLs, --configuration and --out).
OWN_SWEEP_FLAGS = ("--scenario", "--model-path", "--dataset-path", "--bench-in-place", "--logs-from", "--no-analyze",
                   "--prompt-lens")


def register(sub) -> None:
    p = sub.add_parser("compare", help=HELP, description=(
        "For each configuration of a comparison scenario (the disaggregated one first): `pdrepro stack up "
        "--stack KIND --out RUN/CONFIGURATION`, `pdrepro sweep --configuration CONFIGURATION --out RUN "
        "--bench-in-place` against it, `pdrepro stack down`. Then `pdrepro analyze RUN` and `pdrepro check "
        "RUN`. With several --scenario (sharing one launch), each stack is started once and swept once per "
        "scenario, each into RUN/<scenario name>, then each of those is analysed and checked. "
        "RUN/arms-state.json records the arms done: run it again with the same options to resume at the "
        "first one not done. summary.json and report.md are written once, at the end, never over a file the "
        "comparison did not write (an edited report is refused by name before any stack starts). `--judge RUN` "
        "judges a comparison run again, as `pdrepro check` does, and writes nothing into it. "
        "Exit status: 0 all done and the checks pass, 1 an arm's sweep or a check "
        "failed, 2 bad input, 130/143 interrupted."))
    p.add_argument("--scenario", action="append",
                   help="shipped comparison scenario name or path to its YAML; repeat it to sweep several scenarios "
                        "that share one launch (e.g. both rates) against each stack, each into RUN/<scenario name>; no "
                        "default: required unless --judge RUN")
    shared.add_member_options(p)
    add_server_options(p)
    p.add_argument("--prefill-ip", help="this host's address, advertised by the servers (default 127.0.0.1)")
    p.add_argument("--start-timeout", type=float, metavar="SEC",
                   help="seconds each server may take to come up (default: stack up's)")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--wait-timeout 60"')
    add_judge_option(p, "the comparison run (or each RUN/<scenario name> of a run of several scenarios)")
    p.set_defaults(func=run)


def _arms(scenario: ComparisonScenario) -> list[tuple[str, str]]:
    """(configuration, stack kind), the disaggregated configuration first."""
    from ..rundir.memberrecord import is_disaggregated

    names = list((scenario.reference.configurations if scenario.reference else {}) or {})
    kinds = {name: STACKS[0] if is_disaggregated(name) else STACKS[1] for name in names}
    stacks = scenario.launch.stacks if scenario.launch else ()
    if sorted(kinds.values()) != sorted(STACKS) or not set(STACKS) <= set(stacks):
        raise UserError(f"scenario {scenario.name}: `pdrepro compare` runs one disaggregated configuration (named "
                        f"like 1P1D) and one regular one, with launch.stacks [{', '.join(STACKS)}]; it names "
                        f"{', '.join(names) or 'none'} with launch.stacks {list(stacks)}")
    return sorted(kinds.items(), key=lambda item: STACKS.index(item[1]))


def _site_fields(args) -> dict:
    """The site options as fields of a configuration's `stack up` request (launch.stack.request)."""
    given = {"model": args.model, "dataset": args.dataset, "gpus": args.gpus, "prefill_ip": args.prefill_ip,
             "mem_fraction": args.mem_fraction, "transfer_backend": transfer_backend(args),
             "start_timeout": args.start_timeout}
    return {**{k: v for k, v in given.items() if v is not None}, "server_arg": list(args.server_arg)}


def _sweep_extra(text: str | None) -> tuple[str, ...]:
    words = split_words(text, "--sweep-args")
    runner_flags = tuple("--" + name.replace("_", "-") for name in RUNNER_FIELDS)
    for word in words:
        if word.split("=", 1)[0] in (*OWN_SWEEP_FLAGS, *runner_flags):
            raise UserError(f"--sweep-args sets {word.split('=', 1)[0]}, which `pdrepro compare` sets itself; leave it out")
    return tuple(words)


def _say(line: str) -> None:
    print(f"== compare: {line}", flush=True)


def _label(scenarios: list[ComparisonScenario]) -> str:
    """The comparison a run folder holds: a resume must be of the same scenarios, settings included."""
    return "comparison " + ", ".join(f"{s.name} {s.fingerprint[:16]}" for s in scenarios)


# What one stack serves: scenarios that agree on these run against the same two stacks.
STACK_KEYS = ("model", "parallel", "topology", "launch")


def _load(given: list[str]) -> list[ComparisonScenario]:
    from ..scenario.model import ComparisonScenario, load_scenario

    scenarios = []
    for name in given:
        scenario = load_scenario(name)
        if not isinstance(scenario, ComparisonScenario):
            raise UserError(f"--scenario {name}: a {scenario.kind} scenario; `pdrepro compare` runs comparison "
                            "scenarios (e.g. a10-qwen25-7b-onebox-rate1)")
        scenarios.append(scenario)
    first = scenarios[0]
    for other in scenarios[1:]:
        differ = [k for k in STACK_KEYS if first.to_dict().get(k) != other.to_dict().get(k)]
        if differ or _arms(other) != _arms(first):
            raise UserError(f"--scenario {other.name}: its {', '.join(differ) or 'configurations'} differ from "
                            f"{first.name}'s, so one stack cannot serve both; run them with separate --out")
    names = [s.name for s in scenarios]
    if len(set(names)) != len(names) or set(names) & {c for c, _ in _arms(first)}:
        raise UserError(f"--scenario: {', '.join(names)}: give each scenario once (its run is RUN/<scenario name>)")
    return scenarios


class _SweepStage:
    """The sweep stage of a comparison. With several scenarios, a configuration's sweep runs once per scenario
    against the one stack, each into its own comparison run RUN/<scenario name>: a stack is started once per
    configuration, not once per scenario."""

    def __init__(self, given: list[str], scenarios: list[ComparisonScenario], out: Path):
        self.given, self.scenarios, self.out = given, scenarios, out

    def __call__(self, request: SweepRequest) -> int:
        if len(self.given) == 1:
            return run_sweep(request)
        worst, out = 0, self.out
        configuration = request.configuration or ""
        for given_name, scenario in zip(self.given, self.scenarios):
            name = scenario.name
            # The stack that measures a scenario's results is the one recorded beside them; a resumed run whose
            # results are already whole keeps the record of the stack that measured them.
            if complete(out / name, scenario, [configuration]) is not None:
                _keep_stack_records(out, out / name, [configuration], replace=True)
            _say(f"sweep {name} into {out / name}")
            status = run_sweep(dataclasses.replace(request, scenario=given_name, out=out / name))
            if status in STOPPED or status == EXIT_BAD_INPUT:
                return status
            worst = max(worst, status)
        return worst


# What the runner's analysis writes into a comparison run (``pdrepro analyze`` of a comparison scenario).
OUTPUTS = ("summary.json", "report.md")


def _judge(run: Path) -> int:
    from ..rundir import ownoutputs
    from ..rundir.request import AnalyzeRequest, CheckRequest

    _say(f"pdrepro analyze {run}")
    ownoutputs.refuse_foreign(run, OUTPUTS, "compare")
    analyzed = JUDGING.analyze(AnalyzeRequest(run))
    if analyzed in STOPPED:
        return analyzed
    ownoutputs.remember(run, OUTPUTS)
    _say(f"pdrepro check {run}")
    checked = JUDGING.check(CheckRequest(run))
    _say(f"report: {run / 'report.md'}")
    return checked or (EXIT_FAILED if analyzed else 0)


def _keep_stack_records(out: Path, run: Path, configurations: list[str], replace: bool = False) -> None:
    """Each configuration's stack record beside that configuration's results in a scenario's run, as a
    one-scenario run has it there (the report reads where each server ran from it). Written when the sweep
    starts (``replace``: this stack measures them); when judging, only where none is yet, so a scenario
    measured by an earlier stack never gets the record of a later one that skipped it."""
    from ..rundir.contract import write_json_atomic
    from ..rundir.layout import STACK_FILE

    for name in configurations:
        source, target = out / name / STACK_FILE, run / name / STACK_FILE
        if source.is_file() and (replace or not target.exists()):
            make_folder(target.parent, "pdrepro compare")
            write_json_atomic(target, runfile.read_json(source), indent=2)


def complete(run: Path, scenario: ComparisonScenario, configurations: list[str]) -> str | None:
    """None when every configuration of ``scenario`` in ``run`` holds a complete bench result for each length,
    else the first that does not and why."""
    from ..rundir import RunDir
    from ..sweep.state import result_problem

    for name in configurations:
        sub = RunDir(run).configuration(name)
        for length in scenario.sweep.prompt_lens:
            problem = result_problem(sub.bench_file(length), scenario.sweep.num_prompts, length)
            if problem:
                return f"{name} at {length} tokens: {problem}"
    return None


def _judge_complete(out: Path, scenarios: list[ComparisonScenario], configurations: list[str]) -> None:
    """After an arm failed: each scenario whose configurations all finished is judged all the same, so what was
    measured is reported (one rate's comparison does not wait on the other's); the rest say what they lack."""
    for scenario in scenarios:
        run = out / scenario.name
        missing = complete(run, scenario, configurations)
        if missing:
            _say(f"{scenario.name}: not judged ({missing}); the rerun measures it")
            continue
        _keep_stack_records(out, run, configurations)
        _judge(run)


def _measured(out: Path, scenarios: list[ComparisonScenario]) -> Callable[[Path, runner.MemberRequest], str | None]:
    """When a configuration is measured whole, for the arms runner (which then starts no stack for it): each
    scenario's comparison run holds a complete result of every length for it."""
    def measured(_run: Path, arm: runner.MemberRequest) -> str | None:
        for scenario in scenarios:
            missing = complete(out if len(scenarios) == 1 else out / scenario.name, scenario, [arm.name])
            if missing:
                return missing
        return None
    return measured


def _judge_only(args: argparse.Namespace) -> int:
    """`compare --judge RUN`: each comparison run judged as `pdrepro check` judges it, in memory; the comparison's
    table and the checks on standard output (--json, --report FILE); nothing is written into RUN."""
    from ..kinds.compare import judge_runs

    run = args.judge.absolute()
    if not run.is_dir():
        raise UserError(f"--judge {run}: no such folder; give the comparison's run folder")
    check_report_target(args, run)
    text, data, errors, worst = judge_runs(run, verdict_of)
    emit(args, run, text, data.model_dump(mode="json"))
    if errors:
        raise UserError(errors[0])
    return worst


def run(args: argparse.Namespace) -> int:
    from .. import arms as runner
    from ..rundir import ownoutputs

    if args.judge is not None:
        return _judge_only(args)
    judging_only(args)
    if not args.scenario or args.out is None:
        raise UserError("give the comparison scenario and its run folder: --scenario NAME --out RUN (or --judge RUN "
                        "to judge a run made before)")
    # --prompt-lens narrows each scenario; the sweep narrows it the same way and records it in the run.
    scenarios = [shared.narrow(args, s) for s in _load(args.scenario)]
    # The --server-arg flags by meaning, before any configuration's stack starts.
    first_launch = scenarios[0].launch
    stack_words.check_words(stack_words.read_words(args.server_arg, ()),
                            first_launch.engine if first_launch else "sglang")
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: is a file, not a run directory; give a folder (new, or a run to resume)")
    extra = _sweep_extra(args.sweep_args)
    # Every input the configurations share, before any starts (absolute paths: the stages run from here, and a
    # resume from another folder gives the same words): the model, the dataset, the serving packages.
    model, dataset = shared.check_inputs(
        "compare", model=args.model, dataset=args.dataset, engine=first_launch.engine if first_launch else "sglang",
        backend_names=[transfer_backend(args) or (first_launch.transfer_backend if first_launch
                                                  else shared.TCP_BACKEND)])
    out = str(Path(args.out).expanduser().absolute())
    args.model, args.dataset = model, dataset
    site, first = _site_fields(args), args.scenario[0]
    configurations = _arms(scenarios[0])
    arms = [member(Path(out), name, configuration=name, stack={"stack": kind, "scenario": first, **site},
                   sweep={"scenario": first, "model_path": model, "dataset_path": dataset, "no_analyze": True,
                          "prompt_lens": shared.lens_field(args)}, sweep_words=extra)
            for name, kind in configurations]
    names = [s.name for s in scenarios]
    # The analysis's outputs are written at the end, never over a file the comparison did not write: an edited
    # report is refused here, before a stack starts (a leftover stack is cleared by the arms runner itself).
    for target in [Path(out)] if len(scenarios) == 1 else [Path(out) / name for name in names]:
        ownoutputs.refuse_foreign(target, OUTPUTS, "compare")
    stages = dataclasses.replace(STAGES, sweep=_SweepStage(args.scenario, scenarios, Path(out)))
    status = runner.run_arms(Path(out), _label(scenarios), arms, command="compare", stages=stages, say=print,
                             is_measured=_measured(Path(out), scenarios), differ=memberwords.differ(Path(out)))
    if status:
        if len(scenarios) > 1 and status not in STOPPED:
            _judge_complete(Path(out), scenarios, [c for c, _ in configurations])
        _say(f"stopped with status {status}; run the same command again to resume at the configuration it reached")
        return status if status == EXIT_BAD_INPUT or status in STOPPED else EXIT_FAILED
    if len(scenarios) == 1:
        return _judge(Path(out))
    worst = 0
    for name in names:
        _keep_stack_records(Path(out), Path(out) / name, [c for c, _ in configurations])
        status = _judge(Path(out) / name)
        if status in STOPPED:
            return status
        worst = max(worst, status)
    return worst
