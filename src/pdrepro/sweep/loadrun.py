"""The load sweep: the sweep's machinery (health wait, transport proof, provenance, log copies, /metrics
scrapes, the bench launcher, the run lock and the signal handling) run once per step of load at one prompt
length, each step's raw results in RUN/steps/<step>/ as a one-length run of its own.

Unlike a sweep's length, a step whose bench client finished with failed requests is measured, not failed:
its failures are the finding, which the load gates judge. A step is failed (and run again on resume) only
when the client left no usable result (it exited non-zero, ran past --length-timeout, or wrote another
step's record). A step stopped by a signal is unfinished: whatever the client had written is set aside as
bench/result-<L>.jsonl.interrupted and the steps measured before it are kept; the rerun starts at it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import runfile, signals
from ..core.errors import UserError
from ..core.progress import JobClock
from ..core.signals import signal_name
from ..rundir import RunDir, loadstate, memberrecord
from ..rundir.loadstate import LoadPlan, LoadState, LoadStep, StepRecord, step_run
from ..rundir.memberrecord import MemberRecord, new_run_id
from ..scenario.model import Scenario
from .benchcmd import bench_argv
from .config import SweepConfig
from .progress import fmt_s
from .provenance import ProvenanceRecord
from .runlock import RunLock
from .runner import _check_inputs, _ready, _write_scenario
from .state import SweepState
from .step import client_target, collect_logs, run_client, scrape

log = logging.getLogger(__name__)


@dataclass
class LoadOutcome:
    run: RunDir
    done: list[str]
    skipped: list[str]
    failed: dict[str, str]


def step_scenario(scenario: Scenario, plan: LoadPlan, step: LoadStep) -> Scenario:
    """The scenario as the bench client runs one step: the plan's length and requests, the step's load."""
    sweep = scenario.sweep.model_copy(update={
        "prompt_lens": (plan.prompt_len,), "num_prompts": plan.num_prompts, "max_concurrency": step.concurrency,
        "request_rate": float("inf") if step.request_rate is None else step.request_rate})
    return scenario.model_copy(update={"sweep": sweep})


def result_problem(path: Path, plan: LoadPlan, step: LoadStep) -> str | None:
    """None if ``path`` holds one finished bench run of this step (failed requests included), else what is
    wrong with it."""
    if not path.is_file():
        return "no result file"
    lines = [line for line in runfile.read_text(path, kind=runfile.BENCH).splitlines() if line.strip()]
    if len(lines) != 1:
        return "empty" if not lines else f"{len(lines)} runs appended in one file (the client appends); expected one"
    try:
        record = json.loads(lines[0])
    except (json.JSONDecodeError, RecursionError):
        return "not JSON (cut short?)"
    if not isinstance(record, dict):
        return "not a JSON object"
    asked = record.get("random_input_len")
    if asked is not None and asked != plan.prompt_len:
        return f"holds a run of prompt length {asked}, not {plan.prompt_len}"
    cap = record.get("max_concurrency")
    if "max_concurrency" in record and cap != step.concurrency:
        return f"holds a run at concurrency {cap}, not {step.concurrency}"
    sent = next((len(record[k]) for k in ("errors", "ttfts") if isinstance(record.get(k), list)), None)
    if sent is not None and sent != plan.num_prompts:
        return f"sent {sent} requests, not {plan.num_prompts}"
    completed = record.get("completed")
    if isinstance(completed, bool) or not isinstance(completed, int) or not 0 <= completed <= plan.num_prompts:
        return f"completed is {completed!r}, not a count of at most {plan.num_prompts} requests"
    return None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class _State:
    """RUN/load-state.json, saved on every change so an interrupted load sweep resumes from it."""

    def __init__(self, top: RunDir, plan: LoadPlan):
        found = loadstate.read(top.root)
        if found is None:
            self.state = LoadState(plan=plan, run_id=new_run_id())
            loadstate.write(top.root, self.state)
        else:
            loadstate.check_same(found, plan, loadstate.path(top.root))
            self.state = found
            if found.run_id is None:  # a state from before steps carried a record: this run gives it its id
                self.state = found.model_copy(update={"run_id": new_run_id()})
                loadstate.write(top.root, self.state)

    def record(self, top: RunDir, step: LoadStep, **fields) -> None:
        self.state = self.state.with_step(step.name, StepRecord(at=_now(), **fields))
        loadstate.write(top.root, self.state)


def _own_step_run(top: RunDir, step: LoadStep) -> RunDir:
    """The step's folder, refused when something there is no folder of the run: a link planted where a step's
    results go would have them read from, set aside into or written outside the run."""
    run = step_run(top.root, step)
    for folder in (run.root.parent, run.root, run.bench_dir, run.metrics_dir, run.raw_metrics_dir):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise UserError(f"{folder}: not a folder of the run (a link or a file); move it away and rerun")
    return run


def _steps_to_run(top: RunDir, plan: LoadPlan, state: _State) -> tuple[list[LoadStep], list[LoadStep]]:
    """(to run, already measured): a step is measured when its state says so and its result holds; a result
    that does not hold is set aside, and the step runs again."""
    todo, skipped = [], []
    for step in plan.steps:
        run = _own_step_run(top, step)
        path = run.bench_file(plan.prompt_len)
        problem = result_problem(path, plan, step)
        record = state.state.step(step.name)
        if problem is None and record.status == "done" and record.window is not None:
            skipped.append(step)
            continue
        if path.exists():
            aside = run.set_aside_bench_file(plan.prompt_len, "invalid")
            os.replace(path, aside)
            log.info(f"step {step.name}: its result does not hold ({problem or 'the state does not record it'}); "
                     f"moved to {aside.name}, rerunning")
        todo.append(step)
    if skipped:
        log.info(f"resuming: {len(skipped)} step(s) already measured ({', '.join(s.name for s in skipped)}), skipped")
    return todo, skipped


def _run_step(cfg: SweepConfig, top: RunDir, plan: LoadPlan, step: LoadStep, state: _State) -> str | None:
    """Runs the bench client for one step; the reason it failed, or None. KeyboardInterrupt leaves as it came,
    the step recorded unfinished and its partial result set aside."""
    run = _own_step_run(top, step)
    run.bench_dir.mkdir(parents=True, exist_ok=True)
    if state.state.run_id is not None:  # the step says whose member it is (analysis.members reads it)
        memberrecord.write(run.root, MemberRecord(kind="load", composite=state.state.run_id, member=step.name),
                           top.root)
    scenario = step_scenario(cfg.scenario, plan, step)
    scfg = dataclasses.replace(cfg, scenario=scenario)
    L = plan.prompt_len
    partial = run.partial_bench_file(L)
    partial.unlink(missing_ok=True)
    target = client_target(cfg)
    argv = bench_argv(scenario, L, target, partial)
    mounts = {top.root: True}
    for p in (target.dataset_path, target.model_path, target.tokenizer):
        if p and Path(p).exists():
            mounts[Path(p)] = False
    scrape(scfg, run, L, "before")
    started = time.time()
    # Recorded before the client starts: a sweep killed outright (-9) leaves the step unfinished, not pending.
    state.record(top, step, status="unfinished", started_at=started, reason="its bench client was running")
    try:
        reason = run_client(cfg, argv, mounts, top.logs_dir, f"step {step.name}")
    except KeyboardInterrupt as exc:
        why = f"stopped by {signal_name(exc)} while its bench client ran; rerun to measure it"
        if partial.exists():
            os.replace(partial, run.set_aside_bench_file(L, "interrupted"))
            why += f" (its partial result is set aside as {run.set_aside_bench_file(L, 'interrupted').name})"
        state.record(top, step, status="unfinished", started_at=started, ended_at=max(time.time(), started),
                     reason=why)
        raise
    ended = max(time.time(), started)
    if reason is None:
        problem = result_problem(partial, plan, step)
        reason = None if problem is None else f"result not valid: {problem}"
    if reason is None:
        os.replace(partial, run.bench_file(L))
    elif partial.exists():
        os.replace(partial, run.set_aside_bench_file(L, "failed"))
    scrape(scfg, run, L, "after")
    state.record(top, step, status="done" if reason is None else "failed", started_at=started, ended_at=ended,
                 reason=reason)
    return reason


def run_load(cfg: SweepConfig, plan: LoadPlan) -> LoadOutcome:
    _check_inputs(cfg)
    if cfg.configuration is not None:
        raise UserError("--configuration: a load sweep measures one PD stack; leave it out")
    top = RunDir(Path(cfg.out).resolve())
    _write_scenario(cfg, top)
    with RunLock(top.root):
        return _locked(cfg, top, plan)


def _locked(cfg: SweepConfig, top: RunDir, plan: LoadPlan) -> LoadOutcome:
    state = _State(top, plan)
    todo, skipped = _steps_to_run(top, plan, state)
    # The sweep's own record of its events (the transport proof) and the provenance that names it.
    events = SweepState(top)
    prov = ProvenanceRecord(cfg, top)
    if todo or not top.provenance_file.is_file():
        prov.prefetch()
    # _ready only asks whether anything is left to run (nothing: the proof recorded before stands).
    _wait_s, facts = _ready(cfg, top, events, [plan.prompt_len] if todo else [], prov)
    if todo or not top.provenance_file.is_file():
        prov.write_soon(facts, events)
    done: list[str] = []
    failed: dict[str, str] = {}
    job = JobClock(len(todo) + len(skipped))  # the whole-job line before each step (core/progress.py)
    for _ in skipped:
        job.skip()
    for index, step in enumerate(todo, start=1):
        log.info(job.begin(step.name))
        log.info(f"[{index}/{len(todo)}] step {step.name}: {plan.num_prompts} prompts of {plan.prompt_len} tokens, "
                 f"{step.describe()}")
        t0 = time.monotonic()
        try:
            signals.checkpoint()
            reason = _run_step(cfg, top, plan, step, state)
        except KeyboardInterrupt as exc:
            collect_logs(cfg, top)
            prov.write(facts, events)
            log.info(f"interrupted during step {step.name} ({signal_name(exc)}); {len(done) + len(skipped)} measured "
                     "step(s) kept, rerun to resume")
            raise
        except Exception:
            prov.settle()
            raise
        collect_logs(cfg, top)
        job.end()
        if reason is None:
            done.append(step.name)
            log.info(f"[{index}/{len(todo)}] step {step.name}: done in {fmt_s(time.monotonic() - t0)}")
        else:
            failed[step.name] = reason
            log.info(f"[{index}/{len(todo)}] step {step.name}: FAILED ({reason})")
            if cfg.on_failure == "stop":
                log.info("stopping at the first failed step (--on-failure stop)")
                break
    if todo:
        collect_logs(cfg, top)
        prov.write(facts, events)
    log.info(f"load: {len(done)} step(s) run, {len(skipped)} already measured, {len(failed)} failed")
    return LoadOutcome(top, done, [s.name for s in skipped], failed)
