"""The arms runner, written once: the same measurement on several stacks of one box, one after the other.

An arm is a name (its folder, RUN/<name>), the words of `pdrepro stack up` that make its stack (scenario and
site options: `--transfer-backend NAME` for an A/B of transfer backends, a regular stack for a comparison)
and the words of `pdrepro sweep` that measure it. Per arm: `stack up --out RUN/<arm>`, then `sweep` against
the router, prefill and decode URLs its stack.json records, then `stack down RUN/<arm>`, always: after a
failed sweep, a refused input, or a signal. `pdrepro ab` runs its backends as arms; a comparison (issue 26)
runs its configurations as arms, each swept with `--configuration NAME` into the one comparison run.

The sweep is handed a typed request (sweep.request.SweepRequest: the arm's options, the URLs its stack
recorded, its folder) by the sweep stage the caller hands in (commands.requests.SWEEP: the sweep command's own
function, in this process, with the CLI's error handling);
stack up, stack down and analyze are still their CLI commands run through the command runner the caller hands in
(``commands.run_command``), so their flags, messages and exit codes are the command's.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast, get_args

from .core import advice, signals
from .core.errors import UserError
from .core.exits import EXIT_BAD_INPUT, STOPPED
from .core.progress import JobClock
from .core.safewrite import make_folder
from .launch.stack import record as stack_record
from .rundir import RunDir, armsstate, memberrecord
from .rundir.armsstate import ArmRecord, ArmsState
from .rundir.memberrecord import CompositeKind, MemberRecord, new_run_id
from .scenario.model import load_scenario
from .sweep.request import SweepRequest
from .sweep.state import result_problem

# Words the runner sets on each stage itself: an arm may not set them again (the stage would take the last).
OWN_STACK_FLAGS = ("--out",)
OWN_SWEEP_FLAGS = ("--router", "--prefill", "--decode", "--worker", "--out", "--configuration")


@dataclass(frozen=True)
class Arm:
    """One stack and its measurement. ``configuration``: a comparison's configuration; its sweep then writes
    into RUN/<configuration> itself (``--configuration NAME --out RUN``), so the arm's name must be it."""

    name: str
    stack: tuple[str, ...]
    sweep: tuple[str, ...]
    backend: str | None = None
    configuration: str | None = None

    def check(self) -> None:
        if not armsstate.is_arm_name(self.name):
            raise UserError(f"arm {self.name!r}: not a plain folder name (letters, digits, '.', '_', '-'); rename it")
        if self.configuration is not None and self.configuration != self.name:
            raise UserError(f"arm {self.name!r} measures configuration {self.configuration!r}: the sweep writes "
                            "RUN/<configuration>, so name the arm after it")
        for words, own, stage in ((self.stack, OWN_STACK_FLAGS, "stack up"), (self.sweep, OWN_SWEEP_FLAGS, "sweep")):
            for word in words:
                if word.split("=", 1)[0] in own:
                    raise UserError(f"arm {self.name!r}: its `{stage}` words set {word.split('=', 1)[0]}, which the "
                                    "arms runner sets itself; leave it out")

    def record(self) -> ArmRecord:
        return ArmRecord(name=self.name, backend=self.backend, configuration=self.configuration, stack=self.stack,
                         sweep=self.sweep)


class SweepStage(Protocol):
    """The sweep stage a runner is handed (commands.requests.SWEEP, or a comparison's): the typed request of a
    member's sweep from its options and what the runner sets, and the stage run on it (its exit status)."""

    def request(self, words: Sequence[str], *, out: Path, router: str, prefill: str | None, decode: str | None,
                workers: Sequence[str], configuration: str | None) -> SweepRequest: ...

    def __call__(self, request: SweepRequest) -> int: ...


@dataclass(frozen=True)
class Endpoints:
    router: str
    prefill: str | None
    decode: str | None
    workers: tuple[str, ...]


def endpoints(folder: Path) -> Endpoints:
    """The URLs of the stack RUN/<arm>/stack.json records: each process's health URL without its path."""
    rec = stack_record.read(folder)
    by_role: dict[str, list[str]] = {}
    for p in rec.processes:
        by_role.setdefault(str(p.role), []).append(p.health_url.rsplit("/", 1)[0])
    routers = by_role.pop("router", [])
    if not routers:
        raise UserError(f"{stack_record.path(folder)}: records no router; the sweep has nothing to send to")
    prefill, decode = by_role.pop("prefill", [None])[0], by_role.pop("decode", [None])[0]
    return Endpoints(routers[0], prefill, decode, tuple(url for urls in by_role.values() for url in urls))


