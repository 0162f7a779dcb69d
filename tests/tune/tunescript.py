"""Runs `pdrepro ARGV...` in this process, as a user would in a shell, against the stand-in servers
(tests/fixtures/standin): stack up, the sweep (its bench client the stand-in's), stack down and the judging are
the real commands. The stand-in servers "move" the KV at the speed STANDIN_TRANSFER_GBPS gives them; here that
speed follows the setting each `stack up` starts (its scenario file's launch.env and extra server flags, the
words the tune hands the stack), so a setting reaches the figures as it would on a GPU: through the scenario,
the launch and the servers' own log lines.

  TUNE_FAST=KEY=VALUE    a stack started with that variable (or that flag and value: --page-size=16) moves the
                         KV twice as fast
  TUNE_SLOW=KEY=VALUE    ... half as fast
The baseline's repeats differ by a few percent (the spread it measures); any other setting is off by 1 %.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pdrepro.commands import run_command
from pdrepro.scenario.model import load_scenario

BASE_GBPS = 2.0
NOISE = {"baseline-1": 1.0, "baseline-2": 1.04, "baseline-3": 0.96}


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def _given(scenario_file: str, knob: str) -> bool:
    launch = load_scenario(scenario_file).launch
    assert launch is not None
    key, _, value = knob.partition("=")
    if key.startswith("--"):
        return _value(list(launch.extra_server_args), key) == value
    return launch.env.get(key) == value


def speed(scenario: str, out: Path) -> float:
    gbps = BASE_GBPS * NOISE.get(out.name, 0.99)
    if os.environ.get("TUNE_FAST") and _given(scenario, os.environ["TUNE_FAST"]):
        gbps *= 2
    if os.environ.get("TUNE_SLOW") and _given(scenario, os.environ["TUNE_SLOW"]):
        gbps /= 2
    return gbps


def main(argv: list[str]) -> int:
    import dataclasses

    import pdrepro.arms as arms

    real = arms.run_arms

    def run_arms(run, label, given, **kw):
        stages = kw["stages"]

        def stack_up(request) -> int:
            os.environ["STANDIN_TRANSFER_GBPS"] = f"{speed(request.scenario, request.out):.4f}"
            try:
                return stages.stack_up(request)
            finally:
                os.environ.pop("STANDIN_TRANSFER_GBPS", None)

        return real(run, label, given, **{**kw, "stages": dataclasses.replace(stages, stack_up=stack_up)})

    arms.run_arms = run_arms  # type: ignore[assignment]
    return run_command(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
