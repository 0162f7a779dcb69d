"""The compose target: one env file per node for compose/prefill.yaml and
compose/decode.yaml (or compose/regular.yaml), and the per-node recipe.

The compose files spell the plan's commands with ``${VARS}``; the rows here
give those variables their values. With one prefill and one decode node the
two nodes share one set of values (prefill.env, decode.env); with more nodes
each node gets its own file, and the router on decode-0 receives the other
nodes' URLs through ROUTER_EXTRA_PREFILL / ROUTER_EXTRA_DECODE.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ...core.errors import UserError
from ...core.roles import SERVER_ROLES, Role
from ...scenario import site as siteinput
from ...scenario.launch_section import LAUNCH_ENV_FIXED, LAUNCH_ENV_TUNABLES
from ...scenario.model import Scenario
from ..plan import DEFAULT_START_PERIOD, Plan, shell_line, url
from .base import Hosts, Rendered

COMPOSE_FILES = {"prefill": "compose/prefill.yaml", "decode": "compose/decode.yaml", "regular": "compose/regular.yaml"}

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
    s, launch = plan.site, plan.launch
    return [
        ("GPU_IMAGE", s.image, "image with SGLang, Mooncake and the router (docker/versions.env)"),
        ("MODEL_PATH", s.model_path, "model folder, mounted read-only at the same path"),
        ("DATASET_PATH", s.dataset_path, "ShareGPT JSON for the bench client, mounted read-only"),
        ("DTYPE", plan.scenario.model.dtype, ""),
        ("STREAM_INTERVAL", str(launch.stream_interval), ""),
        ("CHUNKED_PREFILL_SIZE", str(launch.chunked_prefill_size), "-1 turns chunked prefill off"),
        ("SERVER_EXTRA_ARGS", shlex.join(plan.extra_server_args),
         "appended to every server command; empty in the published launch"),
        ("ROUTER_PORT", str(launch.ports.router), ""),
        ("ROUTER_POLICY", launch.router_policy, ""),
        ("LOG_DIR", s.log_dir, "host folder receiving <service>.log; outlives the containers"),
        ("MEMLOCK", str(s.memlock), "locked-memory limit in bytes; -1 = unlimited (RDMA needs it large)"),
        ("SERVER_START_PERIOD", DEFAULT_START_PERIOD, "time a server may take to load before health checks count"),
    ]


def _pd_vars(plan: Plan, prefill_node: int, decode_node: int) -> Rows:
    s, ports = plan.site, plan.launch.ports
    if s.ib_devices_file is None:
        raise UserError("--target compose mounts the GPU-to-NIC map into the servers; give --ib-devices FILE")
    out = [
        ("PREFILL_IP", s.prefill_hosts[prefill_node], "prefill node, RDMA-reachable address"),
        ("DECODE_IP", s.decode_hosts[decode_node], "decode node (runs the router too)"),
        ("PREFILL_PORT", str(ports.prefill), ""),
        ("DECODE_PORT", str(ports.decode), ""),
        ("BOOTSTRAP_PORT", str(ports.bootstrap), "prefill's KV-transfer bootstrap port, given to the router"),
        ("PREFILL_TP", str(plan.tp("prefill")), ""),
        ("DECODE_TP", str(plan.tp("decode")), ""),
        ("PREFILL_GPU_IDS", ",".join(map(str, plan.server_gpus("prefill", prefill_node))),
         "host GPU ids (CUDA_VISIBLE_DEVICES); SGLang numbers them 0..TP-1"),
        ("DECODE_GPU_IDS", ",".join(map(str, plan.server_gpus("decode", decode_node))), ""),
        ("IB_DEVICES_FILE", s.ib_devices_file, "GPU-to-RDMA-device map (JSON), mounted read-only at the same path"),
        ("TRANSFER_BACKEND", plan.backend_flag, ""),
    ]
    out += [(k, plan.launch.env[k], "") for k in LAUNCH_ENV_FIXED]
    return out


def _router_vars(plan: Plan) -> Rows:
    ports = plan.launch.ports.pd()
    prefill = [w for host in plan.site.prefill_hosts[1:] for w in ("--prefill", url(host, ports.prefill), str(ports.bootstrap))]
    decode = [w for host in plan.site.decode_hosts[1:] for w in ("--decode", url(host, ports.decode))]
    return [("ROUTER_EXTRA_PREFILL", " ".join(prefill),
             "the router's other prefill servers (URL, bootstrap port), after PREFILL_IP's"),
            ("ROUTER_EXTRA_DECODE", " ".join(decode), "the router's other decode servers, after DECODE_IP's")]


def _regular_vars(plan: Plan) -> Rows:
    ip1, ip2 = plan.regular_ips()
    p1, p2 = plan.launch.ports.regular
    return [
        ("REGULAR_1_IP", ip1, "node of the first regular instance"),
        ("REGULAR_2_IP", ip2, "node of the second instance and the router"),
        ("REGULAR_1_PORT", str(p1), ""),
        ("REGULAR_2_PORT", str(p2), ""),
        ("REGULAR_TP", str(plan.regular_tp), ""),
        ("REGULAR_1_GPU_IDS", ",".join(map(str, plan.regular_gpus[0])), ""),
        ("REGULAR_2_GPU_IDS", ",".join(map(str, plan.regular_gpus[1])), ""),
    ]


def env_file_name(role: str, node: int, plan: Plan) -> str:
    return f"{role}.env" if single_pair(plan) else f"{role}-{node}.env"


def env_files(plan: Plan) -> dict[str, Rows]:
    """File name -> (variable, value, comment) rows, one file per node and stack."""
    check_expressible(plan)
    files = {}
    if plan.disaggregated:
        tunables = [(k, v, "") for k, v in plan.launch.env.items() if k in LAUNCH_ENV_TUNABLES]
        router = [] if single_pair(plan) else _router_vars(plan)
        lp = None if single_pair(plan) else plan.launch_plan()
        for role in SERVER_ROLES:
            for node in range(len(plan.hosts(role))):
                pair = {Role.PREFILL: (node, 0), Role.DECODE: (0, node)}[role]  # (prefill node, decode node)
                rows = common_vars(plan) + _pd_vars(plan, *pair) + router + tunables
                if lp is not None:
                    # One server per node: its log name is the plan's for that node's server.
                    log = lp.role(role)[node].servers[0].log_name
                    rows.append((f"{role.upper()}_LOG", log, "this node's log file in LOG_DIR, unique over the nodes"))
                files[env_file_name(role, node, plan)] = rows
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
        f"# {name}: compose variables for scenario {scenario.name} (written by `pdrepro render`).",
        "# Copy to the node and pass with --env-file; it also sources in a shell (set -a; . FILE).",
        "",
    ]
    for key, value, comment in rows:
        if comment:
            lines.append(f"# {comment}")
        lines.append(f"{key}={env_value(key, value)}")
    unset = [k for k in LAUNCH_ENV_TUNABLES if k not in {r[0] for r in rows}]
    if name != "regular.env" and unset:
        lines += ["", "# Optional tunables, passed to the servers only when set here (unset = upstream default):"]
        lines += [f"#{k}=" for k in unset]
    return "\n".join(lines) + "\n"


def _up(role: str, env_file: str, services: str = "") -> str:
    return f"docker compose -f {COMPOSE_FILES[role]} --env-file {env_file} up -d --wait{services}"


def commands_text(plan: Plan, env_dir: str) -> str:
    """The per-node recipe: what to start, and what each container runs."""
    blocks = []

    def block(title: str, up: str, services: list[tuple[str, dict, list[str]]]) -> None:
        out = [f"## {title}", f"$ {up}", ""]
        for name, env, argv in services:
            out += [f"# {name} runs:", shell_line(env, argv), ""]
        blocks.append("\n".join(out))

    if plan.disaggregated and single_pair(plan):
        s = plan.site
        block(f"prefill node {s.prefill_hosts[0]}", _up("prefill", f"{env_dir}/prefill.env"),
              [("prefill", plan.server_env("prefill"), plan.prefill_argv())])
        block(f"decode node {s.decode_hosts[0]} (after the prefill server is healthy)", _up("decode", f"{env_dir}/decode.env"),
              [("decode", plan.server_env("decode"), plan.decode_argv()),
               ("router", {}, plan.router_argv())])
    elif plan.disaggregated:
        lp = plan.launch_plan()
        decode = lp.role("decode")
        for node in (*lp.role("prefill"), *decode[1:], decode[0]):
            env_file = f"{env_dir}/{env_file_name(node.role, node.index, plan)}"
            (server,) = node.servers
            services = [(node.role, server.env, list(server.argv))]
            if node is decode[0]:
                title = f"{node.name} node {node.host} (last, once every other node is healthy; runs the router)"
                services.append(("router", {}, list(lp.router_argv)))
                up = _up("decode", env_file)
            elif node.role == "decode":
                title = f"{node.name} node {node.host} (after the prefill servers are healthy)"
                up = _up("decode", env_file, " decode")
            else:
                title = f"{node.name} node {node.host}"
                up = _up("prefill", env_file)
            block(title, up, services)
    if "regular" in plan.launch.stacks:
        if plan.disaggregated:
            blocks.append("# The two stacks share ports and GPUs: run one at a time (`make down` in between).\n")
        ip1, ip2 = plan.regular_ips()
        base = _up("regular", f"{env_dir}/regular.env")
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


class ComposeTarget:
    """Env files per node for the compose stacks, and the per-node recipe (commands.txt)."""

    name = "compose"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        t = scenario.topology
        prefill_ips = siteinput.parse_ips(options.prefill_ip, "--prefill-ip", t.prefill.nodes)
        decode_ips = siteinput.parse_ips(options.decode_ip, "--decode-ip", t.decode.nodes)
        siteinput.check_node_ips(prefill_ips, decode_ips)
        return prefill_ips, decode_ips

    def render(self, plan: Plan, options, out: str) -> Rendered:
        files = {name: format_env_file(name, rows, plan.scenario) for name, rows in env_files(plan).items()}
        if options.ib_devices:
            # A reference copy, so the folder shipped to the nodes is complete.
            files["ib_devices.json"] = Path(options.ib_devices).expanduser().read_text()
        text = commands_text(plan, out)
        files["commands.txt"] = text
        notes = []
        if not options.model:
            notes.append(f"note: model path {plan.site.model_path} is a default, not checked: pass --model")
        if not options.ib_devices:
            notes.append(f"note: {plan.site.ib_devices_file} must exist on every node: "
                         f"`pdrepro ib-devices --out {plan.site.ib_devices_file}`")
        return Rendered(files=files, commands=text, notes=tuple(notes))


TARGET = ComposeTarget()
