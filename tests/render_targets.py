"""How the golden and cross-target tests render each shipped scenario for
each target: the CLI arguments (documentation addresses), which scenarios a
target renders, and how to read back what each rendered server and router
runs. A new target adds one entry to TARGETS and one to LAUNCHED."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from pdrepro.scenario.model import Scenario, load_scenario, shipped_names

GOLDEN_ROOT = Path(__file__).parent / "golden" / "render"


def node_ips(scenario: Scenario) -> tuple[str, str]:
    """prefill node i at 192.0.2.(10+i), decode node i at 192.0.2.(20+i)."""
    t = scenario.topology
    return (",".join(f"192.0.2.{10 + i}" for i in range(t.prefill.nodes)),
            ",".join(f"192.0.2.{20 + i}" for i in range(t.decode.nodes)))


def _compose_args(scenario: Scenario) -> list[str]:
    prefill, decode = node_ips(scenario)
    return ["--prefill-ip", prefill, "--decode-ip", decode]


def _k8s_args(scenario: Scenario) -> list[str]:
    return []


def _disaggregated(scenario: Scenario) -> bool:
    return scenario.launch is not None and "disaggregated" in scenario.launch.stacks


# target -> (extra `pdrepro render` arguments, which scenarios it renders)
TARGETS = {
    "compose": (_compose_args, lambda s: s.launch is not None),
    "k8s": (_k8s_args, _disaggregated),
    # The one-box check's own scenarios; it runs them with no GPU-to-NIC map.
    "onebox": (lambda s: [], lambda s: s.name.startswith("onebox-")),
    "slurm": (lambda s: [], _disaggregated),
}


# Snapshot folders of a target rendered with site options: folder name -> (target, its options).
VARIANTS = {
    # One GPU shared by both servers, with the extras and the TCP switch a box without RDMA uses.
    "onebox-onegpu": ("onebox", ["--gpus", "0", "--force-tcp", "--server-arg=--attention-backend triton",
                                 "--server-arg=--enable-metrics"]),
    # The same box with NIXL as the transfer backend: the files every backend renders through the one plan.
    "onebox-nixl": ("onebox", ["--transfer-backend", "nixl"]),
}


def cases(targets=None) -> list[tuple[str, str]]:
    """(scenario, snapshot folder) pairs: every target that applies, and the variants when no targets are named."""
    out = []
    for name in shipped_names():
        scenario = load_scenario(name)
        for target, (_, applies) in TARGETS.items():
            if (targets is None or target in targets) and applies(scenario):
                out.append((name, target))
        for variant, (target, _) in VARIANTS.items():
            if (targets is None or variant in targets) and TARGETS[target][1](scenario):
                out.append((name, variant))
    return out


def render_argv(name: str, target: str, out: Path) -> list[str]:
    target, extra = VARIANTS.get(target, (target, []))
    make_args, _ = TARGETS[target]
    return ["render", "--target", target, "--scenario", name, *make_args(load_scenario(name)), *extra, "--out", str(out)]


# ---- what a rendered target runs, read back from its files -----------------

@dataclass
class Launched:
    """Server name (prefill-0, decode-1-1, ...) -> (argv, env), and the router's
    argv, with every node address replaced by <node name>."""

    servers: dict[str, tuple[list[str], dict[str, str]]]
    router: list[str]


def _swap(words, addresses: dict[str, str]) -> list[str]:
    pattern = re.compile("|".join(re.escape(a) for a in sorted(addresses, key=len, reverse=True)))
    return [pattern.sub(lambda m: f"<{addresses[m.group(0)]}>", w) for w in words]


def launched_compose(out: Path, scenario: Scenario) -> Launched:
    """Through the real compose CLI, from each node's rendered compose file and env file."""
    from composecli import config

    prefill, decode = node_ips(scenario)
    t = scenario.topology
    single = (t.prefill.nodes, t.decode.nodes) == (1, 1)
    addresses = {ip: f"prefill-{i}" for i, ip in enumerate(prefill.split(","))}
    addresses.update({ip: f"decode-{i}" for i, ip in enumerate(decode.split(","))})
    servers, router = {}, []
    for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes)):
        for i in range(n):
            stem = role if single else f"{role}-{i}"
            services = config(out / f"{stem}.yaml", out / f"{stem}.env")["services"]
            svc = services[role]
            env = {k: v for k, v in svc["environment"].items() if v is not None and k != "PYTHONUNBUFFERED"}
            env = dict(zip(env, _swap(env.values(), addresses)))
            servers[f"{role}-{i}"] = (_swap(svc["command"], addresses), env)
            if role == "decode" and i == 0:
                router = _swap(services["router"]["command"], addresses)
    return Launched(servers, router)


