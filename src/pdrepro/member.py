"""One member of a composite run, as the arms runner is handed it: a typed request (issue 33 item 3).

A member is a name (its folder, RUN/<name>), the `stack up` that starts its stack into that folder
(launch.stack.request.StackUpRequest) and the sweep that measures it (sweep.request.SweepRequest), without the
endpoints: those exist only once its stack is up, and the runner takes them from the stack record
(``endpoints``). A comparison's configuration sweeps into RUN itself (the sweep writes RUN/<configuration>), so its
member is named after it. The requests are built once, where the command's options are checked
(commands.requests); the runner starts each stage on them and never reads or writes a command word. The state
(rundir.armsstate) records each request as the flags that would ask for it (``record``), so a rerun can tell its
own plan from another's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .core.errors import UserError
from .launch.stack import record as stack_record
from .launch.stack.request import StackDownRequest, StackUpRequest
from .rundir import armsstate
from .rundir.armsstate import ArmRecord
from .rundir.request import AnalyzeRequest
from .sweep.request import SweepRequest


@dataclass(frozen=True)
class Endpoints:
    router: str
    prefill: str | None
    decode: str | None
    workers: tuple[str, ...]


def endpoints(folder: Path) -> Endpoints:
    """The URLs of the stack RUN/<member>/stack.json records: each process's health URL without its path."""
    rec = stack_record.read(folder)
    by_role: dict[str, list[str]] = {}
    for p in rec.processes:
        by_role.setdefault(str(p.role), []).append(p.health_url.rsplit("/", 1)[0])
    routers = by_role.pop("router", [])
    if not routers:
        raise UserError(f"{stack_record.path(folder)}: records no router; the sweep has nothing to send to")
    prefill, decode = by_role.pop("prefill", [None])[0], by_role.pop("decode", [None])[0]
    return Endpoints(routers[0], prefill, decode, tuple(url for urls in by_role.values() for url in urls))


@dataclass(frozen=True)
class MemberRequest:
    """One stack and its measurement. ``configuration``: a comparison's configuration, which its sweep writes as
    RUN/<configuration> (its ``out`` is RUN), so the member's name must be it."""

    name: str
    stack: StackUpRequest
    sweep: SweepRequest
    backend: str | None = None
    configuration: str | None = None

    @property
    def folder(self) -> Path:
        """RUN/<name>: the member's stack record, logs and results."""
        return self.stack.out

    def check(self, run: Path) -> None:
        """The member's requests are the runner's to place: its stack in RUN/<name>, its sweep there (or into RUN,
        as its configuration), its endpoints unset (the runner takes them from the stack it starts)."""
        if not armsstate.is_arm_name(self.name):
            raise UserError(f"arm {self.name!r}: not a plain folder name (letters, digits, '.', '_', '-'); rename it")
        if self.configuration is not None and self.configuration != self.name:
            raise UserError(f"arm {self.name!r} measures configuration {self.configuration!r}: the sweep writes "
                            "RUN/<configuration>, so name the arm after it")
        sweep_out = run if self.configuration else run / self.name
        misplaced = [(what, given, wanted) for what, given, wanted in (
            ("its stack's folder", self.stack.out, run / self.name), ("its sweep's folder", self.sweep.out, sweep_out),
            ("its sweep's configuration", self.sweep.configuration, self.configuration))
            if given != wanted]
        if misplaced:
            what, given, wanted = misplaced[0]
            raise UserError(f"arm {self.name!r}: {what} is {given}, not {wanted}; the arms runner places each member")
        if self.sweep.router or self.sweep.prefill or self.sweep.decode or self.sweep.worker:
            raise UserError(f"arm {self.name!r}: its sweep names endpoints, which the arms runner takes from the "
                            "stack it starts; leave them out")

    def record(self) -> ArmRecord:
        return ArmRecord(name=self.name, backend=self.backend, configuration=self.configuration,
                         stack=self.stack.words(), sweep=self.sweep.words())

    def swept_at(self, urls: Endpoints) -> SweepRequest:
        """The member's sweep against the URLs its stack recorded."""
        return dataclasses.replace(self.sweep, router=urls.router, prefill=urls.prefill, decode=urls.decode,
                                   worker=urls.workers)

    def down(self) -> StackDownRequest:
        return StackDownRequest(self.folder)

    def analysis(self) -> AnalyzeRequest | None:
        """The analysis of the member's folder its sweep makes at its end; None when its sweep analyses nothing (a
        comparison's configurations, analysed with their comparison)."""
        return None if self.sweep.no_analyze else AnalyzeRequest(self.folder)
