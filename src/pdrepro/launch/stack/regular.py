"""The regular stack of a comparison on one box: its servers (not disaggregated) and the router in
regular mode, as launcher steps in their start order. The argv are the plan's own (regular_argv,
regular_router_argv), so the host launcher starts what every other target renders."""

from __future__ import annotations

from ...core.errors import UserError
from ...core.roles import Role
from ..plan import Plan, url
from .record import STACK_KINDS
from .up import Step

STACKS = STACK_KINDS


def steps(plan: Plan) -> list[Step]:
    """Regular server 0, regular server 1, then the router (which reaches them at --worker-urls)."""
    if "regular" not in plan.launch.stacks:
        raise UserError(f"--stack regular: scenario {plan.scenario.name} has no regular stack (launch.stacks is "
                        f"{list(plan.launch.stacks)}); give a comparison scenario, or drop --stack")
    ports = plan.launch.ports.regular
    if not ports or len(ports) != 2:
        raise UserError(f"scenario {plan.scenario.name}: launch.ports.regular must name the two regular servers' ports")
    out = []
    for i, (host, port) in enumerate(zip(plan.regular_ips(), ports)):
        base = url(host, port)
        out.append(Step(f"regular-{i}", Role.REGULAR, tuple(plan.regular_argv(i)), plan.server_env("regular", i),
                        f"regular-{i}.log", f"{base}/health", port, (port,), f"{base}/get_server_info"))
    host, router = plan.regular_ips()[0], plan.launch.ports.router
    out.append(Step("router", Role.ROUTER, tuple(plan.regular_router_argv()), {}, "router.log",
                    f"http://{host}:{router}/readiness", router, (router,)))
    return out
