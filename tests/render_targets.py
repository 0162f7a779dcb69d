"""How the golden and cross-target tests render each shipped scenario for
each target: the CLI arguments (documentation addresses) and which
scenarios a target renders. A new target adds one entry to TARGETS."""

from __future__ import annotations

from pathlib import Path

from pdrepro.scenario import Scenario, load_scenario, shipped_names

GOLDEN_ROOT = Path(__file__).parent / "golden" / "render"


def node_ips(scenario: Scenario) -> tuple[str, str]:
    """prefill node i at 192.0.2.(10+i), decode node i at 192.0.2.(20+i)."""
    t = scenario.topology
    return (",".join(f"192.0.2.{10 + i}" for i in range(t.prefill.nodes)),
            ",".join(f"192.0.2.{20 + i}" for i in range(t.decode.nodes)))


def _compose_args(scenario: Scenario) -> list[str]:
    prefill, decode = node_ips(scenario)
    return ["--prefill-ip", prefill, "--decode-ip", decode]


def _disaggregated(scenario: Scenario) -> bool:
    return scenario.launch is not None and "disaggregated" in scenario.launch.stacks


# target -> (extra `pdrepro render` arguments, which scenarios it renders)
TARGETS = {
    "compose": (_compose_args, lambda s: s.launch is not None),
}


def cases(targets=None) -> list[tuple[str, str]]:
    out = []
    for name in shipped_names():
        scenario = load_scenario(name)
        for target, (_, applies) in TARGETS.items():
            if (targets is None or target in targets) and applies(scenario):
                out.append((name, target))
    return out


def render_argv(name: str, target: str, out: Path) -> list[str]:
    make_args, _ = TARGETS[target]
    return ["render", "--target", target, "--scenario", name, *make_args(load_scenario(name)), "--out", str(out)]
