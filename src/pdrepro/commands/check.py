"""``pdrepro check RUN``: one line per threshold; exit 0 only when all pass.

Also the options every judging command shares, declared once here: ``--judge RUN`` (a runner's re-judge of a run
it made: `ab`, `tune`, `compare`), ``--json`` and ``--report FILE`` (those and `check`). A judge only reads: its
verdict goes to standard output (the text, or with ``--json`` the verdict as JSON for scripts), and into a file
only where the user names one (``--report FILE``), never inside the run it judges.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UserError
from ..core.safewrite import write_file

# The kinds' judges and the run directory's models (pydantic, the analysis) are imported where a verdict is
# drawn, so that building the command line (`pdrepro --help`) stays light.
if TYPE_CHECKING:
    from ..rundir import RunDir
    from ..rundir.request import CheckRequest
    from ..verdicts.outcome import Verdict
from .shared_options import Renamed


def register(subparsers) -> None:
    p = subparsers.add_parser("check", help="judge a run against the scenario's thresholds (exit 1 on a failure)",
                              description="Analyse RUN's raw inputs afresh, in memory (nothing in RUN is written; "
                                          "a stale RUN/summary.json is named, and `pdrepro analyze` rewrites it), then "
                                          "evaluate the thresholds and impossible figures; the verdict goes to "
                                          "standard output (--json for scripts), and into a file only where "
                                          "--report names one, outside RUN. Exit 0: all pass; 1: a check "
                                          "failed; 2: bad input.")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--scenario", help="shipped scenario name or YAML path (default: RUN/scenario.yaml)")
    p.add_argument("--thresholds", help="YAML file of thresholds laid over the scenario's "
                                        "(keys it names win; per-length bounds merge by length)")
    add_verdict_options(p)
    p.set_defaults(func=run)


def add_judge_option(p, what: str, *aliases: str) -> None:
    """``--judge RUN`` (and ``aliases`` of it, older spellings such as `tune --collect`, which print a note naming
    --judge), with ``--json`` and ``--report``."""
    p.add_argument("--judge", *aliases, dest="judge", type=Path, metavar="RUN", action=Renamed, old=aliases,
                   help=f"judge {what} in RUN and start nothing; reads only: the verdict goes to standard output "
                        "(--json for scripts, --report FILE for a file), nothing is written into RUN")
    add_verdict_options(p)


def add_verdict_options(p) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the verdict as JSON on standard output (for scripts) instead of the text")
    p.add_argument("--report", type=Path, metavar="FILE",
                   help="also write the report (the text printed) to FILE, a path outside the run judged")


def _inside(path: Path, run: Path) -> bool:
    try:
        return path.resolve().is_relative_to(run.resolve())
    except OSError:
        return False


def refuse_inside(target: Path | None, run: Path, option: str) -> None:
    """A file a judge was asked to write inside the run it judges is refused before anything is judged."""
    if target is not None and _inside(Path(target).absolute(), Path(run).absolute()):
        raise UserError(f"{option} {target}: is inside {run}, the run judged, and judging writes nothing into it; "
                        "name a file outside the run")


def check_report_target(args, run: Path) -> None:
    refuse_inside(getattr(args, "report", None), run, "--report")


def emit(args, run: Path, text: str, data: object, shown: str | None = None) -> None:
    """The verdict on standard output (``shown``, by default ``text``, or ``data`` as JSON with ``--json``), and
    ``text`` into ``--report FILE`` where one is named."""
    from ..rundir.contract import dumps_json

    check_report_target(args, run)
    if getattr(args, "report", None) is not None:
        write_file(Path(args.report), text if text.endswith("\n") else text + "\n", "--report")
    if getattr(args, "json", False):
        print(dumps_json(data, Path("the verdict (--json)"), indent=2, sort_keys=True), end="")
    else:
        print(text if shown is None else shown)


def judging_only(args) -> None:
    """``--json`` and ``--report`` describe a judge's verdict: without ``--judge`` (a runner) they are refused,
    since a runner writes its own report into its run."""
    for flag, given in (("--json", getattr(args, "json", False)), ("--report", getattr(args, "report", None))):
        if given:
            raise UserError(f"{flag} goes with --judge RUN (judging a run made before); a run writes its own report "
                            "into its folder: drop it, or give --judge RUN")


def give(args, run: Path, verdict: Verdict) -> int:
    """The verdict on standard output: the line naming what is judged, the verdict, its count (or with --json
    only the verdict as JSON, the one schema of every judge, outcome.VerdictRecord); into --report FILE where
    named; the status it ends with."""
    emit(args, run, verdict.text, verdict.record().model_dump(mode="json"), verdict.full_text())
    if verdict.error is not None:
        raise UserError(verdict.error)
    return verdict.status


def run(given) -> int:
    """`check` of ``given``: its parsed command line, or a runner's typed request (rundir.request)."""
    from ..rundir import RunDir
    from ..rundir.request import CheckRequest

    args = CheckRequest.from_args(given)

    # The kind the folder records judges it (kinds/registry.py): a sweep's, a smoke's or a comparison's summary
    # against the thresholds, a load's members and steps against the load gates; a composite's folder names its
    # own judge.
    run_dir = RunDir(args.run)
    check_report_target(args, run_dir.root)
    return give(args, run_dir.root, verdict_of(run_dir, args))


def verdict_of(run_dir: RunDir, args: CheckRequest) -> Verdict:
    """The run judged in memory by the kind it records; nothing is written."""
    from ..kinds.registry import kind_of

    return kind_of(run_dir).verdict(run_dir, args)
