"""A scenario narrowed to some of its prompt lengths (`--prompt-lens` of `sweep`, `ab`, `tune`, `compare`).

The lengths a run measures are its scenario's: a narrowed run records the narrowed scenario (RUN/scenario.yaml,
its fingerprint in the provenance), so every judge that reads the run (the analysis, `check`, the members'
identity checks, a composite's resume) reads the lengths it ran from the run itself, and a run that lacks one of
them fails as any run lacking a length does. Only the scenario's own lengths may be picked: its prompts, its
thresholds and its reference figures are per length, and a length it never named would be judged by nothing.
The per-length thresholds of the lengths left out go with them (a scenario names no bound for a length it does
not sweep).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.errors import UserError
from .model import Scenario, scenario_from_dict

PER_LENGTH = ("min_bandwidth_GB_s", "max_ttft_ms")


def narrowed(scenario: Scenario, picked: Iterable[int], option: str = "--prompt-lens") -> Scenario:
    """``scenario`` sweeping ``picked`` only (in its own order); the scenario itself when they are all of its."""
    picked = tuple(picked)
    offered = tuple(scenario.sweep.prompt_lens)
    strays = [n for n in picked if n not in offered]
    if strays or not picked or len(set(picked)) != len(picked):
        raise UserError(f"{option} {','.join(map(str, picked))}: give each length once, each one of scenario "
                        f"{scenario.name}'s ({','.join(map(str, offered))})")
    lens = [n for n in offered if n in picked]
    if tuple(lens) == offered:
        return scenario
    data = scenario.to_dict()
    data["sweep"]["prompt_lens"] = lens
    thresholds = data.get("thresholds") or {}
    for key in PER_LENGTH:
        if isinstance(thresholds.get(key), dict):
            thresholds[key] = {L: v for L, v in thresholds[key].items() if int(L) in lens}
    return scenario_from_dict(data, f"scenario {scenario.name} narrowed by {option}")
