"""The arms runner, written once: the same measurement on several stacks of one box, one after the other.

An arm is a member of a composite run, handed over as a typed request (member.MemberRequest): its name (its
folder, RUN/<name>), the `stack up` that makes its stack (scenario and site options: the transfer backend for an
A/B of transfer backends, a regular stack for a comparison) and the sweep that measures it. Per arm: stack up into
RUN/<arm>, then the sweep against the router, prefill and decode URLs its stack.json records, then stack down,
always: after a failed sweep, a refused input, or a signal. `pdrepro ab` runs its backends as arms; a comparison
(issue 26) runs its configurations as arms, each swept as its configuration into the one comparison run.

Each stage is a callable the caller hands in (pdrepro.stages.Stages; commands.requests.STAGES runs each command's
own function in this process, with the CLI's error handling, so its messages and exit codes are the command's),
taking its typed request: the runner never assembles or reads a command word (issue 33 item 3).
RUN/arms-state.json (rundir.armsstate) says how far each arm got: a rerun with the same arms skips the arms
that are done and starts the others again, and the sweep's own resume continues at the length it reached.

Signals: while a stage runs, the stage's own handlers decide (stack up unwinds what it started, the sweep
stops its client), and the stage returns 128 + the signal's number. Between stages a signal is only noted
(a handler that raises could land inside a state write) and acted on at the next step. Either way the arm's
stack is taken down, further signals are ignored while it is, and the runner returns that status (130, 143).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast, get_args

from .core import advice, signals
from .core.errors import UserError
from .core.exits import EXIT_BAD_INPUT, STOPPED
from .core.progress import JobClock
from .core.safewrite import make_folder
from .launch.stack import record as stack_record
from .member import MemberRequest, endpoints
from .rundir import RunDir, armsstate, memberrecord
from .rundir.armsstate import ArmRecord, ArmsState
from .rundir.memberrecord import CompositeKind, MemberRecord, new_run_id
from .scenario.model import load_scenario
from .stages import Stages
from .sweep.state import result_problem


def start(run: Path, label: str, arms: Sequence[MemberRequest], *, differ: armsstate.Differ | None = None,
          say: Callable[[str], None] = lambda line: print(line, flush=True)) -> ArmsState:
    """The state to run ``arms`` under in ``run``: the one found there when it is this run's (its label, and its
    arms' words: by meaning, read back by ``differ``, else literally), else a fresh one. A state whose words only
    spell the same requests otherwise (an older bundle's) is rewritten in this run's words, said on one line."""
    if not arms:
        raise UserError("no arms to run; name at least one")
    for arm in arms:
        arm.check(run)
    wanted = ArmsState(label=label, arms=tuple(a.record() for a in arms), run_id=new_run_id())
    wanted.check("the arms asked for")
    make_folder(run, "the arms runner")
    _refuse_links(run, arms)
    found = armsstate.read(run)
    if found is None:
        armsstate.write(run, wanted)
        return wanted
    resumed = armsstate.check_same(found, wanted, armsstate.path(run), differ)
    if resumed != found:
        say(f"== {armsstate.path(run)}: its arms were recorded in other words for the same requests (an older "
            "spelling, or the run folder moved); it resumes, rewritten in this run's words")
        found = resumed
        armsstate.write(run, found)
    if found.run_id is None:  # a state from before members carried a record: this run gives it its id
        found = found.model_copy(update={"run_id": wanted.run_id})
        armsstate.write(run, found)
    return found


def _refuse_links(run: Path, arms: Sequence[MemberRequest]) -> None:
    """An arm's folder that is a link (or resolves outside the run) is refused before anything is written through
    it: the stack record, the logs and the bench files would land wherever it points."""
    for arm in arms:
        why = memberrecord.folder_problem(run, arm.name)
        if why is not None:
            raise UserError(f"arm {arm.name}: {why}; move it away and rerun")


def measured(run: Path, arm: MemberRequest) -> str | None:
    """None when the arm's folder already holds a complete bench result of every length its sweep's scenario
    asks for (the sweep's own test of a result, ``result_problem``), else what it lacks. Such an arm is judged,
    not run again: a stack restarted into its logs/ would add a start that served nothing, which the analysis
    rightly refuses as not this run's ("the server started again at line N"), on every rerun."""
    folder = arm.folder
    if folder.is_symlink() or not folder.is_dir():
        return f"{folder}: not a folder of this run"
    try:
        sweep = load_scenario(arm.sweep.scenario).sweep
    except UserError as exc:
        return str(exc)
    for length in sweep.prompt_lens:
        bench = RunDir(folder).bench_file(length)
        try:
            # A link is no result of this folder's, wherever it points (the reader follows links: asked here).
            problem = (f"{bench} is a symlink, not a result measured here" if bench.is_symlink() else
                       result_problem(bench, sweep.num_prompts, length))
        except UserError as exc:  # a FIFO, a file past the reader's cap: the sweep refuses it itself
            problem = str(exc)
        if problem:
            return f"length {length}: {problem}"
    return None


def clear_leftovers(arms: Sequence[MemberRequest], stages: Stages, say: Callable[[str], None], command: str) -> int:
    """A run killed outright (SIGKILL, a lost machine) leaves an arm's stack record unstopped, its servers maybe
    still running, and `stack up` would refuse the folder: each is taken down first with `pdrepro stack down`,
    which proves every process this stack's before it signals it and names any it cannot (they are left
    alone, and the runner stops there: a port they hold is not this run's to take). 0, or that status."""
    for arm in arms:
        folder = arm.folder
        if folder.is_symlink() or not stack_record.path(folder).is_file():
            continue
        if stack_record.read(folder).stopped_at is not None:
            continue
        say(f"== arm {arm.name}: an earlier run left its stack record unstopped; pdrepro stack down {folder}")
        status = stages.stack_down(arm.down())
        if status:
            say(f"pdrepro {command}: error: arm {arm.name}: the stack an earlier run left in {folder} is not all "
                "provably its own (named above) and was left alone; stop what it names, then rerun")
            return status
    return 0


def run_arms(run: Path, label: str, arms: Sequence[MemberRequest], *, command: str, stages: Stages,
             say: Callable[[str], None] = lambda line: print(line, flush=True),
             is_measured: Callable[[Path, MemberRequest], str | None] = measured,
             differ: armsstate.Differ | None = None) -> int:
    """Every arm not done yet, in order; returns 0 when all are done, the signal's status when one stopped
    them (the arms after it are not started), else the worst arm's: 2 when one's input was refused, else 1.
    ``command`` is the CLI command running the arms (`ab`, `tune`, `compare`): an arm's error line names it,
    as the CLI names the command in its own; ``stages`` runs each stage on the arm's typed requests. A stack an
    earlier run left up is taken down first (``clear_leftovers``); an arm whose lengths are all measured
    (``is_measured``: None) is judged, not run. ``differ``: how a recorded arm's words are read back (``start``)."""
    state = start(run, label, arms, differ=differ, say=say)
    worst = 0
    job = JobClock(len(arms))  # the whole-job line before each arm (core/progress.py)
    with signals.noting() as noted:
        status = clear_leftovers(arms, stages, say, command)
        if status or noted.signum is not None:
            return 128 + noted.signum if noted.signum is not None else status
        for arm in arms:
            if state.arm(arm.name).status == "done":
                say(f"== arm {arm.name}: done already, skipped")
                job.skip()
                continue
            if noted.signum is not None:
                return 128 + noted.signum
            # Only an arm a run started: a pending arm's folder holds nothing this run measured.
            say(f"== {job.begin(arm.name)}")
            if state.arm(arm.name).status != "pending" and is_measured(run, arm) is None:
                status, state = _judge_measured(run, arm, state, stages, say)
            else:
                status, state = _one(run, arm, state, stages, say, noted, command)
            job.end()
            if status in STOPPED:
                return status
            if noted.signum is not None:
                return 128 + noted.signum
            # A failed or refused arm does not stop the others: what refused one backend's stack (its
            # packages, its transport proof) is the arm's finding, and the next arm is measured all the same.
            worst = max(worst, min(status, EXIT_BAD_INPUT))
    return worst


def _judge_measured(run: Path, arm: MemberRequest, state: ArmsState, stages: Stages, say) -> tuple[int, ArmsState]:
    """An arm an earlier run measured whole (stopped after its last length, or its machine went away): its
    folder is analysed as its sweep would have at its end (unless its sweep analyses nothing, as a comparison's
    configurations), and no stack is started into its logs/."""
    folder = arm.folder
    say(f"== arm {arm.name}: every length is measured already; judged, not run again")
    analysis = arm.analysis()
    status = 0 if analysis is None else stages.analyze(analysis)
    why = None if status == 0 else (f"stopped by {signals.name_of(status - 128)}; rerun the same command to resume"
                                    if status in STOPPED else f"`{advice.analyze(folder)}` ended with status {status}")
    state = _save(run, state, state.arm(arm.name), status="done" if status == 0 else
                  "stopped" if status in STOPPED else "failed", exit=status,
                  reason=armsstate.one_line(why) if why else None)
    return status, state


def _save(run: Path, state: ArmsState, arm: ArmRecord, **update) -> ArmsState:
    state = state.with_arm(arm.model_copy(update=update))
    armsstate.write(run, state)
    return state


def _one(run: Path, arm: MemberRequest, state: ArmsState, stages: Stages, say, noted: signals.Noted,
         command: str) -> tuple[int, ArmsState]:
    """One arm: up, sweep, down. It is done when its sweep ended 0 and its stack went down; a signal noted
    while its sweep ran lets it finish so (the runner stops after it), one noted before the sweep stops it."""
    folder = arm.folder
    _refuse_links(run, [arm])  # planted since the run started: still nothing written through it
    state = _save(run, state, state.arm(arm.name), status="running", exit=None, reason=None)
    status, why = EXIT_BAD_INPUT, "its stack did not come up"
    try:
        say(f"== arm {arm.name}: stack up --out {folder}")
        status = stages.stack_up(arm.stack)
        if status == 0 and noted.signum is not None:
            status, why = 128 + noted.signum, "stopped by a signal before its sweep"
        elif status == 0:
            urls = endpoints(folder)
            if state.run_id is not None and command in get_args(CompositeKind):
                # The arm says whose member it is, beside the stack record it wrote (analysis.members reads it).
                memberrecord.write(folder, MemberRecord(kind=cast(CompositeKind, command), composite=state.run_id,
                                                        member=arm.name), run)
            request = arm.swept_at(urls)
            say(f"== arm {arm.name}: sweep against {urls.router}")
            status = stages.sweep(request)
            why = "" if status == 0 else f"`pdrepro sweep` ended with status {status}"
        else:
            why = f"`pdrepro stack up` ended with status {status}"
    except UserError as exc:
        status, why = EXIT_BAD_INPUT, str(exc)
        say(f"pdrepro {command}: error: arm {arm.name}: {exc}")
    finally:
        # Once a signal came, the clean-up is not cut short by the next one (docker stop's grace, a second ^C).
        with signals.ignoring() if status in STOPPED or noted.signum is not None else contextlib.nullcontext():
            down = _down(arm, stages, say)
        if status == 0 and down:
            status, why = EXIT_BAD_INPUT, f"`{advice.stack_down(folder)}` ended with status {down}"
        stopped = status != 0 and (status in STOPPED or noted.signum is not None)
        if stopped:
            why = f"stopped by {_signal_name(status, noted)}: {why}; rerun the same command to resume"
        state = _save(run, state, state.arm(arm.name), status="done" if status == 0 else
                      "stopped" if stopped else "failed", exit=status, reason=armsstate.one_line(why) or None)
    return status, state


def _signal_name(status: int, noted: signals.Noted) -> str:
    return signals.name_of(noted.signum if noted.signum is not None else status - 128)


def _down(arm: MemberRequest, stages: Stages, say) -> int:
    if not stack_record.path(arm.folder).is_file():
        return 0  # nothing was started: no record to stop by
    say(f"== arm {arm.name}: stack down {arm.folder}")
    return stages.stack_down(arm.down())
