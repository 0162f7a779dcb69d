"""The compose target: one compose file per node, written whole from the launch plan (each server's
argv and environment as the plan has them, through the templates in ``templates/``), an env file per
node, and the per-node recipe.

The env file holds the stack's facts for the shell and the make targets (addresses, ports, paths, the
image) and the two knobs compose reads at `up` (MEMLOCK, SERVER_START_PERIOD); nothing in it builds an
argv. With one prefill and one decode node the files are prefill.yaml / decode.yaml; with more nodes
each node gets its own (prefill-0.yaml, ...), and decode-0's runs the router.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ...core import advice
from ...core.errors import UserError
from ...core.roles import SERVER_ROLES, Role
from ...scenario import site as siteinput
from ...scenario.model import Scenario
from ..plan import DEFAULT_IB_DEVICES, DEFAULT_START_PERIOD, LaunchPlan, NodeLaunch, Plan, ServerLaunch, shell_line
from .base import Hosts, Rendered
from .composefile import ComposeFile, Service, file_text

PROJECTS = {"prefill": "pdrepro-prefill", "decode": "pdrepro-decode", "regular": "pdrepro-regular"}

Rows = list[tuple[str, str, str]]


def single_pair(plan: Plan) -> bool:
    t = plan.topology
    return (t.prefill.nodes, t.prefill.servers_per_node, t.decode.nodes, t.decode.servers_per_node) == (1, 1, 1, 1)


def check_expressible(plan: Plan) -> None:
    t = plan.topology
    if plan.disaggregated and (t.prefill.servers_per_node > 1 or t.decode.servers_per_node > 1):
        raise UserError(f"scenario {plan.scenario.name}: topology runs several servers per node, but the compose files "
                        "run one server per node; use --target k8s, or servers_per_node: 1")


def common_vars(plan: Plan) -> Rows:
    s = plan.site
    return [
        ("GPU_IMAGE", s.image, "the image every service runs (docker/versions.env)"),
        ("MODEL_PATH", s.model_path, "model folder, mounted read-only at the same path"),
        ("DATASET_PATH", s.dataset_path, "ShareGPT JSON for the bench client"),
        ("ROUTER_PORT", str(plan.launch.ports.router), ""),
        ("LOG_DIR", s.log_dir, "host folder receiving <service>.log; outlives the containers"),
        ("MEMLOCK", str(s.memlock), "locked-memory limit in bytes; -1 = unlimited (RDMA needs it large); compose reads it"),
        ("SERVER_START_PERIOD", DEFAULT_START_PERIOD, "time a server may take to load before health checks count; "
         "compose reads it"),
    ]


def _pd_vars(plan: Plan, prefill_node: int, decode_node: int) -> Rows:
    s, ports = plan.site, plan.launch.ports
    if s.ib_devices_file is None:
        raise UserError("--target compose mounts the GPU-to-NIC map into the servers; give --ib-devices FILE")
    return [
        ("PREFILL_IP", s.prefill_hosts[prefill_node], "prefill node, RDMA-reachable address"),
        ("DECODE_IP", s.decode_hosts[decode_node], "decode node (runs the router too)"),
        ("PREFILL_PORT", str(ports.prefill), ""),
        ("DECODE_PORT", str(ports.decode), ""),
        ("BOOTSTRAP_PORT", str(ports.bootstrap), "prefill's KV-transfer bootstrap port"),
        ("IB_DEVICES_FILE", s.ib_devices_file, "GPU-to-RDMA-device map (JSON), mounted read-only at the same path"),
    ]


def _regular_vars(plan: Plan) -> Rows:
    ip1, ip2 = plan.regular_ips()
    p1, p2 = plan.launch.ports.regular
    return [
        ("REGULAR_1_IP", ip1, "node of the first regular instance"),
        ("REGULAR_2_IP", ip2, "node of the second instance and the router"),
        ("REGULAR_1_PORT", str(p1), ""),
        ("REGULAR_2_PORT", str(p2), ""),
    ]


def node_file_name(role: str, node: int, plan: Plan, ext: str) -> str:
    return f"{role}.{ext}" if single_pair(plan) else f"{role}-{node}.{ext}"


def env_file_name(role: str, node: int, plan: Plan) -> str:
    return node_file_name(role, node, plan, "env")


def env_files(plan: Plan) -> dict[str, Rows]:
    """File name -> (variable, value, comment) rows, one file per node and stack."""
    check_expressible(plan)
    files = {}
    if plan.disaggregated:
        for role in SERVER_ROLES:
            for node in range(len(plan.hosts(role))):
                pair = {Role.PREFILL: (node, 0), Role.DECODE: (0, node)}[role]  # (prefill node, decode node)
                files[env_file_name(role, node, plan)] = common_vars(plan) + _pd_vars(plan, *pair)
    if "regular" in plan.launch.stacks:
        files["regular.env"] = common_vars(plan) + _regular_vars(plan)
    return files


_PLAIN = re.compile(r"^[A-Za-z0-9_./:,@%+=-]*$")


def env_value(key: str, value: str) -> str:
    """A value both compose's env-file reader and a POSIX shell (`set -a; .
    file`) read back unchanged: plain, or in double quotes."""
    if _PLAIN.match(value):
        return value
    if any(c in value for c in '"$`\\\n'):
        raise UserError(f"{key} value {value!r} holds a quote, $, backquote, backslash or newline; "
                        "the env file cannot carry it the same way for compose and the shell")
    return f'"{value}"'


