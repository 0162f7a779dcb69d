"""Which kind a run folder is, from what it records (kinds/recorded.py), never from its name: the first kind
of ``KINDS`` whose records the folder holds. A kind is one module and one line here; the order puts the kinds
whose own state file says what they are first, and the sweep, whose provenance records no kind, last."""

from __future__ import annotations

from typing import Any

from ..analysis.verdictsource import Judged
from ..core.errors import UserError
from ..rundir import RunDir
from ..scenario.model import Scenario
from .ab import Ab
from .base import RunKind
from .compare import Compare
from .fault import Fault
from .load import Load
from .smoke import Smoke
from .summarykind import SummaryKind
from .sweep import Sweep
from .tune import Tune

KINDS: tuple[RunKind, ...] = (
    Fault(),
    Load(),
    Ab(),
    Tune(),
    Compare(),
    Smoke(),
    Sweep(),
)
SWEEP = KINDS[-1]  # a folder that records no kind is judged as a sweep's run, which names what it lacks


def names() -> list[str]:
    return [k.name for k in KINDS]


def kind_of(run: RunDir, scenario: Scenario | None = None) -> RunKind:
    """The kind ``run`` records; where it records none, the one the scenario given is of (a comparison named on
    the command line for a folder holding nothing yet), else the sweep's."""
    found = next((k for k in KINDS if k.records(run)), None)
    if found is None and scenario is not None:
        found = next((k for k in KINDS if k.for_scenario(scenario)), None)
    return found or SWEEP


def summary_kind(run: RunDir, scenario: Scenario) -> SummaryKind:
    """The kind of a folder that holds one run's summary; a composite's folder is one line naming its judge."""
    kind = kind_of(run, scenario)
    if not isinstance(kind, SummaryKind):
        raise UserError(f"{run.root}: holds a {kind.name} run, whose members are runs of their own; give one member's "
                        f"folder, or judge the {kind.name} run with its own command")
    return kind


def judged_summary(run: RunDir, scenario: Scenario) -> Judged:
    """The summary a verdict may be drawn from (what `pdrepro check` and the gates judge), made in memory by the
    kind the folder records; nothing in the run is written."""
    return summary_kind(run, scenario).judged(run, scenario)


def load_or_analyze(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """``judged_summary``'s summary as summary.json would hold it (for readers of the dict form)."""
    return judged_summary(run, scenario).summary.to_json()


def analyze_run(run: RunDir, scenario: Scenario) -> dict[str, Any]:
    """The run's summary made from its inputs and written with its report, by the kind the folder records."""
    return summary_kind(run, scenario).write(run, scenario)
