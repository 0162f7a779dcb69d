"""The one-box target: prefill, decode and router of a 1P1D plan on one node, written whole into
onebox.yaml from the launch plan (with onebox.rdma.yaml, the override that maps the RDMA devices), an
env file (onebox.env) with the stack's facts, and the recipe."""

from __future__ import annotations

import dataclasses
import sys

from ...core.errors import UserError
from ...scenario import site as siteinput
from ...scenario.model import Scenario
from ..plan import LaunchPlan, Plan, shell_line
from .base import Hosts, Rendered
from .compose import Rows, common_vars, format_env_file, router_service, server_service
from .composefile import ComposeFile, file_text, rdma_override_text

COMPOSE_FILE = "onebox.yaml"
RDMA_FILE = "onebox.rdma.yaml"
ENV_FILE = "onebox.env"
PROJECT = "pdrepro-onebox"
NODES = "nodes"  # the records' folder beside the files, as `make onebox` writes it


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
    prefill = lp.role("prefill")[0].servers[0]
    ports = plan.launch.ports
    return common_vars(plan) + [
        ("BOX_IP", prefill.host, "this node's address: both servers advertise it, the router reaches them at it"),
        ("PREFILL_PORT", str(ports.prefill), ""),
        ("DECODE_PORT", str(ports.decode), ""),
    ]


def rdma_capable(plan: Plan) -> bool:
    """Whether the scenario's transfer backend may use RDMA devices (then the override is written)."""
    return not plan.backend.tcp_only


def compose_text(plan: Plan, out: str) -> str:
    lp = check(plan)
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    mounts = (plan.site.model_path,)
    # Sharing one GPU, decode starts once prefill has loaded: each takes a fraction of the memory free when it starts.
    services = (server_service(plan, prefill, "prefill", f"{PROJECT}-prefill", mounts=mounts),
                server_service(plan, decode, "decode", f"{PROJECT}-decode", mounts=mounts,
                               depends_on=("prefill",) if plan.shared_gpu else ()),
                router_service(plan, lp.router_argv, "router", f"{PROJECT}-router", ("prefill", "decode")))
    title = f"one box {prefill.host}: {placement(lp, plan)}, and the router"
    return file_text(ComposeFile(PROJECT, title, up_command(plan, out), services), plan)


def up_command(plan: Plan, out: str, rdma: bool = False) -> str:
    files = f"-f {out}/{COMPOSE_FILE}" + (f" -f {out}/{RDMA_FILE}" if rdma else "")
    return f"docker compose {files} --env-file {out}/{ENV_FILE} up -d --wait"


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


def commands_text(plan: Plan, out: str) -> str:
    lp = check(plan)
    prefill, decode = lp.role("prefill")[0].servers[0], lp.role("decode")[0].servers[0]
    lines = [f"## one box {prefill.host}: {placement(lp, plan)}",
             "# first, each role's node record (written whatever doctor's verdict; `make onebox-repro` keeps both in",
             "# RUN/nodes and checks them against each other before the sweep; `pdrepro diagnose` reads them there):",
             f"$ mkdir -p {out}/{NODES}",
             *(f"$ pdrepro doctor --role {role} --scenario {plan.scenario.name} --model {plan.site.model_path} "
               f"--image {plan.site.image} --out {out}/{NODES}/{role}.json" for role in ("prefill", "decode")), ""]
    if rdma_capable(plan):
        lines += ["# with RDMA devices (/dev/infiniband):", f"$ {up_command(plan, out, rdma=True)}",
                  "# without (render again with the TCP transfer backend first):", f"$ {up_command(plan, out)}", ""]
    else:
        lines += ["# KV over TCP:", f"$ {up_command(plan, out)}", ""]
    for name, env, argv in (("prefill", prefill.env, prefill.argv), ("decode", decode.env, decode.argv),
                            ("router", {}, lp.router_argv)):
        lines += [f"# {name} runs:", shell_line(env, argv), ""]
    return "\n".join(lines)


class OneboxTarget:
    """onebox.yaml (and its RDMA override) for one node, its env file and its recipe."""

    name = "onebox"

    def hosts(self, scenario: Scenario, options) -> Hosts:
        check_scenario(scenario)
        given = {ip for ip in (options.prefill_ip, options.decode_ip) if ip}
        if len(given) > 1:
            raise UserError("--prefill-ip and --decode-ip: the one-box target runs everything on one node; "
                            "give one address (or neither)")
        if options.ib_devices:
            raise UserError("--ib-devices: the one-box target lets the transfer backend pick the RDMA devices itself; "
                            "drop the option")
        ip = siteinput.parse_ip(given.pop() if given else "127.0.0.1", "--prefill-ip")
        return (ip,), (ip,)

    def render(self, plan: Plan, options, out: str) -> Rendered:
        # The transfer backend picks the RDMA devices itself on one box: no device file.
        if options.launcher == "host":
            # What `pdrepro stack up` runs with these options: no compose, this Python in every argv.
            plan = Plan(plan.scenario, dataclasses.replace(plan.site, ib_devices_file=None, python=sys.executable))
            text = host_commands_text(plan)
            return Rendered(files={"commands.txt": text}, commands=text)
        plan = Plan(plan.scenario, dataclasses.replace(plan.site, ib_devices_file=None))
        text = commands_text(plan, out)
        files = {COMPOSE_FILE: compose_text(plan, out)}
        if rdma_capable(plan):
            files[RDMA_FILE] = rdma_override_text(COMPOSE_FILE, RDMA_FILE, ("prefill", "decode"))
        files |= {ENV_FILE: format_env_file(ENV_FILE, env_rows(plan), plan.scenario), "commands.txt": text}
        notes = () if options.model else (f"note: model path {plan.site.model_path} is a default, not checked: pass --model",)
        return Rendered(files=files, commands=text, notes=notes)


TARGET = OneboxTarget()
