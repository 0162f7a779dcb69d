"""The nodes' records a run keeps (RUN/nodes/<role>.json, written by `pdrepro doctor --out`), read through their
model (rundir.noderecord) and asked the facts the causes need: each active port's MTU and GID, each NIC's relaxed
ordering on its PCIe path, each GPU's NIC and link. A file that is a link, unreadable or not the model is kept with
why, so the causes that would read it say "unknown" with that reason rather than guess."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..core.errors import UserError
from ..core.roles import SERVER_ROLES
from ..rundir import noderecord
from ..rundir.noderecord import NicRecord, PortRecord

FOLDER = noderecord.NODES_DIR
# The engine's relaxed-ordering mode, as MC_IB_PCI_RELAXED_ORDERING gives it: unset is what the pinned Mooncake
# reads as 0 (off); 1 is on; 2 lets it decide, which is on where the PCIe path allows it.
_KNOB_ON = {"1", "2"}


@dataclass
class NodeFile:
    role: str
    file: str  # relative to the run's folder that holds nodes/
    record: noderecord.NodeRecord | None = None
    problem: str | None = None

    def ports(self) -> list[tuple[NicRecord, PortRecord]]:
        """The active ports of every NIC (an inactive port carries no KV)."""
        if self.record is None:
            return []
        return [(nic, port) for nic in self.record.nics for port in nic.ports if port.active]

    def port_mtus(self) -> list[tuple[str, int | None, int]]:
        """(device/port, netdev MTU in bytes, active RoCE MTU in bytes) per active port whose RoCE MTU is known."""
        return [(f"{nic.device}/{port.port}", port.netdev_mtu_bytes, port.active_mtu_bytes)
                for nic, port in self.ports() if port.active_mtu_bytes is not None and port.active_mtu_bytes > 0]

    def relaxed_ordering(self) -> tuple[list[str], list[str]]:
        """(off, on): what the record says of relaxed ordering, one line each. Off: a NIC's PCIe path forbids it (the
        function that does), or the engine's knob leaves it off (whatever the paths); on: a path that allows it with
        the knob on. A NIC whose path could not be read says nothing of its path."""
        off: list[str] = []
        on: list[str] = []
        record = self.record
        if record is None:
            return off, on
        # A software device (rxe, no PCI address) has no PCIe path and no relaxed ordering to speak of.
        hardware = [nic for nic in record.nics if nic.pci_address is not None]
        paths = [nic for nic in hardware if nic.relaxed_ordering is not None]
        for nic in paths:
            if nic.relaxed_ordering is False:
                hop = next((h for h in nic.relaxed_ordering_path if h.relaxed_ordering is False), None)
                where = f" at {hop.bdf} ({hop.note})" if hop is not None else ""
                off.append(f"{nic.device}: relaxed_ordering false, its PCIe path forbids it{where}")
        knob = record.relaxed_ordering_knob
        allowed = [nic.device for nic in paths if nic.relaxed_ordering]
        if hardware and knob not in _KNOB_ON:  # the engine's mode is off whatever the paths allow
            off.append(f"relaxed_ordering_knob: MC_IB_PCI_RELAXED_ORDERING="
                       f"{'unset, which the pinned Mooncake reads as 0' if knob is None else knob}: the engine "
                       f"leaves it off on {', '.join(allowed) or 'every NIC'}")
        elif allowed and not off:
            on.append(f"{', '.join(allowed)}: PCIe path allows it, MC_IB_PCI_RELAXED_ORDERING={knob}")
        return off, on


def problems(nodes: dict[str, NodeFile]) -> str:
    """Why the records that could not be read say nothing, as a tail for an unknown ("" where all were read)."""
    said = [n.problem for n in nodes.values() if n.problem]
    return f": {'; '.join(said[:2])}" if said else ""


def read_record(path: Path, role: str, rel: str) -> NodeFile:
    node = NodeFile(role=role, file=rel)
    if path.is_symlink():
        node.problem = f"{rel} is a link; a node's record is the file `doctor --out` wrote, not a link to one"
        return node
    try:
        node.record = noderecord.read(path)
    except UserError as exc:
        node.problem = f"{rel}: {str(exc).splitlines()[0].removeprefix(str(path) + ': ')[:300]}"
    except (ValidationError, OSError, ValueError, RecursionError) as exc:
        node.problem = f"{rel} is not a node record ({type(exc).__name__}); write it again with `pdrepro doctor --out`"
    return node


def read_nodes(folder: Path) -> dict[str, NodeFile]:
    """The records under folder/nodes/, by role (only the roles present)."""
    where = folder / FOLDER
    if not where.is_dir() or where.is_symlink():
        return {}
    return {role: read_record(where / f"{role}.json", role, f"{FOLDER}/{role}.json")
            for role in SERVER_ROLES if (where / f"{role}.json").exists() or (where / f"{role}.json").is_symlink()}
