"""One launch plan, not two: every file `pdrepro render` writes runs the plan's argv and environment, word
for word. Each target (compose, onebox, k8s, slurm) for every shipped scenario it renders (the snapshot
cases, variants included), and for every transfer backend the registry knows; the compose files are read
back through the real `docker compose config`, so each check is also that the file is valid for compose."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from composecli import config
from render_targets import _swap, cases, launched_k8s, launched_slurm, render_argv

from pdrepro import backends
from pdrepro.cli import main
from pdrepro.commands import build_parser
from pdrepro.commands.render import build_site
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import k8s
from pdrepro.launch.targets.registry import TARGETS
from pdrepro.scenario.model import load_scenario

Commands = dict[str, tuple[list[str], dict[str, str]]]   # process name -> (argv, env)


def _plan(argv: list[str]) -> tuple[str, launch.Plan]:
    """The plan `pdrepro render ARGV` renders, built the way the command builds it."""
    args = build_parser().parse_args(argv)
    scenario = load_scenario(args.scenario)
    site = build_site(args, scenario, *TARGETS[args.target].hosts(scenario, args))
    if args.target == "onebox":
        site = dataclasses.replace(site, ib_devices_file=None)  # the one-box target passes no device map
    return args.target, launch.Plan(scenario, site)


def _expected(plan: launch.Plan) -> Commands:
    out: Commands = {}
    if plan.disaggregated:
        lp = plan.launch_plan()
        out = {s.name: (list(s.argv), dict(s.env)) for s in lp.servers}
        out["router"] = (list(lp.router_argv), {})
    if "regular" in plan.launch.stacks:
        for i in (0, 1):
            out[f"regular-{i + 1}"] = (plan.regular_argv(i), plan.server_env("regular", i))
        out["regular-router"] = (plan.regular_router_argv(), {})
    return out


def _unescaped(words: list[str]) -> list[str]:
    # `compose config` prints a file compose reads again: a literal `$` stays doubled there.
    return [w.replace("$$", "$") for w in words]


def _from_compose(out: Path, plan: launch.Plan, files: list[tuple[str, str]]) -> Commands:
    """(compose file, env file) pairs, read by the real compose CLI; services named as the plan names them."""
    lp = plan.launch_plan() if plan.disaggregated else None
    got: Commands = {}
    for compose_file, env_file in files:
        stem = compose_file.removesuffix(".yaml")
        for name, svc in config(out / compose_file, out / env_file)["services"].items():
            env = {k: v for k, v in (svc.get("environment") or {}).items() if v is not None and k != "PYTHONUNBUFFERED"}
            if name in ("prefill", "decode") and lp is not None:
                node = 0 if stem in (name, "onebox") else int(stem.rsplit("-", 1)[1])
                name = lp.role(name)[node].servers[0].name
            got[name] = (_unescaped(svc["command"]), {k: v.replace("$$", "$") for k, v in env.items()})
    return got


def _rendered(target: str, out: Path, plan: launch.Plan) -> tuple[Commands, Commands]:
    """(what the files run, what the plan runs), in the terms the target's files can state."""
    expected = _expected(plan)
    scenario = plan.scenario
    if target == "compose":
        files = [(p.name, p.with_suffix(".env").name) for p in sorted(out.glob("*.yaml"))]
        return _from_compose(out, plan, files), expected
    if target == "onebox":
        return _from_compose(out, plan, [("onebox.yaml", "onebox.env")]), expected
    t = scenario.topology
    if target == "k8s":
        launched = launched_k8s(out, scenario)
        addresses = {k8s.pod_host(role, i): f"{role}-{i}"
                     for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes)) for i in range(n)}
        lp = plan.launch_plan()
        want: Commands = {"router": (_swap(lp.router_argv, addresses), {})}
        for s in lp.servers:
            # The cluster decides the pod's address and GPUs (k8s.cluster_env); the rest is the plan's.
            env = {k: v for k, v in s.env.items() if k not in k8s.cluster_env(plan.engine)}
            want[f"{s.role}-{s.node}" + (f"-{s.index}" if s.index else "")] = (_swap(s.argv, addresses), env)
        got = {name: (argv, {k: v for k, v in env.items() if k not in k8s.cluster_env(plan.engine)})
               for name, (argv, env) in launched.servers.items()}
        got["router"] = (launched.router, {})
        return got, want
    assert target == "slurm"
    launched = launched_slurm(out, scenario)
    refs = {launch_ref: f"<{role}-{i}>" for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes))
            for i in range(n) for launch_ref in (f"${{{role.upper()}_IPS[{i}]}}",)}

    def fill(words):
        for ref, name in refs.items():
            words = [w.replace(ref, name) for w in words]
        return list(words)

    # The job runs the disaggregated stack only (a comparison's regular stack is another job).
    want = {name: (fill(argv), dict(zip(env, fill(list(env.values()))))) for name, (argv, env) in expected.items()
            if not name.startswith("regular-")}
    got = {name: (argv, env) for name, (argv, env) in launched.servers.items()}
    got["router"] = (launched.router, {})
    return got, want


