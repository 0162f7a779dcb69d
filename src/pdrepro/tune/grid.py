"""A tuning grid: its knobs as the command line gives them, the settings they make, and each setting's scenario.

A knob is an environment variable by name (``SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16``), validated as
launch.env is (scenario.launch_env: read by the servers, not one the launch plan sets), or a server flag with
its dashes (``--page-size=1,16``), which may not be a flag the launch plan writes itself, under any spelling
the server takes (scenario.serverflags), nor one also given by --server-arg or --stack-args. A setting is one value
per varied knob; everything else is the scenario's own (the baseline). Each setting is a scenario of its own:
the variables in launch.env, the flags in launch.extra_server_args, validated as any scenario file is, so a
setting the servers would not take is refused before anything starts.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Literal

from ..core.errors import UserError
from ..scenario import launch_env, serverflags
from ..scenario.model import Scenario, scenario_from_dict

KnobKind = Literal["env", "flag"]
BASELINE = "baseline"
# GPU time: each setting restarts the servers (~150 s on an H200) and sweeps (~130 s for four lengths).
MAX_SETTINGS = 64
MAX_VALUES = 16
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]{0,63}$")
# A value is one shell-free word: it travels in a YAML scenario, an argv and a SLURM script.
_VALUE = re.compile(r"^[A-Za-z0-9._:/+@%-]{1,200}$")
EXAMPLE = "e.g. --grid SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16 or --grid=--page-size=1,16"


@dataclass(frozen=True)
class GridAxis:
    """One axis of the grid: a knob (an environment variable or a server flag) and the values it takes; not the
    knob's own record, which is scenario.knobs.Knob."""

    name: str
    kind: KnobKind
    values: tuple[str, ...]


@dataclass(frozen=True)
class Setting:
    """One point of the grid: a folder name and the value of each knob it changes (the baseline changes none)."""

    name: str
    values: tuple[tuple[str, str], ...]

    @property
    def baseline(self) -> bool:
        return not self.values


def parse(text: str) -> GridAxis:
    """One --grid value, KEY=v1,v2 or --flag=v1,v2; anything else: one line naming it."""
    key, eq, rest = text.partition("=")
    key = key.strip()
    shown = text if len(text) <= 80 else text[:77] + "..."
    if not eq or not key:
        raise UserError(f"--grid {shown!r}: give KEY=v1,v2 ({EXAMPLE})")
    kind: KnobKind = "flag" if key.startswith("-") else "env"
    if kind == "flag" and not _FLAG.match(key):
        raise UserError(f"--grid {shown!r}: {key[:70]!r} is no server flag (--lower-case-words); {EXAMPLE}")
    if kind == "env" and not _ENV.match(key):
        raise UserError(f"--grid {shown!r}: {key[:70]!r} is no environment variable name (UPPER_CASE); {EXAMPLE}")
    values = tuple(v.strip() for v in rest.split(","))
    bad = next((v for v in values if not _VALUE.match(v)), None)
    if bad is not None:
        raise UserError(f"--grid {shown!r}: value {bad[:40]!r} is not one plain word (letters, digits, . _ : / + @ % -"
                        "); give comma-separated values without spaces")
    if len(set(values)) != len(values):
        raise UserError(f"--grid {shown!r}: a value is given twice; give each once")
    if len(values) > MAX_VALUES:
        raise UserError(f"--grid {shown!r}: {len(values)} values; give at most {MAX_VALUES}")
    return GridAxis(key, kind, values)


def plan_flags(scenario: Scenario) -> dict[str, str]:
    """Field -> flag of the server flags the launch plan writes itself, also those it adds only when asked
    (metrics, the memory fraction): a grid may vary none of them, under any spelling the server takes."""
    return serverflags.plan_owned(_engine(scenario), conditional=True)


def _engine(scenario: Scenario) -> str:
    return scenario.launch.engine if scenario.launch else "sglang"


@dataclass(frozen=True)
class Route:
    """Server flags that reach the servers another way than the grid: where (for the error) and the words."""

    place: str
    words: tuple[str, ...]


