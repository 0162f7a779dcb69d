"""RUN/arms-state.json as a model: the arms of an A/B (or a comparison) and how far each got.

The arms runner (pdrepro.arms) writes it before and after every arm and resumes from it; `pdrepro ab --judge`
reads which arms there are and which backend each ran. It is a claim like any file in a run: read through
the one reader (a size cap, regular files only), validated here (unknown keys, a status or an exit status
out of range, two arms of one name, an arm name that is no plain folder name are refused on one line), and
held to the A/B the command was asked for (``check_same``), so a resume never continues someone else's run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import UserError
from ..core.exits import STOPPED
from ..core.strictmodel import IntBounds, Record
from ..core.text import printable
from .memberrecord import RUN_ID
from .statefile import read_state, write_state

FILE = "arms-state.json"
REASON_MAX = 2000  # characters of an arm's reason: one line of a report, not a log
# An arm's name is the name of its folder in RUN: no path separator, no dot-name, no shell surprises.
ARM_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_ARM_NAME = re.compile(ARM_NAME)
# "stopped": a signal ended the arm (it measured nothing wrong; a rerun starts it again), kept apart from "failed"
# so that a judge never reads an interrupted arm as a finding about its stack.
ArmStatus = Literal["pending", "running", "done", "failed", "stopped", "rendered"]


class ArmRecord(Record):
    """One arm: its folder, the words of its stack and its sweep, and its outcome so far."""

    name: Annotated[str, Field(pattern=ARM_NAME, description="the arm's folder in RUN")]
    backend: str | None = Field(default=None, description="the transfer backend the arm runs (registry name)")
    configuration: str | None = Field(default=None, description="a comparison's configuration the arm is")
    stack: tuple[str, ...] = Field(default=(), description="`pdrepro stack up` words, without --out")
    sweep: tuple[str, ...] = Field(default=(), description="`pdrepro sweep` words, without the URLs and --out")
    status: ArmStatus = "pending"
    exit: Annotated[int, IntBounds(0, 255)] | None = Field(default=None, description="the arm's last exit status")
    # Shown in reports and one-line messages: a reason is one line of bounded length, as the runner writes it.
    reason: Annotated[str, Field(max_length=REASON_MAX, pattern=r"^[^\x00-\x1f\x7f]*$")] | None = Field(
        default=None, description="why the arm failed or was stopped, when it was (one line)")

    def interrupted(self) -> bool:
        """Not run to its end: not started, still marked running, or ended by a signal. A state written before
        "stopped" existed marks a signal's end "failed" with its status (128 + a handled signal)."""
        return self.status in ("pending", "running", "stopped") or (self.status == "failed" and
                                                                     self.exit in STOPPED)

    def unfinished(self) -> str | None:
        """Why this arm's run is not a finished measurement, as the state says; None when it finished (or is a
        rendered job, whose folder alone says how far it got)."""
        if self.status in ("done", "rendered"):
            return None
        if self.status == "pending":
            return "not run yet; rerun the same command to resume"
        if self.status == "running":
            return ("was running when its runner last ended, with no end recorded (killed, or the machine went "
                    "away); rerun the same command to resume")
        if self.status == "failed" and self.exit in STOPPED:
            return f"stopped by a signal ({self.reason or f'exit {self.exit}'}); rerun the same command to resume"
        return self.reason or self.status


class ArmsState(Record):
    schema_version: Literal[1] = 1
    label: Annotated[str, Field(min_length=1, max_length=500)] = Field(description="which A/B or comparison this is")
    arms: tuple[ArmRecord, ...] = Field(min_length=1)
    # Random, once per run of arms; each arm it starts records it (rundir.memberrecord). None: a state written
    # before members carried a record (or a rendered one, whose jobs start their members themselves).
    run_id: Annotated[str, Field(pattern=RUN_ID)] | None = Field(default=None, description="the run's own id")

    def check(self, source: str) -> None:
        names = [a.name for a in self.arms]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(f"{source}: arm {twice[0]!r} is named twice; each arm has its own folder")

    def arm(self, name: str) -> ArmRecord:
        return next(a for a in self.arms if a.name == name)

    def with_arm(self, updated: ArmRecord) -> ArmsState:
        return self.model_copy(update={"arms": tuple(updated if a.name == updated.name else a for a in self.arms)})


@dataclass(frozen=True)
class LabelHead:
    """The command word a run of arms opens its label with ("ab", "tune"), which keeps one command's
    arms-state.json apart from another's; a title that already names the command shows the label without it."""

    word: str

    def label(self, rest: str) -> str:
        return f"{self.word} {rest}"

    def strip(self, label: str) -> str:
        return label.removeprefix(f"{self.word} ")


def one_line(text: str) -> str:
    """``text`` as a reason the state holds: what does not print (a line break in a stage's message) as spaces,
    cut to REASON_MAX characters, so that the runner never writes a state it would refuse to read."""
    flat = printable(text, " ")
    return flat if len(flat) <= REASON_MAX else flat[: REASON_MAX - 1] + "…"


def is_arm_name(name: str) -> bool:
    return bool(_ARM_NAME.match(name))


def path(run: Path) -> Path:
    return Path(run) / FILE


def read(run: Path) -> ArmsState | None:
    """The state in ``run``, None when there is none; anything else that is no state: one line, exit 2."""
    return read_state(path(run), ArmsState, "arms state")


def write(run: Path, state: ArmsState) -> None:
    write_state(path(run), state, "the arms runner", run)


# Tells whether a recorded arm and the one this run asks for mean the same (None) or how they differ (one phrase,
# e.g. "stack --gpus was '0' and is now '0,1'"): the words' reader is the stages' parsers, which live above this layer.
# Words that no longer read as any request are its UserError (naming the arm and the fix), given here with the file.
Differ = Callable[[ArmRecord, ArmRecord], str | None]


def check_same(found: ArmsState, wanted: ArmsState, source: Path, differ: Differ | None = None) -> ArmsState:
    """A state left by another run of arms (an A/B, a tune, a comparison) is refused: resuming it would mix two
    experiments in one folder. The labels say which run each is (each opens with its command's word); the arms
    must be the same names, backends and configurations in the same order, and each arm's words must ask for the
    same thing: literally, or, given ``differ``, in meaning (an older bundle spelt the same request otherwise).
    Returns the state to resume: ``found``, its arms' words in this run's spelling where only the spelling differed."""
    if found.label != wanted.label:
        raise UserError(f"{source}: holds {found.label!r}, not {wanted.label!r}; give another --out, or "
                        "rerun the same command to resume it")
    plan = [(a.name, a.backend, a.configuration) for a in found.arms]
    asked = [(a.name, a.backend, a.configuration) for a in wanted.arms]
    if plan != asked or differ is None and [(a.stack, a.sweep) for a in found.arms] != [
            (a.stack, a.sweep) for a in wanted.arms]:
        names = ", ".join(a.name for a in found.arms)
        raise UserError(f"{source}: holds arms ({names}) started with other words than this run's; give another "
                        "--out, or rerun with the same options to resume it")
    respelt = []
    for was, now in zip(found.arms, wanted.arms):
        if (was.stack, was.sweep) != (now.stack, now.sweep):
            try:
                why = differ(was, now) if differ is not None else "other words"
            except UserError as exc:
                raise UserError(f"{source}: {exc}") from None
            if why is not None:
                raise UserError(f"{source}: arm {was.name}: {why}; give another --out, or rerun with the same "
                                "options to resume it")
        respelt.append(was.model_copy(update={"stack": now.stack, "sweep": now.sweep}))
    return found.model_copy(update={"arms": tuple(respelt)})
