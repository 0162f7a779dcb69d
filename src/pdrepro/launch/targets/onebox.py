"""The one-box target: prefill, decode and router of a 1P1D plan on one node,
for compose/onebox.yaml (one env file, onebox.env, and the recipe)."""

from __future__ import annotations

import dataclasses
import sys

from ...core.errors import UserError
from ...scenario import site as siteinput
from ...scenario.launch_section import LAUNCH_ENV_FIXED, LAUNCH_ENV_TUNABLES
from ...scenario.model import Scenario
from ..plan import LaunchPlan, Plan, shell_line
from .base import Hosts, Rendered
from .compose import Rows, common_vars, format_env_file

COMPOSE_FILE = "compose/onebox.yaml"
RDMA_FILE = "compose/onebox.rdma.yaml"
# Both servers on one GPU: decode starts once prefill is healthy, as each takes a fraction of the free memory.
ONE_GPU_FILE = "compose/onebox.onegpu.yaml"
ENV_FILE = "onebox.env"


def check_scenario(scenario: Scenario) -> None:
    t = scenario.topology
    counts = (t.prefill.nodes, t.prefill.servers_per_node, t.decode.nodes, t.decode.servers_per_node)
    if scenario.launch is None or "disaggregated" not in scenario.launch.stacks or counts != (1, 1, 1, 1):
        raise UserError(f"scenario {scenario.name}: the one-box target runs one prefill and one decode server (1P1D); "
                        f"this one is {t.label if scenario.launch else 'without a launch section'}")


def check(plan: Plan) -> LaunchPlan:
    check_scenario(plan.scenario)
    if len({*plan.site.prefill_hosts, *plan.site.decode_hosts}) != 1:
        raise UserError("--prefill-ip and --decode-ip: the one-box target runs everything on one node; "
                        "give one address (or neither)")
    return plan.launch_plan()


def env_rows(plan: Plan) -> Rows:
    lp = check(plan)
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    ports = plan.launch.ports
    rows = common_vars(plan) + [
        ("BOX_IP", prefill.host, "this node's address: both servers advertise it, the router reaches them at it"),
        ("PREFILL_PORT", str(ports.prefill), ""),
        ("DECODE_PORT", str(ports.decode), ""),
        ("BOOTSTRAP_PORT", str(ports.bootstrap), "prefill's KV-transfer bootstrap port, given to the router"),
        ("PREFILL_TP", str(plan.tp("prefill")), ""),
        ("DECODE_TP", str(plan.tp("decode")), ""),
        ("PREFILL_GPU_IDS", ",".join(map(str, prefill.gpus)), "host GPU ids of each server (CUDA_VISIBLE_DEVICES), disjoint"),
        ("DECODE_GPU_IDS", ",".join(map(str, decode.gpus)), ""),
        ("TRANSFER_BACKEND", plan.backend_flag, ""),
    ]
    rows += [(k, plan.launch.env[k], "") for k in LAUNCH_ENV_FIXED]
    if plan.backend.tcp_only:
        rows.append(("MC_FORCE_TCP", "1", "KV over TCP (--force-tcp), also with RDMA devices present"))
    rows += [(k, v, "") for k, v in plan.launch.env.items() if k in LAUNCH_ENV_TUNABLES]
    return rows


def placement(lp: LaunchPlan, plan: Plan) -> str:
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    if plan.shared_gpu:
        return (f"prefill and decode share GPU {prefill.gpus[0]}, each --mem-fraction-static {plan.mem_fraction:g} "
                "of the memory free when it starts (decode after prefill is healthy)")
    return f"prefill on GPU {','.join(map(str, prefill.gpus))}, decode on GPU {','.join(map(str, decode.gpus))}"


def host_commands_text(plan: Plan) -> str:
    """What the host launcher (`pdrepro stack up`) runs, in its order, each after the one before is healthy."""
    lp = check(plan)
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    lines = [f"## one box {prefill.host}, host launcher: {placement(lp, plan)}",
             "# started in this order by `pdrepro stack up`, each once the one before answers /health "
             "(the router: /readiness)", ""]
    for name, env, argv in (("prefill", prefill.env, prefill.argv), ("decode", decode.env, decode.argv),
                            ("router", {}, lp.router_argv)):
        lines += [f"# {name} runs:", shell_line(env, argv), ""]
    return "\n".join(lines)


def commands_text(plan: Plan, env_dir: str) -> str:
    lp = check(plan)
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    up = f"docker compose -f {COMPOSE_FILE} --env-file {env_dir}/{ENV_FILE}"
    if plan.shared_gpu:
        up += f" -f {ONE_GPU_FILE}"
    lines = [f"## one box {prefill.host}: {placement(lp, plan)}"]
    if plan.backend.tcp_only:
        lines += ["# KV over TCP (--force-tcp: MC_FORCE_TCP=1 is in the env file):", f"$ {up} up -d --wait", ""]
    else:
        lines += ["# with RDMA devices (/dev/infiniband):", f"$ {up} -f {RDMA_FILE} up -d --wait",
                  "# without (KV over TCP):", f"$ MC_FORCE_TCP=1 {up} up -d --wait", ""]
    for name, env, argv in (("prefill", prefill.env, prefill.argv), ("decode", decode.env, decode.argv),
                            ("router", {}, lp.router_argv)):
        lines += [f"# {name} runs:", shell_line(env, argv), ""]
    return "\n".join(lines)


class OneboxTarget:
    """One env file for compose/onebox.yaml on one node with 2+ GPUs, and its recipe."""

    name = "onebox"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        check_scenario(scenario)
        given = {ip for ip in (options.prefill_ip, options.decode_ip) if ip}
        if len(given) > 1:
            raise UserError("--prefill-ip and --decode-ip: the one-box target runs everything on one node; "
                            "give one address (or neither)")
        if options.ib_devices:
            raise UserError("--ib-devices: the one-box target lets Mooncake pick the RDMA devices itself; drop the option")
        ip = siteinput.parse_ip(given.pop() if given else "127.0.0.1", "--prefill-ip")
        return (ip,), (ip,)

    def render(self, plan: Plan, options, out: str) -> Rendered:
        # Mooncake picks the RDMA devices itself on one box: no device file.
        if options.launcher == "host":
            # What `pdrepro stack up` runs with these options: no compose, this Python in every argv.
            plan = Plan(plan.scenario, dataclasses.replace(plan.site, ib_devices_file=None, python=sys.executable))
            text = host_commands_text(plan)
            return Rendered(files={"commands.txt": text}, commands=text)
        plan = Plan(plan.scenario, dataclasses.replace(plan.site, ib_devices_file=None))
        text = commands_text(plan, out)
        files = {ENV_FILE: format_env_file(ENV_FILE, env_rows(plan), plan.scenario), "commands.txt": text}
        notes = () if options.model else (f"note: model path {plan.site.model_path} is a default, not checked: pass --model",)
        return Rendered(files=files, commands=text, notes=notes)


TARGET = OneboxTarget()