def sweep_request(arm: Arm, run: Path, urls: Endpoints, stage: SweepStage) -> SweepRequest:
    """The arm's sweep as a typed request: its own options, the URLs its stack recorded, and its run folder
    (a comparison's configuration writes into RUN/<configuration> itself: ``--configuration NAME --out RUN``)."""
    return stage.request(arm.sweep, router=urls.router, prefill=urls.prefill, decode=urls.decode,
                         workers=urls.workers, configuration=arm.configuration,
                         out=run if arm.configuration else run / arm.name)


def start(run: Path, label: str, arms: Sequence[Arm]) -> ArmsState:
    """The state to run ``arms`` under in ``run``: the one found there when it is this run's (its label), else a
    fresh one."""
    if not arms:
        raise UserError("no arms to run; name at least one")
    for arm in arms:
        arm.check()
    wanted = ArmsState(label=label, arms=tuple(a.record() for a in arms), run_id=new_run_id())
    wanted.check("the arms asked for")
    make_folder(run, "the arms runner")
    _refuse_links(run, arms)
    found = armsstate.read(run)
    if found is None:
        armsstate.write(run, wanted)
        return wanted
    armsstate.check_same(found, wanted, armsstate.path(run))
    if found.run_id is None:  # a state from before members carried a record: this run gives it its id
        found = found.model_copy(update={"run_id": wanted.run_id})
        armsstate.write(run, found)
    return found


def _refuse_links(run: Path, arms: Sequence[Arm]) -> None:
    """An arm's folder that is a link (or resolves outside the run) is refused before anything is written through
    it: the stack record, the logs and the bench files would land wherever it points."""
    for arm in arms:
        why = memberrecord.folder_problem(run, arm.name)
        if why is not None:
            raise UserError(f"arm {arm.name}: {why}; move it away and rerun")


def measured(run: Path, arm: Arm) -> str | None:
    """None when the arm's folder already holds a complete bench result of every length its sweep's scenario
    asks for (the sweep's own test of a result, ``result_problem``), else what it lacks. Such an arm is judged,
    not run again: a stack restarted into its logs/ would add a start that served nothing, which the analysis
    rightly refuses as not this run's ("the server started again at line N"), on every rerun."""
    folder = run / arm.name
    given = _word(arm.sweep, "--scenario")
    if given is None:
        return "its sweep names no --scenario"
    if folder.is_symlink() or not folder.is_dir():
        return f"{folder}: not a folder of this run"
    try:
        sweep = load_scenario(given).sweep
    except UserError as exc:
        return str(exc)
    for length in sweep.prompt_lens:
        try:
            problem = result_problem(RunDir(folder).bench_file(length), sweep.num_prompts, length)
        except UserError as exc:  # a link, a FIFO, a file past the reader's cap: the sweep refuses it itself
            problem = str(exc)
        if problem:
            return f"length {length}: {problem}"
    return None


def _word(words: Sequence[str], flag: str) -> str | None:
    """The value the sweep's words give ``flag`` (the last one, as argparse takes it), or None."""
    value = None
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith(flag + "="):
            value = word.split("=", 1)[1]
    return value


def clear_leftovers(run: Path, arms: Sequence[Arm], cli: Callable[[list[str]], int], say: Callable[[str], None],
                    command: str) -> int:
    """A run killed outright (SIGKILL, a lost machine) leaves an arm's stack record unstopped, its servers maybe
    still running, and `stack up` would refuse the folder: each is taken down first with `pdrepro stack down`,
    which proves every process this stack's before it signals it and names any it cannot (they are left
    alone, and the runner stops there: a port they hold is not this run's to take). 0, or that status."""
    for arm in arms:
        folder = run / arm.name
        if folder.is_symlink() or not stack_record.path(folder).is_file():
            continue
        if stack_record.read(folder).stopped_at is not None:
            continue
        say(f"== arm {arm.name}: an earlier run left its stack record unstopped; pdrepro stack down {folder}")
        status = cli(["stack", "down", str(folder)])
        if status:
            say(f"pdrepro {command}: error: arm {arm.name}: the stack an earlier run left in {folder} is not all "
                "provably its own (named above) and was left alone; stop what it names, then rerun")
            return status
    return 0


