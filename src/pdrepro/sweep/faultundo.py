"""What `pdrepro fault` does when a signal (Ctrl-C, SIGTERM, a closed terminal) cuts a fault short: it undoes its
own doing before it ends, so the stack is left as the fault found it. A stopped process was resumed (SIGCONT) on
the way out already and is only looked at again here; a killed role is started again through the stack's own
launcher (the restart path the fault itself uses) and given a short wait for its health. A second signal gives
up that wait, never the restart: the process started stays started and recorded. What was restored, or what
could not be with the command that fixes it, is kept in the fault's result and printed in one line."""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import advice, signals
from ..core.errors import UserError
from ..launch.stack import ownership, record, restart
from ..rundir import RunDir
from ..rundir.faultsummary import Undo

log = logging.getLogger(__name__)

# How long the undo waits for a restarted role to answer its health: a user who pressed Ctrl-C wants the prompt
# back soon, and a second Ctrl-C ends the wait sooner still. A role still starting then is named, not hidden.
UNDO_WAIT_S = 60.0
PROBE_EVERY_S = 0.2
# How long a SIGKILLed role may take to end before the undo gives up on starting it again (its port is held).
GONE_WITHIN_S = 10.0


@dataclass
class Hit:
    """What a fault has done to its role so far, kept as it goes, so a stop at any point knows what to undo."""

    fields: dict = field(default_factory=dict)     # the fault's result fields, as far as it got
    killed: bool = False                           # SIGKILL was sent to the role
    again: restart.Restarted | None = None         # the role started again (not yet up, unless ``up``)
    up: bool = False                               # the restarted role answered its health
    stopped: list[str] = field(default_factory=list)   # the processes SIGSTOP reached
    resumed: list[str] | None = None               # those SIGCONT reached (None: not sent yet)


class Interrupted(signals.Stopped):
    """A fault cut short by a signal, with its result (what it got, what it undid)."""

    def __init__(self, signum: int, result) -> None:
        super().__init__(signum)
        self.result = result


def start_role(stack_run: Path, target: restart.Role, info_path: str | None) -> restart.Restarted:
    """The killed role started again from its recorded command, as `stack up` started it (its record entry
    replaced before the spawn, completed after)."""
    rec = record.read(stack_run)
    ask_info = info_path if target.entry.role.value != "router" else None
    again = restart.start_again(RunDir(stack_run), rec, target.entry, ask_info)
    log.info(f"fault: {target.entry.name} started again (pid {again.proc.pid}); waiting for its health")
    return again


def until_up(again: restart.Restarted, name: str, deadline: float, late: str) -> tuple[bool, str]:
    """Waits until the restarted role is up (then its record entry is completed) or ``deadline`` (monotonic)
    passed: (up, why not; ``late`` says how late it was). Every wait answers a signal within a poll."""
    t0 = time.monotonic()
    while True:
        state = signals.wait_for(lambda: restart.up_now(again))
        if state.up:
            restart.mark_healthy(again, time.monotonic() - t0)
            return True, ""
        if state.final:
            return False, f"{name} {state.why} after its restart"
        if time.monotonic() > deadline:
            return False, f"{name} {late}: {state.why}"
        signals.sleep(PROBE_EVERY_S)


def _fix(stack_run: Path) -> str:
    return (f"see `{advice.pdrepro('stack', 'status', stack_run)}`; to start it whole again: "
            f"`{advice.stack_down(stack_run)}`, then `pdrepro stack up` as before")


def _still_stopped(target: restart.Role) -> list[str]:
    return [f"{f.name} (pid {f.pid})" for f in restart.running(target.all)
            if (st := ownership.stat(f.pid)) is not None and st.state == "T"]  # type: ignore[arg-type]


def _resumed(stack_run: Path, target: restart.Role, stack_id: str, hit: Hit) -> Undo:
    """stop-decode: the SIGCONT went out on the way here; a process still stopped gets another one now."""
    if not hit.stopped:
        return Undo(action="nothing", ok=True, line=f"{target.entry.name} was not stopped yet: nothing to restore")
    left = _still_stopped(target)
    if left:
        restart.send(target.all, stack_id, signal.SIGCONT)
        left = _still_stopped(target)
    if left:
        pids = " ".join(p.rsplit("pid ", 1)[1].rstrip(")") for p in left)
        return Undo(action="resumed", ok=False, line=f"{', '.join(left)} still stopped after SIGCONT: resume it "
                                                        f"with `kill -CONT {pids}`, or {_fix(stack_run)}")
    return Undo(action="resumed", ok=True, line=f"resumed {', '.join(hit.stopped)} (SIGCONT)")


def _restarted(stack_run: Path, target: restart.Role, info_path: str | None, hit: Hit) -> Undo:
    """kill-*: the role started again (unless the fault had started it already) and a short wait for its health;
    a second signal ends that wait, and the line says the role is still starting."""
    name = target.entry.name
    if not hit.killed:
        return Undo(action="nothing", ok=True, line=f"{name} was not signalled yet: nothing to restore")
    if hit.up:
        return Undo(action="nothing", ok=True, line=f"{name} had been started again and was up: nothing to restore")
    t0 = time.monotonic()
    try:
        # The flag is cleared for the undo's waits, so a second signal ends them (and only them).
        with signals.rearmed():
            if hit.again is None:
                left = restart.wait_gone(target.all, GONE_WITHIN_S)
                if left:
                    return Undo(action="restarted", ok=False, line=f"{', '.join(f.line() for f in left)}: still "
                                f"running {GONE_WITHIN_S:g} s after SIGKILL, so {name} was not started again; "
                                f"{_fix(stack_run)}")
                hit.again = start_role(stack_run, target, info_path)
            pid = hit.again.proc.pid
            log.info(f"fault: restoring {name} (pid {pid}): waiting up to {UNDO_WAIT_S:g} s for its health; "
                     "Ctrl-C again ends the wait (the server keeps starting)")
            up, why = until_up(hit.again, name, t0 + UNDO_WAIT_S, f"was not up within {UNDO_WAIT_S:g} s")
    except KeyboardInterrupt:
        if hit.again is None:
            return Undo(action="restarted", ok=False, line=f"{name} not started again: a second signal ended the wait "
                                                           f"for its killed processes to end; {_fix(stack_run)}")
        return Undo(action="restarted", ok=False, line=f"{name} started again (pid {hit.again.proc.pid}) but not "
                                                       f"healthy when a second signal ended the wait; {_fix(stack_run)}")
    except (UserError, OSError) as exc:
        return Undo(action="restarted", ok=False, line=f"{name} could not be started again ({exc}); {_fix(stack_run)}")
    if not up:
        return Undo(action="restarted", ok=False, line=f"{name} started again (pid {pid}), not healthy: {why}; "
                                                       f"{_fix(stack_run)}")
    hit.up = True
    return Undo(action="restarted", ok=True, line=f"{name} started again (pid {pid}) and healthy after "
                                                  f"{time.monotonic() - t0:.1f} s")


def undo(stack_run: Path, fault: str, target: restart.Role, stack_id: str, info_path: str | None, hit: Hit) -> Undo:
    """Undoes what ``hit`` says the fault did; never raises for a second signal (it only shortens a wait)."""
    if fault.startswith("stop-"):
        return _resumed(stack_run, target, stack_id, hit)
    return _restarted(stack_run, target, info_path, hit)