def launched_k8s(out: Path, scenario: Scenario) -> Launched:
    import yaml

    from pdrepro.launch.targets import k8s

    t = scenario.topology
    addresses = {k8s.pod_host(role, i): f"{role}-{i}"
                 for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes)) for i in range(n)}
    objects = [o for f in sorted(out.glob("*.yaml")) for o in yaml.safe_load_all(f.read_text())]
    servers, router = {}, []
    for obj in objects:
        spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        if obj["kind"] == "StatefulSet":
            role = obj["metadata"]["labels"]["app.kubernetes.io/component"]
            for i in range(obj["spec"]["replicas"]):
                for c in spec["containers"]:
                    name = f"{role}-{i}" if c["name"] == role else f"{role}-{i}-{c['name'].rsplit('-', 1)[1]}"
                    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}
                    servers[name] = (_swap(_k8s_argv(c), addresses),
                                     {k: v for k, v in env.items() if k not in ("POD_NAME", "PYTHONUNBUFFERED")})
        elif obj["kind"] == "Deployment" and obj["metadata"]["name"].endswith("-router"):
            router = _swap(_k8s_argv(spec["containers"][0]), addresses)
    return Launched(servers, router)


def _k8s_argv(container: dict) -> list[str]:
    """What a rendered container runs: a server's `args` behind the log
    wrapper (which runs them as ``"$0" "$@"``), else its `command` (the image
    has no ENTRYPOINT)."""
    command = container.get("command", [])
    if command[:2] == ["bash", "-c"] and len(command) == 3 and '"$0" "$@" > "$pipe"' in command[2]:
        return list(container["args"])
    return [*command, *container.get("args", [])]


def slurm_command(text: str, name: str, values: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment and argv of the ``launch``/``step`` command NAME in a
    rendered script, with the script variables in ``values`` filled in: what a
    test compares with the other targets' commands."""
    for block in re.split(r"\n(?=\S)", text):
        head = block.split(" \\\n", 1)[0].split()
        if len(head) >= 2 and head[0] in ("launch", "step") and shlex.split(head[1]) == [name]:
            body = block.replace(" \\\n", " ").split("\n    ||")[0]
            for key, value in values.items():
                body = body.replace("${" + key + "}", value).replace("$" + key, value)
            words = shlex.split(body)[4 if head[0] == "launch" else 3:]
            cut = words.index("--")
            return dict(w.split("=", 1) for w in words[:cut]), words[cut + 1:]
    raise KeyError(name)


def launched_slurm(out: Path, scenario: Scenario) -> Launched:
    """From the sbatch script, its node-address variables named by node."""
    text = (out / f"{scenario.name}.sbatch").read_text()
    t = scenario.topology
    values = {f"{role.upper()}_IPS[{i}]": f"<{role}-{i}>"
              for role, n in (("prefill", t.prefill.nodes), ("decode", t.decode.nodes)) for i in range(n)}
    names = re.findall(r"^launch (\S+) ", text, flags=re.M)
    servers = {}
    for name in names:
        env, argv = slurm_command(text, name, values)
        servers[name] = (argv, env)
    router = servers.pop("router")[0]
    return Launched(servers, router)


# target -> reader of its rendered files; compose is the reference the others are held to
LAUNCHED = {"compose": launched_compose, "k8s": launched_k8s, "slurm": launched_slurm}


def host_commands(text: str) -> dict[str, tuple[dict[str, str], list[str]]]:
    """Process name -> (environment, argv) from the commands.txt `render --launcher host` writes
    (blocks headed "# NAME runs:", one shell line each, continued with backslashes)."""
    blocks = {}
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if lines and lines[0].startswith("# ") and lines[0].endswith(" runs:"):
            words = shlex.split(" ".join(lines[1:]).replace("\\ ", " "))
            env = {}
            while "=" in words[0] and not words[0].startswith("-"):
                key, value = words.pop(0).split("=", 1)
                env[key] = value
            blocks[lines[0][2:-len(" runs:")]] = (env, words)
    return blocks
