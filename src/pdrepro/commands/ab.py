"""``pdrepro ab``: the same stack once per transfer backend, one after the other, judged side by side.

Each arm runs the scenario with its backend set and its backend's variables only (scenario.armvariant), kept
in RUN/scenarios/<backend>.yaml. One box: each backend is an arm of the arms runner (pdrepro.arms): `stack up`,
the sweep, `stack down`, each arm in its own run folder RUN/<backend>; then the arms are judged
(publish.abjudge) into RUN/ab-summary.json and RUN/report.md. A cluster: ``--render TARGET`` writes one job per
arm (RUN/<backend>/job/, commands.abjobs) whose run lands in RUN/<backend> itself (render's --run-dir; on
Kubernetes through the arm's own namespace and claim), every arm's job checked before any is written, and runs
nothing; once the scheduler ran them, ``--judge RUN`` judges those
folders without starting anything and without writing into RUN (commands.judging: the verdict on standard
output, --json, --report FILE). The runner writes its two outputs once, when the last arm ends, and never over
a file it did not write (rundir.ownoutputs). ``--repeats N`` adds rounds of the same arms (RUN/<backend>-r2 ...),
run interleaved so that a drift of the box reaches every backend alike; the judging draws each backend's interval
over its arms (publish.abjudge).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..backends.registry import backend, names
from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED, STOPPED
from ..core.safewrite import make_folder, write_file
from . import abjobs, memberwords
from . import shared_options as shared
from . import stack as stack_words
from .check import add_judge_option, check_report_target, give, judging_only
from .render import add_server_options
from .requests import STAGES, member
from .shared_options import RENDER_ONLY, SITE, site_fields

# The arms runner, the judge, the run directory's models and the scenario (pydantic, YAML, the analysis) are
# imported where the command runs, so that building the command line (`pdrepro --help`) stays light.
if TYPE_CHECKING:
    from ..publish.abjudge import ArmInput
    from ..rundir.absummary import AbSummary
    from ..rundir.armsstate import ArmsState
    from ..scenario.model import Scenario

HELP = "A/B of transfer backends: the same stack and sweep once per backend, one after the other, side by side"
DEFAULT_SCENARIO = "onebox-qwen25-0.5b"
SUMMARY, REPORT = "ab-summary.json", "report.md"
MAX_REPEATS = 10  # each arm restarts the servers (minutes on a GPU): ten rounds is an evening's work already


def arm_order(picked: tuple[str, ...], repeats: int) -> list[tuple[str, str]]:
    """(arm name, backend) in the order they run: round by round, every backend once per round (A B A B), the
    first round's arms named after their backend as without repeats, the later ones <backend>-r<round>."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise UserError(f"--repeats {repeats}: give 1 to {MAX_REPEATS}")
    return [(b if r == 1 else f"{b}-r{r}", b) for r in range(1, repeats + 1) for b in picked]


def add_site(p) -> None:
    """The site options of a command that starts a stack per member (`ab`, `tune`): the shared ones, declared once
    (--out, --model, --dataset, --gpus, --transfer-backend, --force-tcp, --prompt-lens), and the servers' own."""
    shared.add_member_options(p)
    add_server_options(p)
    for flag, text in SITE:
        p.add_argument(flag, help=f"{text}: passed to `stack up` (and `render`)" if flag not in RENDER_ONLY else text)


def register(sub) -> None:
    p = sub.add_parser("ab", help=HELP, description=(
        "Run the scenario's stack once per transfer backend (--backends, or the scenario's ab.backends), one "
        "after the other: `pdrepro stack up`, `pdrepro sweep`, `pdrepro stack down`, each arm in RUN/<backend> "
        "with the scenario as that backend runs it (RUN/scenarios/<backend>.yaml: the backend set, launch.env cut "
        "to what it reads, plus its ab.env and --arm-env); then judge the arms side by side "
        "(RUN/ab-summary.json, RUN/report.md): "
        "client TTFT per length, KV bytes from the model, each engine's logged figure with what it measures, "
        "TTFT ratios, a verdict per arm. Rerunning with the same --out resumes at the arm (and the length) it "
        "reached; the two files are written once, when the last arm ends, and never over a file the A/B did not "
        "write (an edited report is refused by name before any arm runs). `--judge RUN` judges the arms again "
        "without writing anything into RUN. Exit 0: every arm passes; 1: an arm fails; 2: bad input; 130/143: "
        "stopped by a signal."))
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, help="shipped scenario name or YAML path "
                                                                "(default %(default)s)")
    p.add_argument("--backends", metavar="A,B", help=f"transfer backends, comma-separated, one arm each, the first "
                                                     f"the ratios' base (known: {', '.join(names())})")
    add_site(p)
    p.add_argument("--arm-env", action="append", default=[], metavar="BACKEND:KEY=VALUE",
                   help="a variable for one arm's servers only, repeatable, over the scenario's ab.env: "
                        "--arm-env nixl:UCX_TLS=tcp,cuda_copy (a backend reads only its own variables)")
    p.add_argument("--stack-args", metavar="WORDS", help="more `pdrepro stack up` flags, one shell-quoted string")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--metrics --length-timeout 120"')
    p.add_argument("--render", metavar="TARGET", help="a cluster (slurm or k8s): write one job per arm with `pdrepro "
                                                      "render --target TARGET` into RUN/<backend>/job/, each writing "
                                                      "its run into RUN/<backend>, every arm's job checked before any "
                                                      "is written, and run nothing (it prints what to run next)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help=f"run each backend's arm N times (1 to {MAX_REPEATS}, default %(default)s), interleaved A B A B "
                        "so that a drift of the box widens the intervals instead of favouring one backend; a repeat "
                        "is an arm of its own, RUN/<backend>-r2, -r3 ...; two or more give each backend a noise floor "
                        "and let the judging call one better")
    add_judge_option(p, "the A/B's arms (after the jobs ran, or again after `ab` ended)")
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


