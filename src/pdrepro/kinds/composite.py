"""A kind whose run is members (arms, settings) in folders of their own, judged by the kind's own judge
(`pdrepro ab --judge`, `pdrepro tune --collect`): `pdrepro check` and `pdrepro analyze` judge one run, so on
such a folder they name the kind's judge and the members to check instead (exit 2, as before the registry)."""

from __future__ import annotations

import argparse
from typing import ClassVar, NoReturn

from ..core.errors import UserError
from ..rundir import RunDir, armsstate
from ..verdicts.outcome import Verdict
from .base import RunKind


class CompositeKind(RunKind):
    judge_command: ClassVar[str]   # the kind's own judge, with RUN where the folder goes
    what: ClassVar[str]            # the run in words ("an A/B of transfer backends")

    def _refuse(self, run: RunDir, command: str) -> NoReturn:
        state = armsstate.read(run.root)
        members = ", ".join(a.name for a in state.arms) if state is not None else "none recorded"
        raise UserError(f"{run.root}: {self.what} (members: {members}); `pdrepro {command}` takes one run: judge it "
                        f"with `{self.judge_command.replace('RUN', str(run.root))}`, or give one member's folder")

    def verdict(self, run: RunDir, args: argparse.Namespace) -> Verdict:
        self._refuse(run, "check")

    def analyze(self, run: RunDir, args: argparse.Namespace) -> int:
        return self._refuse(run, "analyze")
