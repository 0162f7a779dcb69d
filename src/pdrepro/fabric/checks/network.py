"""Network checks: the ports the stack binds and the address the servers advertise."""

from __future__ import annotations

import errno
import socket

from .base import FAIL, PASS, WARN, Check, Context, Facts


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def answers_health(port: int, timeout: float = 2.0) -> bool:
    """Whether what holds PORT is an HTTP server answering GET /health with 2xx,
    as the servers, the router and the bootstrap server of a running stack do."""
    import requests

    try:
        return requests.get(f"http://127.0.0.1:{port}/health", timeout=timeout).ok
    except requests.RequestException:
        return False


def check_ports_free(ctx: Context, f: Facts) -> Check:
    wanted = ctx.wanted_ports()
    held = [(p, what) for p, what in wanted if port_in_use(p)]
    # `make repro` runs doctor with the stack up: its own servers hold these ports.
    running = [(p, what) for p, what in held if answers_health(p)]
    busy = [f"{p} ({what})" for p, what in held if (p, what) not in running]
    free = [str(p) for p, what in wanted if (p, what) not in held]
    if busy:
        return Check("ports", FAIL, "in use: " + ", ".join(busy),
                     "stop what holds them (`ss -ltnp 'sport = :PORT'` names it) or change the scenario's launch.ports "
                     "and render again")
    parts = [f"free: {', '.join(free)}"] if free else []
    if running:
        parts.append("held by a running server answering /health (the stack is up): "
                     + ", ".join(f"{p} ({what})" for p, what in running))
    return Check("ports", PASS, "; ".join(parts) + " (the transfer engine picks its RPC port from the free ones in "
                 "MC_MIN_RPC_PORT..MC_MAX_RPC_PORT, 15000-17000 by default)")


def _local(ip: str) -> bool:
    fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        try:
            s.bind((ip, 0))
        except OSError:
            return False
    return True


def check_advertise_ip(ctx: Context, f: Facts) -> Check:
    ip = ctx.advertise_ip or ctx.env.get("SGLANG_HOST_IP") or ctx.env.get("HOST_IP")
    rdma_ips: dict[str, str] = {}
    for p in f.active_ports:
        for g in p.gids:
            if g.ipv4 is not None:
                rdma_ips.setdefault(str(g.ipv4), f"{g.ndev} ({p.device})")
    example = next(iter(rdma_ips), None)
    if not ip:
        return Check("advertise-ip", WARN if ctx.role else PASS,
                     "SGLANG_HOST_IP / HOST_IP not set: SGLang guesses by probing NICs",
                     f"set SGLANG_HOST_IP to this node's RDMA-netdev address{f' (e.g. {example})' if example else ''}, "
                     "or pass --advertise-ip to check one" if ctx.role else "")
    if ip in rdma_ips:
        return Check("advertise-ip", PASS, f"{ip} is on {rdma_ips[ip]}")
    if ctx.dev_dir is None:  # a copied tree: this host's addresses say nothing about that node
        return Check("advertise-ip", WARN, f"{ip} is on none of the copied node's RDMA netdevs",
                     "advertise an RDMA-netdev address" + (f" such as {example}" if example else ""))
    if _local(ip):
        return Check("advertise-ip", WARN, f"{ip} is local but not on an RDMA netdev",
                     "the peer then bootstraps over a non-RDMA network; advertise an RDMA-netdev address"
                     + (f" such as {example}" if example else ""))
    return Check("advertise-ip", FAIL, f"{ip} is not an address of this host",
                 "use one of this node's addresses" + (f", preferably an RDMA one such as {example}" if example else ""))
