"""A kind whose run is members (arms, settings) in folders of their own, judged by the kind's own judge
(`pdrepro ab --judge`, `pdrepro tune --judge`). `pdrepro check` on such a folder gives that judge's verdict and
exit status, in memory; `pdrepro analyze` rewrites one run's summary, so on such a folder it names the kind's
runner and the members to analyse instead (exit 2)."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar, NoReturn

from pydantic import BaseModel

from ..core.errors import UserError
from ..core.exits import EXIT_FAILED
from ..rundir import RunDir, armsstate
from ..rundir.request import AnalyzeRequest, CheckRequest
from ..scenario.recorded import own_scenario
from ..scenario.seams import run_backend
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

    @abstractmethod
    def judged(self, run: RunDir) -> tuple[BaseModel, str, bool]:
        """The composite judged by its own judge, in memory: its summary, its report's text, whether it passed."""

    def verdict(self, run: RunDir, args: CheckRequest) -> Verdict:
        # The kind's own judge gives the verdict, so `check` and `--judge` agree on every composite by construction.
        summary, text, passed = self.judged(run)
        return self.given(run, summary, text, passed)

    def given(self, run: RunDir, summary: BaseModel, text: str, passed: bool) -> Verdict:
        """The verdict of the kind's judge as every judging command gives it (`check RUN` and `--judge RUN`)."""
        status = 0 if passed else EXIT_FAILED
        state = armsstate.read(run.root) if run.root.is_dir() else None
        found = [_backend(run, a.name) for a in state.arms] if state is not None else []
        backends = sorted({b for b in found if b is not None})
        # The label opens with the command and the scenario's name ("ab NAME: ...", "tune NAME, ...").
        words = state.label.split() if state is not None else []
        data = {"run": str(run.root), "kind": self.name, "passed": passed, "exit_status": status,
                "scenario": words[1].rstrip(":,") if len(words) > 1 else None,
                "transfer_backend": ", ".join(backends) or None, "summary": summary.model_dump(mode="json")}
        return Verdict(text.rstrip("\n").splitlines(), f"{self.what}: {'passed' if passed else 'failed'}", data, status)

    def analyze(self, run: RunDir, args: AnalyzeRequest) -> int:
        return self._refuse(run, "analyze")


def _backend(run: RunDir, member: str) -> str | None:
    """The transfer backend a member's servers ran, as its own folder records it (its stack record, else its
    scenario); None where the member holds neither (a member not run yet names nothing)."""
    folder = RunDir(run.root / member)
    try:
        scenario = own_scenario(folder) if folder.root.is_dir() and not folder.root.is_symlink() else None
        return run_backend(folder.root, scenario).name if scenario is not None else None
    except UserError:
        return None  # the judge itself names what is wrong with the member