def format_env_file(name: str, rows: Rows, scenario: Scenario) -> str:
    lines = [
        f"# {name}: this node's stack facts for scenario {scenario.name} (written by `pdrepro render`).",
        "# Pass with --env-file (compose reads MEMLOCK and SERVER_START_PERIOD); it also sources in a shell",
        "# (set -a; . FILE), as `make repro` does. The commands themselves are in the compose files.",
        "",
    ]
    for key, value, comment in rows:
        if comment:
            lines.append(f"# {comment}")
        lines.append(f"{key}={env_value(key, value)}")
    return "\n".join(lines) + "\n"


# ---- the compose files ------------------------------------------------------

def server_service(plan: Plan, server: ServerLaunch, name: str, container: str, **kw) -> Service:
    return Service(name=name, container=container, argv=server.argv, port=server.port, env=dict(server.env),
                   health_path=plan.engine.worker_health_paths[0], log=server.log_name, **kw)


def router_service(plan: Plan, argv: tuple[str, ...] | list[str], name: str, container: str,
                   depends_on: tuple[str, ...]) -> Service:
    return Service(name=name, container=container, argv=tuple(argv), port=plan.launch.ports.router,
                   health_path=plan.engine.router_health_paths[0], log=f"{name}.log", depends_on=depends_on,
                   router=True)


def _up(file: str, env_file: str, services: str = "") -> str:
    return f"docker compose -f {file} --env-file {env_file} up -d --wait{services}"


def _pd_files(plan: Plan, lp: LaunchPlan, out: str) -> dict[str, str]:
    site = plan.site
    mounts = tuple(p for p in (site.model_path, site.dataset_path, site.ib_devices_file) if p)
    files = {}
    for node in lp.nodes:
        (server,) = node.servers
        role = node.role
        services = [server_service(plan, server, role, f"pdrepro-{role}", mounts=mounts, rdma=True)]
        if role == "decode" and node.index == 0:
            services.append(router_service(plan, lp.router_argv, "router", "pdrepro-router", (role,)))
            title = f"{node.name} node {node.host}: the {role} server and the router"
        else:
            title = f"{node.name} node {node.host}: the {role} server"
        name = node_file_name(role, node.index, plan, "yaml")
        up = _up(f"{out}/{name}", f"{out}/{env_file_name(role, node.index, plan)}")
        files[name] = file_text(ComposeFile(PROJECTS[role], title, up, tuple(services)), plan)
    return files


def _regular_file(plan: Plan, out: str) -> str:
    site = plan.site
    mounts = (site.model_path, site.dataset_path)
    services = []
    for i, port in enumerate(plan.launch.ports.regular):
        name = f"regular-{i + 1}"
        services.append(Service(name=name, container=f"pdrepro-{name}", argv=tuple(plan.regular_argv(i)), port=port,
                                env=plan.server_env("regular", i), health_path=plan.engine.worker_health_paths[0],
                                log=f"{name}.log", mounts=mounts))
    # Only the instance that always shares its node is a compose dependency; the router's health check covers both.
    services.append(router_service(plan, plan.regular_router_argv(), "regular-router", "pdrepro-regular-router",
                                   ("regular-2",)))
    up = _up(f"{out}/regular.yaml", f"{out}/regular.env")
    return file_text(ComposeFile(PROJECTS["regular"], "the regular (comparison) stack: two instances and the router",
                                 up, tuple(services)), plan)


def compose_files(plan: Plan, out: str) -> dict[str, str]:
    """File name -> compose file text, one per node of the disaggregated stack, and regular.yaml."""
    check_expressible(plan)
    files = _pd_files(plan, plan.launch_plan(), out) if plan.disaggregated else {}
    if "regular" in plan.launch.stacks:
        files["regular.yaml"] = _regular_file(plan, out)
    return files


