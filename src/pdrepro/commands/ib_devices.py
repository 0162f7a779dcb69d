"""pdrepro ib-devices: write the GPU-to-NIC map SGLang's --disaggregation-ib-device reads."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UserError
from ..fabric import affinity, nvidia, sysfs
from ..fabric.tools import ToolFailed, ToolMissing


def register(sub) -> None:
    p = sub.add_parser("ib-devices", help="write the GPU-to-NIC map (ib_devices.json) from PCIe/NUMA topology",
                       description="Choose for each GPU the nearest active RDMA NIC (same PCIe switch, then host "
                                   "bridge, then NUMA node; equals spread evenly) from nvidia-smi and sysfs, print "
                                   "why, and write the JSON object SGLang's --disaggregation-ib-device accepts.")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"), help="read a tree shaped like /sys instead of /sys")
    p.add_argument("--out", type=Path, default=Path("ib_devices.json"), help="file to write (default: ib_devices.json)")
    p.set_defaults(func=run)


def build_map(root: Path) -> tuple[dict[str, str], list[str]]:
    devices = sysfs.read_rdma_devices(root)
    nics = affinity.usable_nics(devices)
    if not nics:
        found = ", ".join(d.name for d in devices) or "none"
        raise UserError(f"no RDMA device with an ACTIVE port under {root}/class/infiniband (devices: {found}); "
                        "bring a port up (`pdrepro doctor` says which) before mapping GPUs to NICs")
    try:
        gpus = nvidia.query_gpus()
    except ToolMissing:
        raise UserError("nvidia-smi not found on PATH; run this on the GPU node (the map is per node)") from None
    except (ToolFailed, ValueError) as exc:
        raise UserError(f"nvidia-smi failed: {exc}; check the driver with `nvidia-smi -L`") from None
    if not gpus:
        raise UserError("nvidia-smi lists no GPU; check the driver with `nvidia-smi -L`")
    try:
        topo = nvidia.query_topology()
    except (ToolMissing, ToolFailed, ValueError):
        topo = None  # sysfs PCI paths still give the answer
    reasons = []
    skipped = [d.name for d in devices if d not in nics]
    if skipped:
        reasons.append(f"skipped (no ACTIVE port): {', '.join(skipped)}")
    placements = affinity.place(gpus, nics, topo, root)
    reasons += [p.reason() for p in placements]
    return {str(p.gpu): p.nic for p in placements}, reasons


def run(args) -> int:
    # SGLang reads --disaggregation-ib-device as a file only when it ends in
    # .json; any other name is taken as a list of device names.
    if args.out.suffix != ".json":
        raise UserError(f"--out {args.out}: the name must end in .json, or SGLang's --disaggregation-ib-device "
                        "takes it for a device list; e.g. --out ib_devices.json")
    mapping, reasons = build_map(args.sysfs_root)
    for line in reasons:
        print(line)
    try:
        args.out.write_text(json.dumps(mapping, indent=2) + "\n")
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot write ({exc.strerror}); choose a writable path") from None
    print(f"wrote {args.out}: pass it as --disaggregation-ib-device {args.out.resolve()} "
          "(the file must exist at that path inside the server containers: `pdrepro render --ib-devices` with "
          "this path mounts it there)")
    return 0
