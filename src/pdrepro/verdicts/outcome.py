"""A judge's verdict as every judging command gives it (`check`, and the kinds' judges built on it): the text for
people, the same as data for ``--json``, the count line, the exit status and, where the inputs could not be
read, the one line that ends the command with exit 2. It holds what was judged; printing it is the command's."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rundir.verdictrecord import VerdictRecord
from .result import CheckResult

__all__ = ["Verdict", "VerdictRecord"]


@dataclass
class Verdict:
    """A judge's verdict as every judging command gives it: the text for people, the data for --json, the
    count line (standard error) and the exit status; ``error`` is input the analysis could not read (exit 2)."""

    lines: list[str]
    count: str
    data: dict = field(default_factory=dict)
    status: int = 0
    error: str | None = None
    summary: object = None  # the summary judged (a comparison's judge renders its table from it)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def record(self) -> VerdictRecord:
        """The verdict as --json gives it (``data`` holds the kind's fields; the count and status are this one's)."""
        return VerdictRecord.model_validate({**self.data, "count": self.count, "exit_status": self.status,
                                             "passed": self.status == 0})

    def full_text(self) -> str:
        """What the text of a verdict is: the line naming what is judged, the verdict, the count."""
        return "\n".join([self.record().header(), *self.lines, self.count])


def result_data(r: CheckResult) -> dict:
    """One check as --json gives it."""
    return {"check": r.name, "prompt_len": r.prompt_len, "figure": r.figure, "unit": r.unit, "bound": r.bound,
            "op": r.op, "verdict": r.verdict, "detail": r.detail}
