"""``pdrepro tune``: a grid of knobs run as settings of one scenario, ranked against a repeated baseline.

One box: each run is an arm of the arms runner (pdrepro.arms): `stack up` of its setting's scenario
(RUN/scenarios/<setting>.yaml: the variables in launch.env, the flags in launch.extra_server_args), the sweep,
`stack down`, into RUN/<run>. The baseline (the scenario's own setting) runs --baseline-repeats times, each on a
fresh stack: every other setting restarts the servers (variables and flags need it), so the baseline's spread
must hold the start-to-start noise too, and a second sweep on one stack would find the first one's requests in
the servers' log, which the analysis rightly refuses as not its own. Its runs are spread over the order (first,
last, between), so a drift of the box over the hours shows in the spread rather than in one setting. Then the
runs are judged and ranked (tune.collect): RUN/tune-summary.json, RUN/tune-report.md, RUN/best-overlay.yaml,
written once, at the end, never over a file the tune did not write (rundir.ownoutputs).
A cluster: ``--render slurm`` writes a job per run and a job array over them; ``--judge RUN`` (or its older name
``--collect RUN``) ranks them, reading only: the verdict on standard output, files only where the user names them.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..core.errors import UserError
from ..core.exits import EXIT_BAD_INPUT, EXIT_FAILED, STOPPED
from ..core.safewrite import make_folder, write_file
from . import memberwords
from . import shared_options as shared
from . import stack as stack_words
from .ab import add_site
from .check import add_judge_option, check_report_target, give, judging_only, refuse_inside
from .render import check_jobs
from .requests import STAGES, member, render_request, run_render
from .shared_options import site_fields, site_words

# The arms runner, the grid, the tune's models and its judge (pydantic, YAML, the analysis) are imported where the
# command runs, so that building the command line (`pdrepro --help`) stays light.
if TYPE_CHECKING:
    from ..rundir.tuneplan import TunePlan
    from ..scenario.model import Scenario

HELP = "try tuning knobs: the sweep once per setting of a grid, ranked against the scenario's own setting run 3 times"
DEFAULT_SCENARIO = "onebox-qwen25-0.5b"
MIN_REPEATS = 3
PATHS = ("--model", "--dataset")  # where the files are on this machine: a moved run keeps its tune


def register(sub) -> None:
    p = sub.add_parser("tune", help=HELP, description=(
        "Run the scenario's one-box stack once per setting of a grid of knobs (--grid, repeatable: an environment "
        "variable by name, or a server flag with its dashes), one after the other: `pdrepro stack up`, `pdrepro "
        "sweep`, `pdrepro stack down`, each run in RUN/<run>, its setting's scenario in RUN/scenarios/. The "
        "scenario's own setting (the baseline) runs --baseline-repeats times to measure its spread. Then rank the "
        "settings per prompt length by per-request KV bandwidth (TTFT breaks ties); a setting is better only when "
        "its confidence interval lies wholly above the baseline's (a bootstrap over the runs and their requests, "
        "method and noise floor stated in the report). Writes RUN/tune-summary.json, "
        "RUN/tune-report.md and RUN/best-overlay.yaml once, at the end (the best setting as a scenario overlay; none "
        "is named while a run has measured nothing), never over a file the tune did not write: an edited report is "
        "refused by name before any run starts. `--judge RUN` (also spelt --collect) ranks a tune's runs again and "
        "writes nothing into RUN. With the engine alone measured into RUN/engine-ceiling (`pdrepro gpu-check "
        "--scenario RUN/scenarios/baseline.yaml --out RUN/engine-ceiling`: the tune's bytes) and repeated into "
        "RUN/engine-ceiling-2, -3, ..., each figure is also set against the mean of its runs, and held against 0.9 "
        "of it with their spread as doubt. Rerunning with the "
        "same options resumes at the run (and the length) it reached. Exit 0: every run passes its checks; 1: a "
        "run fails or has not run; 2: bad input; 130/143: stopped by a signal."))
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, help="shipped scenario name or YAML path "
                                                                "(default %(default)s)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="a knob and its values, repeatable: an environment variable the servers read "
                        "(--grid SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16) or a server flag, given with '=' so "
                        "that its dashes stay a value (--grid=--page-size=1,16)")
    p.add_argument("--one-at-a-time", action="store_true",
                   help="vary one knob at a time from the scenario's own setting instead of the full grid")
    p.add_argument("--baseline-repeats", type=int, default=MIN_REPEATS, metavar="N",
                   help=f"runs of the scenario's own setting, at least {MIN_REPEATS} (default %(default)s)")
    add_site(p)
    p.add_argument("--stack-args", metavar="WORDS", help="more `pdrepro stack up` flags, one shell-quoted string")
    p.add_argument("--sweep-args", metavar="WORDS",
                   help='more `pdrepro sweep` flags, one shell-quoted string: --sweep-args="--length-timeout 120"')
    p.add_argument("--render", choices=("slurm",), metavar="slurm",
                   help="a cluster: write one SLURM job per run (RUN/<run>/job/) and a job array over them "
                        "(RUN/tune-array.sbatch), each writing its run into RUN/<run>; runs nothing")
    add_judge_option(p, "and rank the runs of the tune (after its jobs ran, or again after `tune` ended)",
                     "--collect")
    p.add_argument("--overlay", type=Path, metavar="FILE",
                   help="with --judge: also write the best setting as a scenario overlay to FILE, outside RUN")
    p.set_defaults(func=run)


def _site(args, onebox: bool, paths: bool = True) -> list[str]:
    return site_words(args, onebox, paths, render="--render slurm")


def _stack_words(args) -> tuple[str, ...]:
    """--stack-args, and the transport however it was given (--force-tcp, --transfer-backend, or the older
    --stack-args='--force-tcp'), as `stack up` takes them."""
    return (*shared.stack_args(args, "pdrepro tune"), *shared.transport_words(args))


def _stack_label(args) -> str:
    """The stack words as the tune's label holds them: the transport spelt as the older --stack-args spelt it, so
    a tune begun before --force-tcp was an option of its own resumes."""
    more = shared.stack_args(args, "pdrepro tune") if args.stack_args else ()
    chosen = shared.transfer_backend(args)
    transport = () if chosen is None else ("--force-tcp",) if args.force_tcp else ("--transfer-backend", chosen)
    return " ".join([*more, *transport])


def _plan(args, scenario: Scenario) -> tuple[TunePlan, dict[str, Scenario]]:
    """The plan (settings, their run folders) and each setting's scenario, by setting name."""
    from ..rundir.tuneplan import PlanKnob, PlanSetting, TunePlan
    from ..rundir.tunesummary import TUNE_LABEL
    from ..tune import grid

    if args.baseline_repeats < MIN_REPEATS or args.baseline_repeats > 20:
        raise UserError(f"--baseline-repeats {args.baseline_repeats}: give {MIN_REPEATS} to 20 (the spread needs "
                        f"at least {MIN_REPEATS} runs of the baseline)")
    knobs = [grid.parse(text) for text in args.grid]
    # The server flags of every route and the backend the stack will run, as `stack up` will read them.
    words = stack_words.read_words(args.server_arg, _stack_words(args), args.render)
    grid.check(knobs, scenario, words.routes, words.backend, words.backend_source)
    stack_words.check_words(words, scenario.launch.engine if scenario.launch else "sglang")
    points = grid.settings(knobs, scenario, args.one_at_a_time)
    variants = {grid.BASELINE: scenario, **{s.name: grid.variant(scenario, s, knobs) for s in points}}
    mode: Literal["full grid", "one at a time"] = "one at a time" if args.one_at_a_time else "full grid"
    repeats = tuple(f"{grid.BASELINE}-{i}" for i in range(1, args.baseline_repeats + 1))
    # Which tune this is: the grid, the settings' scenarios and every option but the paths (model, dataset, the
    # run's own), so a copy of the run on another machine resumes (the arms' words compared less those paths:
    # commands.memberwords) and any other change is refused.
    same = [mode, *args.grid, *(v.fingerprint for v in variants.values()), *_site(args, False, paths=False),
            _stack_label(args), args.sweep_args or ""]
    digest = hashlib.sha256("\0".join(same).encode())
    plan = TunePlan(
        label=TUNE_LABEL.label(f"{scenario.name}, {mode}, {len(points)} setting(s), baseline x{len(repeats)} "
                         f"(grid {digest.hexdigest()[:12]})"), scenario=scenario.name, mode=mode,
        knobs=tuple(PlanKnob(name=k.name, kind=k.kind, values=k.values, baseline=grid.baseline_value(scenario, k))
                    for k in knobs),
        settings=(PlanSetting(name=grid.BASELINE, runs=repeats),
                  *(PlanSetting(name=s.name, values=dict(s.values), runs=(s.name,)) for s in points)))
    plan.check("the tune asked for")
    return plan, variants


