"""What one `pdrepro analyze` or `pdrepro check` of a run is asked, as a typed request (issue 33 item 3).

The command line parses into it (commands.analyze, commands.check) and a runner builds one where a stage of its
own analyses or judges a run (the arms runner, `pdrepro compare`, `pdrepro repro`), so the stage is handed the
same type either way, never a word list. Each field is named as the command's option stores it: the kinds read a
request as they read a parsed command line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class AnalyzeRequest:
    """One `pdrepro analyze RUN`: the run folder, and the scenario to read it by (None: RUN/scenario.yaml)."""

    run: Path
    scenario: str | None = None
    func: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_args(cls, args) -> AnalyzeRequest:
        if isinstance(args, cls):
            return args
        return cls(**{**_values(cls, args), "run": Path(args.run)})


@dataclass(frozen=True)
class CheckRequest:
    """One `pdrepro check RUN`: the run judged, the scenario and thresholds to judge it by (None: the run's own),
    and where the verdict goes (``json``: as JSON on standard output; ``report``: also into that file)."""

    run: Path
    scenario: str | None = None
    thresholds: str | None = None
    json: bool = False
    report: Path | None = None
    func: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_args(cls, args) -> CheckRequest:
        if isinstance(args, cls):
            return args
        return cls(**{**_values(cls, args), "run": Path(args.run)})


def _values(cls, args) -> dict:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