def check(knobs: list[GridAxis], scenario: Scenario, routes: tuple[Route, ...] = (),
          backend: str | None = None, backend_source: str | None = None) -> None:
    """Each knob one the servers take here, each once, and a grid the GPU time allows. ``routes``: the other
    places server flags come from (--server-arg, --stack-args); ``backend``: the transfer backend the stack
    really runs (--transfer-backend, --stack-args), named by ``backend_source``; None: the scenario's."""
    if not knobs:
        raise UserError(f"give the knobs to vary: --grid KEY=v1,v2 ({EXAMPLE})")
    if scenario.launch is None:
        raise UserError(f"scenario {scenario.name} has no launch section, so it names no stack to tune; give a "
                        "scenario with one (the one-box scenario has it)")
    names = [k.name for k in knobs]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise UserError(f"--grid {twice}: given twice; give its values in one --grid {twice}=v1,v2")
    engine, owned = _engine(scenario), plan_flags(scenario)
    seen: dict[str, str] = {}
    for knob in knobs:
        if knob.kind == "env":
            launch_env.check({knob.name: knob.values[0]}, engine, backend or scenario.launch.transfer_backend,
                             f"--grid {knob.name}", disaggregated=False,
                             backend_source=backend_source if backend else None)
            continue
        meaning = serverflags.check_words([knob.name], f"--grid {knob.name}", engine, owned,
                                          "vary another flag (the scenario and the site options set this one)")[0]
        dest = meaning.dest or knob.name
        if dest in seen:
            raise UserError(f"--grid {knob.name}: the server reads it as {seen[dest]}, given in the grid already; "
                            f"give its values once, in one --grid")
        seen[dest] = knob.name
        for route in routes:
            given = serverflags.value_of(route.words, dest, engine)
            if given is not None:
                raise UserError(f"--grid {knob.name}: the same server flag is given in {route.place} "
                                f"({given or 'set'}), and the last one given would win over the grid's value; "
                                "give it once, in the grid")


def _flag_dest(scenario: Scenario, knob: GridAxis) -> str:
    meaning = serverflags.resolve(knob.name, _engine(scenario))
    return meaning.dest or knob.name


def baseline_value(scenario: Scenario, knob: GridAxis) -> str | None:
    """The scenario's own value of the knob; None: it leaves it to the engine's default."""
    assert scenario.launch is not None
    if knob.kind == "env":
        return scenario.launch.env.get(knob.name)
    return serverflags.value_of(scenario.launch.extra_server_args, _flag_dest(scenario, knob), _engine(scenario))


def settings(knobs: list[GridAxis], scenario: Scenario, one_at_a_time: bool) -> list[Setting]:
    """The settings to run besides the baseline: every combination (the full grid), or each knob's values alone
    with the others at the scenario's own; a combination that is the scenario's own setting is the baseline."""
    own = {k.name: baseline_value(scenario, k) for k in knobs}
    points: list[tuple[tuple[str, str], ...]] = []
    if one_at_a_time:
        points = [((k.name, v),) for k in knobs for v in k.values if v != own[k.name]]
    else:
        for combo in itertools.product(*(k.values for k in knobs)):
            changed = tuple((k.name, v) for k, v in zip(knobs, combo) if v != own[k.name])
            if changed and changed not in points:
                points.append(changed)
    if not points:
        raise UserError("--grid: every value given is the scenario's own setting; give values that differ from it")
    if len(points) > MAX_SETTINGS:
        raise UserError(f"--grid: {len(points)} settings; at most {MAX_SETTINGS} (each restarts the servers and "
                        "sweeps): give fewer values, or --one-at-a-time")
    width = len(str(len(points)))
    return [Setting(f"s{i:0{width}d}", point) for i, point in enumerate(points, 1)]


def variant(scenario: Scenario, setting: Setting, knobs: list[GridAxis]) -> Scenario:
    """The scenario as ``setting`` runs it: its variables in launch.env, its flags in launch.extra_server_args
    (the scenario's own value of the flag replaced), validated as a scenario file."""
    kinds = {k.name: k.kind for k in knobs}
    data = scenario.to_dict()
    launch = data["launch"]
    args = list(launch.get("extra_server_args") or [])
    for name, value in setting.values:
        if kinds[name] == "env":
            launch["env"] = {**(launch.get("env") or {}), name: value}
            continue
        # The scenario's own value of the flag goes, under whatever spelling it has there.
        kept = serverflags.without(args, _flag_dest(scenario, next(k for k in knobs if k.name == name)),
                                   _engine(scenario))
        args = [*kept, name, value]
    launch["extra_server_args"] = args
    return scenario_from_dict(data, f"scenario {scenario.name}, tune setting {setting.name}")


def describe(setting: Setting) -> str:
    """The setting in words: its changes, or the baseline's."""
    if setting.baseline:
        return "the scenario's own setting"
    return ", ".join(f"{k}={v}" for k, v in setting.values)