def _label(scenario: str, picked: tuple[str, ...], variants: dict[str, Scenario] | None = None) -> str:
    """Which A/B this is: its scenario and backends, and (a run's) the arms' scenarios as fingerprints, so a
    rerun with another scenario or other arm variables is another A/B, refused rather than resumed."""
    from ..rundir.absummary import AB_LABEL

    label = AB_LABEL.label(f"{scenario}: {', '.join(picked)}")
    if variants:
        both = hashlib.sha256(" ".join(v.fingerprint for v in variants.values()).encode()).hexdigest()
        label += f" (arm scenarios {both[:12]})"
    return label


def _arm_env(args, scenario: Scenario, picked: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Each arm's own variables: the scenario's ab.env, then --arm-env NAME:KEY=VALUE over it."""
    given_env = scenario.ab.env if scenario.ab is not None else {}
    env: dict[str, dict[str, str]] = {b: dict(given_env.get(b, {})) for b in picked}  # type: ignore[call-overload]
    for given in args.arm_env:
        name, _, pair = given.partition(":")
        key, eq, value = pair.partition("=")
        if name not in env or not eq or not key:
            raise UserError(f"--arm-env {given!r}: give BACKEND:KEY=VALUE with BACKEND one of {', '.join(picked)}, "
                            "e.g. nixl:UCX_TLS=tcp,cuda_copy")
        env[name][key] = value
    return env


def _write_variants(out: Path, variants: dict[str, Scenario]) -> dict[str, Path]:
    paths = {b: out / "scenarios" / f"{b}.yaml" for b in variants}
    make_folder(out / "scenarios", "pdrepro ab")
    for b, variant in variants.items():
        write_file(paths[b], variant.to_yaml(), "pdrepro ab", out)
    return paths


def run(args) -> int:
    from .. import arms as runner
    from ..publish.abjudge import judge
    from ..report.abplot import PLOT
    from ..rundir import armsstate, ownoutputs
    from ..scenario.armvariant import for_backend
    from ..scenario.model import load_scenario

    if args.judge is not None:
        return _judge(args.judge, args)
    judging_only(args)
    if args.out is None:
        raise UserError("give the A/B's run folder: --out RUN")
    if args.render:
        abjobs.check_target(args.render)  # first: every later check reads the words as this target's render would
    # --prompt-lens narrows the scenario itself: each arm's scenario records the lengths it runs and is judged by.
    scenario = shared.narrow(args, load_scenario(args.scenario))
    engine = scenario.launch.engine if scenario.launch else "sglang"
    more_stack = shared.stack_args(args, "pdrepro ab")
    if shared.transfer_backend(args) is not None:
        option = "--force-tcp" if args.force_tcp else f"--transfer-backend {args.transfer_backend}"
        raise UserError(f"{option}: an A/B runs each arm on its own backend (--backends A,B); one backend for every "
                        f"arm would measure one backend twice: drop it, and name {shared.TCP_BACKEND} among "
                        "--backends for KV over TCP")
    # Every route's server flags checked by meaning before any arm starts (an arm's `stack up` would refuse
    # them only when its turn comes).
    stack_words.check_words(stack_words.read_words(args.server_arg, more_stack, args.render), engine)
    picked = _backends(args, scenario)
    env = _arm_env(args, scenario, picked)
    # Each arm runs its own scenario: the backend set, its variables only (scenario.armvariant).
    variants = {b: for_backend(scenario, b, env[b]) for b in picked}
    out = args.out.absolute()
    order = arm_order(picked, args.repeats)
    # A rerun with another number of repeats is another A/B (refused, not resumed); one round keeps its old label.
    label = _label(scenario.name, picked, variants) + (f", x{args.repeats} interleaved" if args.repeats > 1 else "")
    if args.render:
        if args.repeats > 1:
            raise UserError("--repeats with --render: a cluster's repeats are not rendered yet; render once, run "
                            "the jobs, and judge each round's folder, or run the A/B on one box")
        return _render(args, out, label, variants)
    site = site_fields(args)
    _refuse_links(out, picked)  # an arm's folder planted as a link: refused before anything is read through it
    # Every input the arms share, before any starts: the model, the dataset, each arm's serving packages.
    model, dataset = shared.check_inputs("ab", model=args.model, dataset=args.dataset, engine=engine,
                                         backend_names=picked)
    extra = shared.sweep_args(args, "pdrepro ab")
    paths = {b: str(out / "scenarios" / f"{b}.yaml") for b in picked}
    arms = [member(out, name, backend=b, stack={"scenario": paths[b], "target": "onebox", "launcher": "host", **site},
                   stack_words=more_stack, sweep={"scenario": paths[b], "model_path": model, "dataset_path": dataset},
                   sweep_words=extra)
            for name, b in order]
    # An output there that this A/B did not write (an edited report) is refused before any arm spends GPU time.
    ownoutputs.refuse_foreign(out, (SUMMARY, REPORT, PLOT), "ab")
    same = memberwords.differ(out)  # a resume compares what the arms ask for, not how it was spelt
    runner.start(out, label, arms, differ=same)  # refuses another A/B's folder before its files are touched
    _write_variants(out, variants)
    status = runner.run_arms(out, label, arms, command="ab", stages=STAGES, differ=same)
    if status in STOPPED:
        return status
    state = armsstate.read(out)
    judged = _write(out, judge(out, label, _inputs(state) if state else []))
    # An arm refused (2) says so even when the judging found the rest; else the verdict decides.
    return status if status == EXIT_BAD_INPUT else 0 if status == 0 and judged.passed else EXIT_FAILED


def _render(args, out: Path, label: str, variants: dict[str, Scenario]) -> int:
    from ..rundir import armsstate
    from ..rundir.armsstate import ArmRecord, ArmsState

    wanted = ArmsState(label=label, arms=tuple(ArmRecord(name=b, backend=b, status="rendered") for b in variants))
    found = armsstate.read(out) if out.is_dir() else None
    if found is not None and found.label != label:
        armsstate.check_same(found, wanted, armsstate.path(out))
    more_stack = shared.stack_args(args, "pdrepro ab")
    abjobs.check_words(args.render, more_stack)
    _refuse_links(out, variants)  # an arm's folder planted as a link: its job (and later its run) would land there
    site = site_fields(args, False)
    # Every input the arms' jobs share, checked before any job is rendered or anything written: each arm's render
    # run in memory (its scenario, its transfer backend, the site options, the run folder's form). The model and
    # dataset are the cluster's: `render` checks a given --model (config.json) and --dataset where it renders (the
    # submit host sees the nodes' shared paths), so those are checked here; left out, each job uses the nodes'
    # default paths, which no check on this machine can see. The serving packages are not asked of this Python:
    # the arms' servers run in the GPU image on the nodes, not here.
    shared.cluster_job_inputs(args, out, f"--render {args.render}")
    abjobs.check(args.render, out, variants, site, more_stack)
    make_folder(out, "pdrepro ab")
    paths = _write_variants(out, variants)
    status = abjobs.write(args.render, out, paths, site, more_stack)
    if status == 0:
        armsstate.write(out, wanted)
    return status


def _refuse_links(out: Path, arms) -> None:
    from ..rundir import memberrecord
    for b in arms:
        why = memberrecord.folder_problem(out, b)
        if why is not None:
            raise UserError(f"arm {b}: {why}; move it away and rerun")


def _judge(run: Path, args) -> int:
    from ..kinds.ab import Ab
    from ..publish.abjudge import ArmInput, judge
    from ..report.ab import render as render_report
    from ..rundir import RunDir, armsstate
    from ..scenario.model import load_scenario

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
    check_report_target(args, run)
    summary = judge(run, label, inputs)
    # Read only: the verdict goes where the user asks, nothing into RUN.
    # The verdict as `check RUN` gives it (kinds.composite): one schema and status for every judge.
    return give(args, run, Ab().given(RunDir(run), summary, render_report(summary), summary.passed))


def _inputs(state: ArmsState) -> list[ArmInput]:
    from ..publish.abjudge import ArmInput

    return [ArmInput(a.name, a.backend, a.unfinished()) for a in state.arms]


def _write(run: Path, summary: AbSummary) -> AbSummary:
    """The runner's outputs, written once as it ends, never over a file it did not write."""
    from ..report.ab import render as render_report
    from ..report.abplot import PLOT, ttft_png
    from ..rundir import ownoutputs
    from ..rundir.contract import dumps_json

    text = render_report(summary)
    png = ttft_png(summary)  # the arms side by side on the shared clock (report.abplot)
    ownoutputs.write_outputs(run, {SUMMARY: dumps_json(summary.model_dump(mode="json"), run / SUMMARY, indent=2),
                                   REPORT: text, **({PLOT: png} if png is not None else {})}, "ab")
    print(text)
    print(f"summary: {run / SUMMARY}\nreport:  {run / REPORT}", file=sys.stderr)
    return summary
