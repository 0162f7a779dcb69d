"""``pdrepro doctor``'s registry: which checks run on one node, and in which order.

The checks themselves live in ``fabric.checks``, one module per concern; each
says what it found and, when it is not a pass, how to fix it. The order below
is the order of doctor's table: the fabric first, then the host, the GPUs, the
container engine, the run's inputs and the network.
"""

from __future__ import annotations

from dataclasses import asdict

from .checks.base import Check, Context, Facts, gather
from .checks.containers import check_docker
from .checks.gpu import check_affinity, check_driver, check_gpu_registration, check_gpus
from .checks.hostlimits import check_memlock
from .checks.inputs import check_dataset, check_model
from .checks.linerate import check_line_rate, line_rate_GB_s
from .checks.network import check_advertise_ip, check_ports_free
from .checks.ordering import check_relaxed_ordering, nic_paths
from .checks.rdma import (
    check_dev_infiniband,
    check_devices,
    check_gids,
    check_link_layer,
    check_mtu,
    check_ports,
)

# Some concerns give one row, others none or several (the model is only checked
# when given; Docker adds the GPU runtime row when reachable).
CHECKS = (
    check_devices, check_ports, check_link_layer, check_gids, check_line_rate, check_mtu, check_dev_infiniband,
    check_relaxed_ordering,
    check_memlock,
    check_gpu_registration, check_gpus, check_driver, check_affinity,
    check_docker,
    check_model, check_dataset,
    check_ports_free, check_advertise_ip,
)


def run_checks(ctx: Context, facts: Facts | None = None) -> tuple[list[Check], float]:
    f = facts or gather(ctx)
    if f.relaxed_paths is None:
        f.relaxed_paths = nic_paths(ctx, f)
    checks: list[Check] = []
    for check in CHECKS:
        found = check(ctx, f)
        checks.extend(found if isinstance(found, list) else [found])
    return checks, round(line_rate_GB_s(f), 3)


def to_json(checks: list[Check], line_rate: float) -> dict:
    return {"checks": [asdict(c) for c in checks], "line_rate_GB_s": line_rate}