def _order(plan: TunePlan) -> list[tuple[str, str]]:
    """(run folder, setting) in the order they run: the baseline's repeats spread over it, first and last."""
    others = [(s.runs[0], s.name) for s in plan.settings if s.values]
    base = [(r, plan.baseline.name) for r in plan.baseline.runs]
    # Repeat j goes before the j/(R-1) share of the settings: the first before them all, the last after them.
    slot = [round(j * len(others) / (len(base) - 1)) for j in range(len(base))]
    out: list[tuple[str, str]] = []
    for i in range(len(others) + 1):
        out += [base[j] for j in range(len(base)) if slot[j] == i]
        out += others[i:i + 1]
    return out


def _write_scenarios(out: Path, variants: dict[str, Scenario]) -> dict[str, Path]:
    make_folder(out / "scenarios", "pdrepro tune")
    paths = {name: out / "scenarios" / f"{name}.yaml" for name in variants}
    for name, variant in variants.items():
        write_file(paths[name], variant.to_yaml(), "pdrepro tune", out)
    return paths


def _same_plan(out: Path, plan: TunePlan) -> None:
    from ..rundir import tuneplan

    found = tuneplan.read(out) if out.is_dir() else None
    if found is not None and found.label != plan.label:
        raise UserError(f"{tuneplan.path(out)}: holds the tune {found.label!r}, not {plan.label!r}; give another "
                        "--out, or rerun the same tune to resume it")


