"""A judge's outputs as the tests read them: `pdrepro ab|tune --judge RUN --json` prints the verdict with the summary, and
`--report FILE` (a tune's `--overlay FILE` too) writes the report where it is told. The tests keep them in a
folder beside the run, RUN-judged/, under the names the runner itself writes into its run, so a test reads a
judge's summary, report and overlay as it read the runner's; the judge writes nothing into RUN."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

TUNE = ("tune-summary.json", "tune-report.md", "best-overlay.yaml")
AB = ("ab-summary.json", "report.md")


def judged(run: Path) -> Path:
    """Where the tests keep a judge's outputs of ``run``: beside it, never in it."""
    return Path(run).parent / f"{Path(run).name}-judged"


def _keep(run: Path, done: Any, name: str) -> Any:
    out = getattr(done, "stdout", None)
    out = getattr(done, "out", "") if out is None else out
    if out.lstrip().startswith("{"):
        # --json gives the verdict (one schema for every judge, verdicts.outcome.VerdictRecord); the composite's
        # own summary is in it, kept under the name the runner writes it.
        (judged(run) / name).write_text(json.dumps(json.loads(out)["summary"], indent=2))
    else:
        (judged(run) / name).unlink(missing_ok=True)
    return done


def judge_tune(cli: Callable[..., Any], run: Path, *more: str, flag: str = "--judge") -> Any:
    """`pdrepro tune --judge RUN --json --report ... --overlay ...` through ``cli``; its three outputs in judged(run)."""
    out = judged(run)
    out.mkdir(exist_ok=True)
    for name in TUNE:
        (out / name).unlink(missing_ok=True)
    done = cli("tune", flag, str(run), "--json", "--report", str(out / TUNE[1]), "--overlay", str(out / TUNE[2]),
               *more)
    return _keep(run, done, TUNE[0])


def judge_ab(cli: Callable[..., Any], run: Path, *more: str) -> Any:
    """`pdrepro ab --judge RUN --json --report ...` through ``cli``; its summary and report in judged(run)."""
    out = judged(run)
    out.mkdir(exist_ok=True)
    for name in AB:
        (out / name).unlink(missing_ok=True)
    done = cli("ab", "--judge", str(run), "--json", "--report", str(out / AB[1]), *more)
    return _keep(run, done, AB[0])
