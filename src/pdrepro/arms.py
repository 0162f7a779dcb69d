"""The arms runner, written once: the same measurement on several stacks of one box, one after the other.

An arm is a name (its folder, RUN/<name>), the words of `pdrepro stack up` that make its stack (scenario and
site options: `--transfer-backend NAME` for an A/B of transfer backends, a regular stack for a comparison)
and the words of `pdrepro sweep` that measure it. Per arm: `stack up --out RUN/<arm>`, then `sweep` against
the router, prefill and decode URLs its stack.json records, then `stack down RUN/<arm>`, always: after a
failed sweep, a refused input, or a signal. `pdrepro ab` runs its backends as arms; a comparison (issue 26)
runs its configurations as arms, each swept with `--configuration NAME` into the one comparison run.

Each stage is the CLI command of its name, run in this process through the command runner the caller hands
in (``commands.run_command``, as pipeline.py does), so its flags, messages and exit codes are the command's.
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

from .core import signals
from .core.errors import UserError
from .core.exits import EXIT_BAD_INPUT, STOPPED
from .core.safewrite import make_folder
from .launch.stack import record as stack_record
from .rundir import armsstate
from .rundir.armsstate import ArmRecord, ArmsState

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


def sweep_argv(arm: Arm, run: Path, urls: Endpoints) -> list[str]:
    argv = ["sweep", *arm.sweep, "--router", urls.router]
    argv += ["--prefill", urls.prefill] if urls.prefill else []
    argv += ["--decode", urls.decode] if urls.decode else []
    for url in urls.workers:
        argv += ["--worker", url]
    if arm.configuration:
        return argv + ["--configuration", arm.configuration, "--out", str(run)]
    return argv + ["--out", str(run / arm.name)]


def start(run: Path, label: str, arms: Sequence[Arm]) -> ArmsState:
    """The state to run ``arms`` under in ``run``: the one found there when it is this run's (its label), else a
    fresh one."""
    if not arms:
        raise UserError("no arms to run; name at least one")
    for arm in arms:
        arm.check()
    wanted = ArmsState(label=label, arms=tuple(a.record() for a in arms))
    wanted.check("the arms asked for")
    make_folder(run, "the arms runner")
    found = armsstate.read(run)
    if found is None:
        armsstate.write(run, wanted)
        return wanted
    armsstate.check_same(found, wanted, armsstate.path(run))
    return found


def run_arms(run: Path, label: str, arms: Sequence[Arm], *, command: str, cli: Callable[[list[str]], int],
             say: Callable[[str], None] = lambda line: print(line, flush=True)) -> int:
    """Every arm not done yet, in order; returns 0 when all are done, the signal's status when one stopped
    them (the arms after it are not started), else the worst arm's: 2 when one's input was refused, else 1.
    ``command`` is the CLI command running the arms (`ab`, `tune`, `compare`): an arm's error line names it,
    as the CLI names the command in its own."""
    state = start(run, label, arms)
    worst = 0
    with signals.noting() as noted:
        for arm in arms:
            if state.arm(arm.name).status == "done":
                say(f"== arm {arm.name}: done already, skipped")
                continue
            if noted.signum is not None:
                return 128 + noted.signum
            status, state = _one(run, arm, state, cli, say, noted, command)
            if status in STOPPED:
                return status
            if noted.signum is not None:
                return 128 + noted.signum
            # A failed or refused arm does not stop the others: what refused one backend's stack (its
            # packages, its transport proof) is the arm's finding, and the next arm is measured all the same.
            worst = max(worst, min(status, EXIT_BAD_INPUT))
    return worst


def _save(run: Path, state: ArmsState, arm: ArmRecord, **update) -> ArmsState:
    state = state.with_arm(arm.model_copy(update=update))
    armsstate.write(run, state)
    return state


def _one(run: Path, arm: Arm, state: ArmsState, cli, say, noted: signals.Noted, command: str) -> tuple[int, ArmsState]:
    """One arm: up, sweep, down. It is done when its sweep ended 0 and its stack went down; a signal noted
    while its sweep ran lets it finish so (the runner stops after it), one noted before the sweep stops it."""
    folder = run / arm.name
    state = _save(run, state, state.arm(arm.name), status="running", exit=None, reason=None)
    status, why = EXIT_BAD_INPUT, "its stack did not come up"
    try:
        say(f"== arm {arm.name}: stack up --out {folder}")
        status = cli(["stack", "up", *arm.stack, "--out", str(folder)])
        if status == 0 and noted.signum is not None:
            status, why = 128 + noted.signum, "stopped by a signal before its sweep"
        elif status == 0:
            urls = endpoints(folder)
            argv = sweep_argv(arm, run, urls)
            say(f"== arm {arm.name}: sweep against {urls.router}")
            status = cli(argv)
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
            status, why = EXIT_BAD_INPUT, f"`pdrepro stack down {folder}` ended with status {down}"
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