def _check(argv: list[str], out: Path) -> None:
    assert main(argv) == 0
    target, plan = _plan(argv)
    got, want = _rendered(target, out, plan)
    assert want, "the plan runs nothing"
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name][0] == want[name][0], f"{target} {name}: argv differs from the plan's"
        assert got[name][1] == want[name][1], f"{target} {name}: environment differs from the plan's"


@pytest.mark.parametrize("name,folder", cases())
def test_every_rendered_file_runs_the_plan(name, folder, tmp_path, capsys):
    out = tmp_path / "out"
    _check(render_argv(name, folder, out), out)


# A TCP-only backend is for one box: render refuses it elsewhere (tests/launch/test_transfer_backend.py).
BACKEND_CASES = [(b, t) for b in backends.names() for t in sorted(TARGETS)
                 if t == "onebox" or not backends.backend(b).tcp_only]
# Each backend's own variables, set in the scenario's launch.env (UCX picks NIXL's transports).
BACKEND_ENV = {"nixl": {"UCX_TLS": "tcp,cuda_copy", "UCX_LOG_LEVEL": "info"}}


@pytest.mark.parametrize("backend,target", BACKEND_CASES)
def test_every_backend_renders_its_environment_in_every_target(backend, target, tmp_path, capsys):
    """A scenario whose launch.transfer_backend is BACKEND, with that backend's own variables in launch.env,
    renders for every target with those variables (and the backend's plan_env, MC_FORCE_TCP for the TCP one)
    in each server's environment, argv and environment equal to the plan's."""
    shipped = "onebox-qwen25-0.5b" if target == "onebox" else "h20-qwen3-235b-2p2d"
    data = load_scenario(shipped).to_dict()
    chosen = backends.backend(backend)
    own = BACKEND_ENV.get(backend, {"MC_TE_METRIC": "1"})
    # The backend's required variables keep the shipped values; another backend's variables go.
    data["launch"]["env"] = {**{k: v for k, v in data["launch"]["env"].items() if k in chosen.required_env}, **own}
    data["launch"]["transfer_backend"] = backend
    scenario = tmp_path / f"{backend}.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    argv = render_argv(shipped, target, out)
    argv[argv.index("--scenario") + 1] = str(scenario)
    _check(argv, out)
    _, plan = _plan(argv)
    want = {**own, **chosen.plan_env}
    for server in plan.launch_plan().servers:
        assert {k: server.env.get(k) for k in want} == want
    text = "\n".join(p.read_text() for p in out.iterdir() if p.is_file())
    flag = plan.engine.backend_flags[backend]
    assert all(f"{k}" in text and v in text for k, v in want.items()) and flag in text
