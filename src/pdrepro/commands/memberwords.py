"""A member's recorded words read back into the requests they ask for: a resume compares meaning, not spelling.

RUN/arms-state.json records each member's `stack up` and sweep as flags (core.flagwords: this bundle's one
spelling). A run an older bundle started spelt the same requests otherwise: the flags in another order, ``0.30``
for ``0.3``, ``--server-arg X`` for ``--server-arg=X``, a default given outright. A rerun of the same command must
resume it, and a rerun that asks for something else must still be refused. So the recorded words are read by each
stage's own parser (commands.requests, as the command line reads them) into the typed request, and the two
requests are compared field by field, less what a rerun may change without changing the measurement:

- the member's folders (its stack's and its sweep's ``out``) and its endpoints: the runner sets them per run;
- a path inside the run folder, at the same place in it, when the folder moved (a copy of the run elsewhere);
- the fields a command names ``movable`` (the tune: where the model and dataset lie on this machine; its label
  holds everything else, the settings' scenarios included).

The rundir layer (armsstate.check_same) takes the comparison as a callable, since the parsers live up here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UserError
from .requests import stack_request, sweep_request

if TYPE_CHECKING:
    from ..rundir.armsstate import ArmRecord, Differ

# Set by the runner per member and per run, never by the member's words: never a difference in meaning.
_RUNNERS = frozenset({"out", "router", "prefill", "decode", "worker", "configuration", "func"})
# The tune's: where the model and the dataset lie on this machine (a copy of the tune resumes on a fresh one).
WHERE_FILES = ("model", "dataset", "model_path", "dataset_path")


def register(sub) -> None:
    """No command: how a runner's state is read back."""


def requests(run: Path, arm: ArmRecord) -> tuple[object, object]:
    """The `stack up` and the sweep ``arm``'s words ask for, placed in ``run`` as the runner places them; words
    that no longer read: one line naming the arm and the fix."""
    folder = Path(run) / arm.name
    read = []
    for which, words, reader, place in (
            ("stack", arm.stack, stack_request, {"out": folder}),
            ("sweep", arm.sweep, sweep_request, {"out": Path(run) if arm.configuration else folder,
                                                 "configuration": arm.configuration})):
        try:
            # An older option's spelling prints a note for a person typing it; a record is not that person.
            with contextlib.redirect_stderr(io.StringIO()):
                read.append(reader(words, given=f"arm {arm.name}'s {which} words", **place))
        except UserError as exc:
            why = getattr(exc, "why", str(exc))
            raise UserError(f"arm {arm.name}: its recorded {which} words no longer read as this bundle's flags "
                            f"({why}); give another --out (that run was started by another bundle)") from None
    return read[0], read[1]


def differ(run: Path, movable: Iterable[str] = ()) -> Differ:
    """The comparison armsstate.check_same takes for a run of arms in ``run``: None when a recorded arm and the one
    asked for mean the same, else the first field that differs, with both values."""
    root, keep = Path(run).absolute(), frozenset(movable)

    def differs(was: ArmRecord, now: ArmRecord) -> str | None:
        old, new = requests(root, was), requests(root, now)
        for which, a, b in zip(("stack", "sweep"), old, new):
            why = first_difference(a, b, root, keep)
            if why is not None:
                return f"its {which}'s {why}"
        return None

    return differs


def first_difference(old: object, new: object, run: Path, movable: frozenset[str] = frozenset()) -> str | None:
    """The first field (in field order) whose value ``old`` and ``new`` differ in, as "--gpus was '0' and is now
    '0,1'"; None when they ask for the same."""
    for field in dataclasses.fields(new):  # type: ignore[arg-type]
        if not field.compare or field.name in _RUNNERS or field.name in movable:
            continue
        was, now = getattr(old, field.name), getattr(new, field.name)
        if was == now or _moved_with(run, was, now):
            continue
        return f"--{field.name.replace('_', '-')} was {_shown(was)} and is now {_shown(now)}"
    return None


def _moved_with(run: Path, was: object, now: object) -> bool:
    """``now`` a path inside ``run`` and ``was`` the same place inside another folder: the run folder moved."""
    if not isinstance(was, (str, Path)) or not isinstance(now, (str, Path)):
        return False
    old, new = Path(was), Path(now)
    if not old.is_absolute() or not new.is_relative_to(run) or new == run:
        return False
    inside = new.relative_to(run).parts
    return len(old.parts) > len(inside) and old.parts[-len(inside):] == inside


def _shown(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return repr([str(v) for v in value])
    return repr(str(value))
