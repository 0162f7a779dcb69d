"""Building the command line imports only what declaring it needs (issue 34: answers in a blink).

`pdrepro --help`, every command's `--help` and every command before it starts build the whole parser: each
command's ``register`` runs. What a command needs only to run (the scenario's and the run directory's pydantic
models, YAML, the analysis and its plots, HTTP clients, tables) is imported by its run function, on call. The check
is structural, not a stopwatch: in a fresh interpreter, build the parser and format every command's help, then name
any heavy module that got imported (`make bench-help` prints the CPU seconds those imports would cost)."""

from __future__ import annotations

import json
import subprocess
import sys

# Third-party packages none of the parsers needs, and the bundle's own modules that pull them in.
HEAVY = ("pydantic", "yaml", "numpy", "matplotlib", "requests", "httpx", "tabulate", "jinja2",
         "pdrepro.scenario.model", "pdrepro.rundir", "pdrepro.kinds", "pdrepro.analysis", "pdrepro.report",
         "pdrepro.publish", "pdrepro.arms", "pdrepro.launch.plan", "pdrepro.launch.targets.registry",
         "pdrepro.sweep.config", "pdrepro.gpucheck", "pdrepro.fabric.doctor", "pdrepro.image.offline_model")

# Builds the parser, formats every command's (and verb's) help as `--help` would, and reports what was imported.
_PROBE = """
import argparse, json, sys
from pdrepro.commands import build_parser

parser = build_parser()
helps = [parser.format_help()]

def walk(p):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                helps.append(sub.format_help())
                walk(sub)

walk(parser)
print(json.dumps({"modules": sorted(sys.modules), "helps": len(helps)}))
"""


def _probe() -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _heavy(modules: list[str]) -> list[str]:
    return sorted(m for m in modules for h in HEAVY if m == h or m.startswith(h + "."))


def test_building_the_parser_imports_no_heavy_module():
    found = _probe()
    # The probe saw the whole command line (20-odd commands and the stack's verbs), not an empty parser.
    assert found["helps"] > 20
    assert "pdrepro.commands.ab" in found["modules"] and "pdrepro.commands.tune" in found["modules"]
    heavy = _heavy(found["modules"])
    assert not heavy, ("building the command line imported " + ", ".join(heavy) + ": import it in the command's "
                       "run function (or a function it calls), and declare choices from a light module")


def test_the_probe_would_see_a_heavy_import():
    # The same check on an interpreter that ran a command's heavy import finds it: the check can fail.
    done = subprocess.run([sys.executable, "-c", "import json, sys; import pdrepro.scenario.model; "
                           "print(json.dumps(sorted(sys.modules)))"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    heavy = _heavy(json.loads(done.stdout))
    assert "pydantic" in heavy and "pdrepro.scenario.model" in heavy


def test_the_light_names_are_the_registries():
    # The choices the parser declares without the registries are exactly the registries' keys.
    from pdrepro.launch.stack.kinds import STACK_KINDS
    from pdrepro.launch.stack.record import STACK_KINDS as RECORDED
    from pdrepro.launch.targets.names import TARGET_NAMES
    from pdrepro.launch.targets.registry import TARGETS
    from pdrepro.scenario.portbaseline import MIN_PORT_BASELINE_FRACTION
    from pdrepro.scenario.schemagen import MODELS
    from pdrepro.scenario.schemanames import SCHEMA_NAMES
    from pdrepro.scenario.sections import Thresholds
    from pdrepro.sweep import choices, config

    assert TARGET_NAMES == tuple(sorted(TARGETS))
    assert SCHEMA_NAMES == tuple(sorted(MODELS))
    assert STACK_KINDS == RECORDED == ("disaggregated", "regular")
    assert (config.FAILURE_POLICIES, config.DEFAULT_WAIT_S) == (choices.FAILURE_POLICIES, choices.DEFAULT_WAIT_S)
    assert Thresholds.model_fields["min_port_baseline_fraction"].default == MIN_PORT_BASELINE_FRACTION
