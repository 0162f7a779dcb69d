"""pdrepro ib-devices: write the GPU-to-NIC map SGLang's --disaggregation-ib-device reads."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import UserError
from ..core.safewrite import write_file
from ..host import nvidia
from ..host.tools import ToolFailed, ToolMissing
from ..scenario.site import ib_device_key_problem, parse_gpus


def register(sub) -> None:
    p = sub.add_parser("ib-devices", help="write the GPU-to-NIC map (ib_devices.json) from PCIe/NUMA topology",
                       description="Choose for each GPU the nearest active RDMA NIC (same PCIe switch, then host "
                                   "bridge, then NUMA node; equals spread evenly) from nvidia-smi and sysfs, print "
                                   "why, and write the JSON object SGLang's --disaggregation-ib-device accepts.")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"), help="read a tree shaped like /sys instead of /sys")
    p.add_argument("--out", type=Path, default=Path("ib_devices.json"), help="file to write (default: ib_devices.json)")
    p.add_argument("--from-sysfs", action="store_true",
                   help="derive GPU-NIC distances from sysfs PCI paths only, when nvidia-smi topo -m cannot be read "
                        "or does not name the NICs (without it that is an error, never a silent guess)")
    p.add_argument("--gpus", help="comma list of the GPUs (nvidia-smi ids) one server uses, e.g. 8,9,...,15 for the "
                                  "second server on a node; written as 0,1,... as SGLang numbers them (default: all)")
    p.set_defaults(func=run)


def _topology(nics, gpus, from_sysfs: bool) -> nvidia.Topology | None:
    """nvidia-smi's matrix, covering every GPU and usable NIC; None only when asked to use sysfs."""
    if from_sysfs:
        return None
    fix = "fix nvidia-smi, or pass --from-sysfs to derive the distances from sysfs PCI paths instead"
    try:
        topo = nvidia.query_topology()
    except ToolMissing:
        raise UserError(f"nvidia-smi topo -m: nvidia-smi not found; {fix}") from None
    except (ToolFailed, ValueError) as exc:
        raise UserError(f"nvidia-smi topo -m could not be read ({exc}); {fix}") from None
    for gpu in gpus:
        row = topo.gpu_to_nic.get(gpu.index)
        if row is None:
            raise UserError(f"nvidia-smi topo -m has no row for GPU{gpu.index}; {fix}")
        absent = [n.name for n in nics if n.name not in row]
        if absent:
            raise UserError(f"nvidia-smi topo -m does not name {', '.join(absent)} (its NIC columns: "
                            f"{', '.join(row) or 'none'}; a NIC Legend maps NICn to device names); {fix}")
    return topo


def build_map(root: Path, wanted: list[int] | None = None,
              from_sysfs: bool = False) -> tuple[dict[str, str], list[str]]:
    # The fabric's and sysfs's models (pydantic) load when the command runs, not for its --help.
    from ..fabric import affinity
    from ..host import sysfs

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
    # SGLang numbers the GPUs a server is given from 0 (CUDA_VISIBLE_DEVICES
    # order), and those numbers are the map's keys.
    key = {g.index: str(g.index) for g in gpus}
    if wanted is not None:
        by_index = {g.index: g for g in gpus}
        missing = [i for i in wanted if i not in by_index]
        if missing:
            raise UserError(f"--gpus: GPU {missing[0]} is not on this node (nvidia-smi lists "
                            f"{', '.join(str(g.index) for g in gpus)})")
        gpus = [by_index[i] for i in wanted]
        key = {i: str(n) for n, i in enumerate(wanted)}
    topo = _topology(nics, gpus, from_sysfs)
    reasons = ["distances from sysfs PCI paths (--from-sysfs), not from nvidia-smi topo -m"] if from_sysfs else []
    skipped = [d.name for d in devices if d not in nics]
    if skipped:
        reasons.append(f"skipped (no ACTIVE port): {', '.join(skipped)}")
    placements = affinity.place(gpus, nics, topo, root)
    reasons += [p.reason() + (f" (key {key[p.gpu]})" if key[p.gpu] != str(p.gpu) else "") for p in placements]
    return {key[p.gpu]: p.nic for p in sorted(placements, key=lambda p: int(key[p.gpu]))}, reasons


def run(args) -> int:
    # SGLang reads --disaggregation-ib-device as a file only when it ends in
    # .json; any other name is taken as a list of device names.
    if args.out.suffix != ".json":
        raise UserError(f"--out {args.out}: the name must end in .json, or SGLang's --disaggregation-ib-device "
                        "takes it for a device list; e.g. --out ib_devices.json")
    mapping, reasons = build_map(args.sysfs_root, list(parse_gpus(args.gpus)) if args.gpus else None, from_sysfs=args.from_sysfs)
    for key in mapping:
        # SGLang raises on any key but an integer GPU index ("default" and "*" included).
        problem = ib_device_key_problem(key)
        if problem:
            raise UserError(f"--out {args.out}: not written, {problem}")
    for line in reasons:
        print(line)
    try:
        write_file(args.out, json.dumps(mapping, indent=2) + "\n", "ib-devices --out")
    except OSError as exc:
        raise UserError(f"--out {args.out}: cannot write ({exc.strerror}); choose a writable path") from None
    print(f"wrote {args.out}: pass it as --disaggregation-ib-device {args.out.resolve()} "
          "(the file must exist at that path inside the server containers: `pdrepro render --ib-devices` with "
          "this path mounts it there)")
    return 0
