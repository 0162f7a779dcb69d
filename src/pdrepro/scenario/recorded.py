"""The scenario a run ran with: RUN/scenario.yaml, held to the fingerprint the sweep recorded.

`pdrepro sweep` writes the scenario it runs into RUN/scenario.yaml and its
fingerprint into RUN/provenance.json. A scenario.yaml whose fingerprint is no
longer the recorded one was changed after the sweep (a loosened bound, a
dropped length): judging by it would judge the run by rules it never ran
under, so it is bad input. Judging by another scenario stays possible, but
only when asked (``--scenario``, ``--thresholds``), and then the bounds that
differ are listed (bounds.py).
"""

from __future__ import annotations

from ..core import runfile
from ..core.errors import UserError
from ..rundir import RunDir
from .model import Scenario, load_scenario


def recorded_fingerprint(run: RunDir) -> str | None:
    """The scenario fingerprint RUN/provenance.json records, None where it records none."""
    try:
        data = runfile.read_json(run.provenance_file)
    except (OSError, ValueError):
        return None  # an unreadable provenance is the analysis's to report
    scenario = data.get("scenario") if isinstance(data, dict) else None
    fingerprint = scenario.get("fingerprint") if isinstance(scenario, dict) else None
    return fingerprint if isinstance(fingerprint, str) else None


def own_scenario(run: RunDir) -> Scenario | None:
    """RUN/scenario.yaml as loaded, None where the run has none; bad input where it is not what the sweep ran."""
    if not run.scenario_file.is_file():
        return None
    scenario = load_scenario(run.scenario_file)
    recorded = recorded_fingerprint(run)
    if recorded is not None and recorded != scenario.fingerprint:
        raise UserError(f"{run.scenario_file}: changed after the sweep (its fingerprint {scenario.fingerprint[:12]} is not "
                        f"the {recorded[:12]} that {run.provenance_file} records), so the run's own bounds are unknown: restore "
                        "the file the sweep wrote (to judge by other bounds, pass --scenario or --thresholds as well)")
    return scenario
