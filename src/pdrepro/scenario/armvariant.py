"""A scenario as one arm of an A/B runs it: the same scenario with another transfer backend.

An A/B runs one scenario once per backend, and each backend reads its own variables: Mooncake requires two
that NIXL never reads, NIXL's UCX_* are nothing to Mooncake, and the scenario's launch.env check refuses a
variable its backend does not read. So each arm gets a scenario of its own, made here: launch.transfer_backend
set to the arm's backend, launch.env cut to what that backend's servers read, plus the arm's own variables
(the scenario's ab.env, or the command line's), then validated as any scenario file is, so an arm whose
variables its backend does not read, or that lacks one its backend requires, is refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import backends, engines
from ..core.errors import UserError
from . import launch_env
from .model import Scenario, scenario_from_dict


def for_backend(scenario: Scenario, name: str, extra: Mapping[str, str]) -> Scenario:
    if scenario.launch is None:
        raise UserError(f"scenario {scenario.name} has no launch section, so it names no stack to run per backend; "
                        "give a scenario with one (the one-box scenario has it)")
    backend, engine = backends.backend(name), engines.engine(scenario.launch.engine)
    data = scenario.to_dict()
    data.pop("ab", None)  # the arm is a scenario of one backend
    launch = data["launch"]
    launch["transfer_backend"] = name
    launch["env"] = {**{k: v for k, v in scenario.launch.env.items() if launch_env.reads(engine, backend, k)},
                     **dict(extra)}
    return scenario_from_dict(data, f"scenario {scenario.name} for its {name} arm")
