"""A composite run's members (an A/B's arms, a tune's settings and baseline repeats, a comparison's configurations,
a load sweep's steps): the record each member a composite starts carries, where a member's folder may be, and
what a member's own files can say against the plan (a finding, analysis.members makes them).

RUN/<member>/member.json names the composite that started the member (the random id its state file holds) and
the member's own name. It is one more claim, held to the content checks (analysis.members), never a proof on
its own; a run recorded before members carried one is judged by those content checks alone.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from ..core.strictmodel import Record
from .statefile import read_state, write_state

FILE = "member.json"
RUN_ID = r"^[0-9a-f]{32}$"
CompositeKind = Literal["ab", "tune", "compare", "load"]
# What a finding is about: the member's folder, its scenario, its transfer backend, its stack's shape, its bench
# record, its requests' window, its content against a sibling's, its member record.
FindingAbout = Literal["folder", "scenario", "backend", "stack", "bench", "window", "copy", "record"]


def new_run_id() -> str:
    """A composite's id: random, once per composite, kept in its state file and in each member's record."""
    return uuid.uuid4().hex


class MemberRecord(Record):
    schema_version: Literal[1] = 1
    kind: CompositeKind = Field(description="the kind of composite run that started the member")
    composite: Annotated[str, Field(pattern=RUN_ID)] = Field(description="the composite's id (its state file's run_id)")
    member: Annotated[str, Field(min_length=1, max_length=64)] = Field(description="the member's own name in the plan")


class MemberFinding(Record):
    """A member whose own files contradict what the composite's plan says of it: a FAIL naming both values."""

    member: str = Field(description="the member's name in the plan ('.' for the composite itself)")
    about: FindingAbout
    claimed: str = Field(description="what the plan (or the member's place in it) says")
    found: str = Field(description="what the member's own files show")

    def message(self) -> str:
        who = "the composite run" if self.member == "." else f"member {self.member}"
        return f"{who}: its {self.about} is {self.found}, but the plan says {self.claimed}"


def is_disaggregated(configuration: str | None) -> bool:
    """A comparison configuration named like 1P1D runs prefill and decode apart (the sweep and the member checks
    read the name the same way)."""
    return configuration is None or bool(re.fullmatch(r"\d+P\d+D", configuration))


def path(member: Path) -> Path:
    return Path(member) / FILE


def read(member: Path) -> MemberRecord | None:
    """The member's record; None where it has none (a run from before records); anything else: one line, exit 2."""
    return read_state(path(member), MemberRecord, "member record")


def write(member: Path, record: MemberRecord, run: Path) -> None:
    write_state(path(member), record, "the composite runner", run)


def folder_problem(run: Path, name: str) -> str | None:
    """Why RUN/<name> is no member folder of ``run``: a link (whatever it points at), something else than a folder,
    or a folder that resolves outside the run. None: a folder of the run, or nothing there yet. Asked before
    anything is read from or written through the member's folder."""
    folder = Path(run) / name
    if folder.is_symlink():
        return f"{folder} is a link (to {os.readlink(folder)}), not a folder of the run"
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{folder} is not a folder"
    inside = Path(os.path.realpath(run))
    real = Path(os.path.realpath(folder))
    if real != inside / name and inside not in real.parents:
        return f"{folder} resolves to {real}, outside the run {inside}"
    return None