def run(args) -> int:
    from .. import arms as runner
    from ..rundir import tuneplan
    from ..scenario.model import load_scenario
    from ..tune import slurm as slurm_render
    from ..tune.collect import check_outputs, collect
    from ..tune.judge import engine_alone

    if args.judge is not None:
        return _collect(args.judge, args)
    judging_only(args)
    if args.overlay is not None:
        raise UserError("--overlay FILE goes with --judge RUN; a tune run writes RUN/best-overlay.yaml itself")
    if args.out is None:
        raise UserError("give the tune's run folder: --out RUN")
    # --prompt-lens narrows the scenario itself: every setting's scenario records the lengths it runs.
    scenario = shared.narrow(args, load_scenario(args.scenario))
    plan, variants = _plan(args, scenario)
    out = args.out.absolute()
    if any(ord(c) < 32 or ord(c) == 127 for c in str(out)):
        raise UserError("--out: the path holds a control character; give a plain path")
    _same_plan(out, plan)
    order = _order(plan)
    if args.render:
        more, backend = shared.stack_args(args, "pdrepro tune"), shared.transfer_backend(args)
        site = site_fields(args, False, render="--render slurm")

        def job(run_: str, scenario_file: str):
            return render_request(more, target="slurm", scenario=scenario_file, **site, transfer_backend=backend,
                                  run_dir=str(out / run_), out=str(out / run_ / "job"))

        # Every input the runs' jobs share, checked before any job is rendered or anything written: the tune's
        # own words, then each run's render in memory (its setting's scenario and knobs, the backend, the site
        # options, the run folder's form). The model and dataset are the cluster's: `render` checks a given --model
        # (config.json) and --dataset where it renders (the submit host sees the nodes' shared paths); left out,
        # the jobs use the nodes' default paths, which no check here can see. The serving packages are not asked
        # of this Python: the runs' servers start in the GPU image on the nodes.
        shared.cluster_job_inputs(args, out, "--render slurm")
        slurm_render.check(out, [run_ for run_, _ in order], more)
        check_jobs([(f"run {run_}", variants[name], partial(job, run_)) for run_, name in order])
        make_folder(out, "pdrepro tune")
        paths = _write_scenarios(out, variants)
        tuneplan.write(out, plan)
        return slurm_render.render(out, scenario.name, [(run_, job(run_, str(paths[name]))) for run_, name in order],
                                   run_render)
    site = {"target": "onebox", "launcher": "host", **site_fields(args, True, render="--render slurm")}
    # Every input the settings share, before any starts: the model, the dataset, the serving packages.
    launch = scenario.launch
    model, dataset = shared.check_inputs(
        "tune", model=args.model, dataset=args.dataset, engine=launch.engine if launch else "sglang",
        backend_names=[stack_words.read_words([], _stack_words(args)).backend or (launch.transfer_backend if launch
                                                                                  else shared.TCP_BACKEND)])
    extra = shared.sweep_args(args, "pdrepro tune")
    files = {name: str(out / "scenarios" / f"{name}.yaml") for name in variants}
    more_stack, backend = shared.stack_args(args, "pdrepro tune"), shared.transfer_backend(args)
    arms = [member(out, run_, stack={"scenario": files[name], "transfer_backend": backend, **site}, stack_words=more_stack,
                   sweep={"scenario": files[name], "model_path": model, "dataset_path": dataset}, sweep_words=extra)
            for run_, name in order]
    check_outputs(out)
    # A copy of the tune moved elsewhere, or on a fresh machine with the model and dataset at other paths, resumes.
    same = memberwords.differ(out, movable=memberwords.WHERE_FILES)
    runner.start(out, plan.label, arms, differ=same)  # refuses another tune's (or A/B's) folder before a file is touched
    _write_scenarios(out, variants)
    tuneplan.write(out, plan)
    engine_alone(out, plan)  # a ceiling put beside the tune that is not of it is refused before any GPU time
    status = runner.run_arms(out, plan.label, arms, command="tune", stages=STAGES, differ=same)
    if status in STOPPED:
        return status
    summary = collect(out, plan)
    passed = all(r.passed for s in summary.settings for r in s.runs)
    return status if status == EXIT_BAD_INPUT else 0 if status == 0 and passed else EXIT_FAILED


def _collect(run: Path, args) -> int:
    """`tune --judge RUN`: the tune ranked again, in memory; nothing is written into RUN."""
    from ..kinds.tune import Tune
    from ..rundir import RunDir
    from ..tune.collect import collected, own_plan, passed

    run = run.absolute()
    if not run.is_dir():
        raise UserError(f"--judge {run}: no such folder; give the tune's run folder")
    check_report_target(args, run)
    refuse_inside(args.overlay, run, "--overlay")
    summary, text, overlay = collected(run, own_plan(run))
    if args.overlay is not None:
        write_file(args.overlay, overlay, "--overlay")
    # The verdict as `check RUN` gives it (kinds.composite): one schema and status for every judge.
    return give(args, run, Tune().given(RunDir(run), summary, text, passed(summary)))
