"""Input about the nodes, checked at the edge: addresses, GPU ids, the
GPU-to-RDMA-device file, the image name. Each check names the option and the fix."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

from ..core import advice
from ..core.errors import UserError
from ..core.pins import load_pins


def parse_ip(value: str | None, option: str) -> str:
    if not value:
        raise UserError(f"missing {option}: give the node's RDMA-reachable IP address, e.g. {option} 10.0.0.1")
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        raise UserError(f"{option} {value!r} is not an IP address; give the node's RDMA-reachable address "
                        "(a host name is not accepted)") from None
    if address.version != 4:
        # The compose files build URLs as http://IP:PORT, which IPv6 would need bracketed.
        raise UserError(f"{option} {value!r}: IPv6 is not supported by the compose files; give the node's IPv4 address")
    if address.is_unspecified or address.is_multicast or str(address) == "255.255.255.255":
        # Each server advertises this address to the other side (SGLANG_HOST_IP).
        raise UserError(f"{option} {value!r} is not a host address the other node can reach; "
                        "give the node's RDMA-reachable address")
    return str(address)


def parse_ips(value: str | None, option: str, count: int) -> tuple[str, ...]:
    """``count`` node addresses, comma-separated, one per node of the role."""
    items = [v for v in (value or "").split(",") if v.strip()]
    if value and len(items) != count:
        raise UserError(f"{option} {value!r}: the scenario has {count} node(s) of this role; give {count} "
                        "comma-separated addresses, one per node")
    return tuple(parse_ip(v, option) for v in items) if items else (parse_ip(value, option),)


def check_node_ips(prefill_ips: tuple[str, ...], decode_ips: tuple[str, ...]) -> None:
    """A loopback address reaches the other nodes only when every server runs on that one node."""
    if len({*prefill_ips, *decode_ips}) == 1:
        return
    for option, ips in (("--prefill-ip", prefill_ips), ("--decode-ip", decode_ips)):
        for ip in ips:
            if ipaddress.ip_address(ip).is_loopback:
                raise UserError(f"{option} {ip}: a loopback address cannot be reached from the other nodes; "
                                "give the node's RDMA-reachable address (or the same address everywhere for one node)")
    for option, ips in (("--prefill-ip", prefill_ips), ("--decode-ip", decode_ips)):
        if len(set(ips)) != len(ips):
            raise UserError(f"{option} {','.join(ips)}: an address is listed twice; each node of a role needs its own "
                            "(servers of one role on one node: set topology servers_per_node instead)")


def parse_gpus(value: str, option: str = "--gpus") -> tuple[int, ...]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items or not all(v.isdigit() for v in items):
        raise UserError(f"{option} {value!r}: expected a comma list of GPU ids, e.g. 0,1,2,3")
    gpus = tuple(int(v) for v in items)
    if len(set(gpus)) != len(gpus):
        raise UserError(f"{option} {value!r}: a GPU id is listed twice; list each once")
    return gpus


def ib_device_key_problem(key) -> str | None:
    """Why SGLang would refuse this key of an ib_devices.json: it int()s every key and raises on
    anything else ("default" and "*" included), and the key is a GPU index inside the container."""
    if isinstance(key, str) and re.fullmatch(r"[0-9]+", key):
        return None
    return (f"key {key!r} is not a GPU id; SGLang accepts only integer keys (a server given \"default\" or \"*\" "
            "fails at start-up): map each GPU index to its devices, e.g. {\"0\": \"mlx5_0\", \"1\": \"mlx5_0\"}")


def check_ib_devices(path: Path, tp: int) -> None:
    """The file SGLang reads for --disaggregation-ib-device: a JSON object from
    GPU id to a comma list of RDMA device names."""
    if path.suffix != ".json":
        raise UserError(f"--ib-devices {path}: the name must end in .json (SGLang reads other values as a device list)")
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"--ib-devices {path}: no such file; create it with `{advice.ib_devices(path)}`") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--ib-devices {path}: not readable JSON ({exc}); regenerate it with "
                        f"`{advice.ib_devices(path)}`") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"--ib-devices {path}: expected a JSON object such as {{\"0\": \"mlx5_0\", ...}}")
    for key, devices in data.items():
        problem = ib_device_key_problem(key)
        if problem:
            raise UserError(f"--ib-devices {path}: {problem}")
        if not isinstance(devices, str) or not all(d.strip() for d in devices.split(",")):
            raise UserError(f"--ib-devices {path}: GPU {key} maps to {devices!r}; "
                            "give a comma list of device names such as \"mlx5_0,mlx5_1\"")
    covered = {int(k) for k in data}
    uncovered = [g for g in range(tp) if g not in covered]
    if uncovered:
        raise UserError(f"--ib-devices {path}: GPU {uncovered[0]} has no device; map GPUs 0..{tp - 1} "
                        "(indices inside the container)")


def gpu_image() -> str:
    pins = load_pins()
    if not pins.get("GPU_IMAGE"):
        raise UserError("versions.env has no GPU_IMAGE; add the GPU image name there (the one `make build` tags)")
    return pins["GPU_IMAGE"]