def commands_text(plan: Plan, out: str) -> str:
    """The per-node recipe: what to start, and what each container runs."""
    blocks = []

    def block(title: str, up: str, services: Sequence[tuple[str, dict, Sequence[str]]],
              before: Sequence[str] = ()) -> None:
        lines = [f"## {title}", *before, f"$ {up}", ""]
        for name, env, argv in services:
            lines += [f"# {name} runs:", shell_line(env, tuple(argv)), ""]
        blocks.append("\n".join(lines))

    if plan.disaggregated:
        lp = plan.launch_plan()
        decode = lp.role("decode")
        for node in (*lp.role("prefill"), *decode[1:], decode[0]):
            (server,) = node.servers
            services = [(node.role, server.env, server.argv)]
            up = _up(f"{out}/{node_file_name(node.role, node.index, plan, 'yaml')}",
                     f"{out}/{env_file_name(node.role, node.index, plan)}")
            if node is decode[0]:
                services.append(("router", {}, lp.router_argv))
                title = (f"{node.name} node {node.host} (after the prefill server is healthy)" if single_pair(plan) else
                         f"{node.name} node {node.host} (last, once every other node is healthy; runs the router)")
            elif node.role == "decode":
                title = f"{node.name} node {node.host} (after the prefill servers are healthy)"
            else:
                title = f"{node.name} node {node.host}"
            block(title, up, services, _record_lines(plan, out, node) if node.index == 0 else ())
    if "regular" in plan.launch.stacks:
        if plan.disaggregated:
            blocks.append("# The two stacks share ports and GPUs: run one at a time (`make down` in between).\n")
        ip1, ip2 = plan.regular_ips()
        base = _up(f"{out}/regular.yaml", f"{out}/regular.env")
        if ip1 == ip2:
            block(f"regular stack, node {ip1}", base,
                  [("regular-1", plan.server_env("regular", 0), plan.regular_argv(0)),
                   ("regular-2", plan.server_env("regular", 1), plan.regular_argv(1)),
                   ("regular-router", {}, plan.regular_router_argv())])
        else:
            block(f"regular stack, node {ip1}", f"{base} regular-1",
                  [("regular-1", plan.server_env("regular", 0), plan.regular_argv(0))])
            block(f"regular stack, node {ip2} (after regular-1 is healthy)", f"{base} regular-2 regular-router",
                  [("regular-2", plan.server_env("regular", 1), plan.regular_argv(1)),
                   ("regular-router", {}, plan.regular_router_argv())])
    return "\n".join(blocks)


def _record_lines(plan: Plan, out: str, node: NodeLaunch) -> list[str]:
    """The first node of each role writes its record before its stack starts; `make repro` (decode node) writes the
    decode node's itself, takes the prefill node's from <OUT>/nodes/prefill.json and runs the pair check."""
    record = f"{out}/nodes/{node.role}.json"
    doctor = (f"$ pdrepro doctor --role {node.role} --scenario {plan.scenario.name} --image {plan.site.image} "
              f"--out {record}")
    if node.role == "prefill":
        return [doctor, f"# copy {record} to the same path on the decode node: `make repro` there checks the pair"]
    return [f"# `make repro` writes {record} itself and checks it against nodes/prefill.json before the sweep"]


class ComposeTarget:
    """Compose files and env files per node for the compose stacks, and the per-node recipe (commands.txt)."""

    name = "compose"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        t = scenario.topology
        prefill_ips = siteinput.parse_ips(options.prefill_ip, "--prefill-ip", t.prefill.nodes)
        decode_ips = siteinput.parse_ips(options.decode_ip, "--decode-ip", t.decode.nodes)
        siteinput.check_node_ips(prefill_ips, decode_ips)
        return prefill_ips, decode_ips

    def render(self, plan: Plan, options, out: str) -> Rendered:
        files = compose_files(plan, out)
        files.update({name: format_env_file(name, rows, plan.scenario) for name, rows in env_files(plan).items()})
        if options.ib_devices:
            # A reference copy, so the folder shipped to the nodes is complete.
            files["ib_devices.json"] = Path(options.ib_devices).expanduser().read_text()
        text = commands_text(plan, out)
        files["commands.txt"] = text
        notes = []
        if not options.model:
            notes.append(f"note: model path {plan.site.model_path} is a default, not checked: pass --model")
        if not options.ib_devices:
            device_file = plan.site.ib_devices_file or DEFAULT_IB_DEVICES  # compose always names one
            notes.append(f"note: {device_file} must exist on every node: `{advice.ib_devices(device_file)}`")
        return Rendered(files=files, commands=text, notes=tuple(notes))


TARGET = ComposeTarget()