def run_arms(run: Path, label: str, arms: Sequence[Arm], *, command: str, cli: Callable[[list[str]], int],
             say: Callable[[str], None] = lambda line: print(line, flush=True),
             is_measured: Callable[[Path, Arm], str | None] = measured, sweep: SweepStage) -> int:
    """Every arm not done yet, in order; returns 0 when all are done, the signal's status when one stopped
    them (the arms after it are not started), else the worst arm's: 2 when one's input was refused, else 1.
    ``command`` is the CLI command running the arms (`ab`, `tune`, `compare`): an arm's error line names it,
    as the CLI names the command in its own; ``cli`` runs the stack and analysis stages, ``sweep`` takes each arm's
    typed sweep request (``sweep_request``). A stack an earlier run left up is taken down first
    (``clear_leftovers``); an arm whose lengths are all measured (``is_measured``: None) is judged, not run."""
    state = start(run, label, arms)
    worst = 0
    job = JobClock(len(arms))  # the whole-job line before each arm (core/progress.py)
    with signals.noting() as noted:
        status = clear_leftovers(run, arms, cli, say, command)
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
                status, state = _judge_measured(run, arm, state, cli, say)
            else:
                status, state = _one(run, arm, state, cli, say, noted, command, sweep)
            job.end()
            if status in STOPPED:
                return status
            if noted.signum is not None:
                return 128 + noted.signum
            # A failed or refused arm does not stop the others: what refused one backend's stack (its
            # packages, its transport proof) is the arm's finding, and the next arm is measured all the same.
            worst = max(worst, min(status, EXIT_BAD_INPUT))
    return worst


def _judge_measured(run: Path, arm: Arm, state: ArmsState, cli, say) -> tuple[int, ArmsState]:
    """An arm an earlier run measured whole (stopped after its last length, or its machine went away): its
    folder is analysed as its sweep would have at its end (unless its sweep analyses nothing, as a comparison's
    configurations), and no stack is started into its logs/."""
    folder = run / arm.name
    say(f"== arm {arm.name}: every length is measured already; judged, not run again")
    status = 0 if "--no-analyze" in arm.sweep else cli(["analyze", str(folder)])
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


def _one(run: Path, arm: Arm, state: ArmsState, cli, say, noted: signals.Noted, command: str,
         sweep: SweepStage) -> tuple[int, ArmsState]:
    """One arm: up, sweep, down. It is done when its sweep ended 0 and its stack went down; a signal noted
    while its sweep ran lets it finish so (the runner stops after it), one noted before the sweep stops it."""
    folder = run / arm.name
    _refuse_links(run, [arm])  # planted since the run started: still nothing written through it
    state = _save(run, state, state.arm(arm.name), status="running", exit=None, reason=None)
    status, why = EXIT_BAD_INPUT, "its stack did not come up"
    try:
        say(f"== arm {arm.name}: stack up --out {folder}")
        status = cli(["stack", "up", *arm.stack, "--out", str(folder)])
        if status == 0 and noted.signum is not None:
            status, why = 128 + noted.signum, "stopped by a signal before its sweep"
        elif status == 0:
            urls = endpoints(folder)
            if state.run_id is not None and command in get_args(CompositeKind):
                # The arm says whose member it is, beside the stack record it wrote (analysis.members reads it).
                memberrecord.write(folder, MemberRecord(kind=cast(CompositeKind, command), composite=state.run_id,
                                                        member=arm.name), run)
            request = sweep_request(arm, run, urls, sweep)
            say(f"== arm {arm.name}: sweep against {urls.router}")
            status = sweep(request)
            why = "" if status == 0 else f"`pdrepro sweep` ended with status {status}"
        else:
            why = f"`pdrepro stack up` ended with status {status}"
    except UserError as exc:
        status, why = EXIT_BAD_INPUT, str(exc)
        say(f"pdrepro {command}: error: arm {arm.name}: {exc}")
    finally:
        # Once a signal came, the clean-up is not cut short by the next one (docker stop's grace, a second ^C).
        with signals.ignoring() if status in STOPPED or noted.signum is not None else contextlib.nullcontext():
            down = _down(folder, arm.name, cli, say)
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


def _down(folder: Path, name: str, cli, say) -> int:
    if not stack_record.path(folder).is_file():
        return 0  # nothing was started: no record to stop by
    say(f"== arm {name}: stack down {folder}")
    return cli(["stack", "down", str(folder)])
