"""Reads which transport the Mooncake Transfer Engine installed from its start-up log.

The engine's ``protocol`` argument does not choose the transport, so both the
sweep (proving a PD stack moves KV over RDMA) and the smoke test (reporting
what the engine really used) read the engine's own glog lines. Evidence:

* RDMA: ``installTransport, type=rdma``, ``RDMA device: <dev>, LID: ..., GID:
  (GID_Index N) ...`` and ``Find best gid index: N on <dev>/<port> (network
  state: ...)``; ``Topology discovery complete. Found N HCAs.`` with N > 0.
* TCP: ``MC_FORCE_TCP is set, using TCP transport only``, ``TcpTransport:
  listen on port N``, or ``Found 0 HCAs.`` (it then silently installs TCP).
* Trouble: ``No suitable GID found on <dev>/<port>`` and ``Failed to install
  RDMA transport``.
* No devices: ``No RDMA devices found``.

One rule (``ServerTransport.verdict``) turns those lines into a transport, for
the sweep's proof, the smoke and the GPU check alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .serverstart import START_MARKER

_RDMA_INSTALLED = re.compile(r"installTransport, type=rdma\b")
_RDMA_DEVICE = re.compile(r"RDMA device: (?P<dev>[^,\s]+), LID: \S+, GID: \(GID_Index (?P<gid>-?\d+)\)")
_BEST_GID = re.compile(r"Find best gid index: (?P<gid>-?\d+) on (?P<dev>[^/\s]+)/(?P<port>\d+)"
                       r"(?: \(network state: (?P<state>[^)]*)\))?")
_HCAS = re.compile(r"Topology discovery complete\. Found (?P<n>\d+) HCAs\.")
_FORCE_TCP = re.compile(r"MC_FORCE_TCP is set, using TCP transport only")
_TCP_LISTEN = re.compile(r"TcpTransport: listen on port (?P<port>\d+)")
_NO_GID = re.compile(r"No suitable GID found on (?P<dev>[^/\s]+)/(?P<port>\d+)")
_RDMA_FAILED = re.compile(r"Failed to install RDMA transport")
_NO_DEVICES = re.compile(r"No RDMA devices found")
_EVIDENCE = (_RDMA_INSTALLED, _RDMA_DEVICE, _BEST_GID, _HCAS, _FORCE_TCP, _TCP_LISTEN, _NO_GID, _RDMA_FAILED, _NO_DEVICES)


@dataclass
class ServerTransport:
    role: str
    rdma_installed: int = 0
    devices: dict[str, int] = field(default_factory=dict)  # device -> GID index
    gid_states: dict[str, str] = field(default_factory=dict)
    hca_counts: list[int] = field(default_factory=list)
    force_tcp: int = 0
    tcp_listens: int = 0
    no_gid: list[str] = field(default_factory=list)
    rdma_failed: int = 0
    lines_read: int = 0
    evidence: list[str] = field(default_factory=list)  # the lines above, as logged
    # MC_FORCE_TCP=1 was in the engine's environment: older builds do not log it,
    # and a TCP listener next to RDMA lines then means TCP.
    force_tcp_set: bool = False

    @property
    def verdict(self) -> str:
        """rdma, tcp, rdma-broken (RDMA tried and failed) or unknown (no start-up lines)."""
        if self.force_tcp or (self.tcp_listens and (self.force_tcp_set or not self.rdma_installed)):
            return "tcp"
        if self.hca_counts and max(self.hca_counts) == 0:
            return "tcp"
        if self.rdma_installed and self.devices and not self.rdma_failed:
            return "rdma"
        if self.no_gid or self.rdma_failed:
            return "rdma-broken"
        return "unknown"

    def describe(self) -> str:
        if self.verdict == "rdma":
            devs = ", ".join(f"{d} (GID index {g})" for d, g in sorted(self.devices.items()))
            degraded = [d for d, s in self.gid_states.items() if s != "with network device"]
            extra = f"; GID without network device on {', '.join(sorted(degraded))}" if degraded else ""
            return f"{self.role}: RDMA on {devs}{extra}"
        found = []
        if self.force_tcp:
            found.append(f"'MC_FORCE_TCP is set' x{self.force_tcp}")
        if self.hca_counts:
            found.append(f"HCAs found {sorted(set(self.hca_counts))}")
        if self.tcp_listens:
            found.append(f"TCP transport listening x{self.tcp_listens}")
        if self.no_gid:
            found.append(f"no suitable GID on {', '.join(sorted(set(self.no_gid)))}")
        if self.rdma_failed:
            found.append("RDMA transport failed to install")
        if self.rdma_installed:
            found.append(f"RDMA installed x{self.rdma_installed}")
        if not found:
            found.append(f"no Mooncake transport lines in {self.lines_read} log lines")
        return f"{self.role}: {self.verdict} ({'; '.join(found)})"

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "devices": dict(sorted(self.devices.items())),
            "gid_states": dict(sorted(self.gid_states.items())),
            "rdma_installed": self.rdma_installed,
            "hca_counts": self.hca_counts,
            "force_tcp": self.force_tcp,
            "tcp_listens": self.tcp_listens,
            "no_suitable_gid": sorted(set(self.no_gid)),
            "summary": self.describe(),
        }


# One pass finds the few evidence lines of a server log that can be hundreds of MB long.
_ANY_EVIDENCE = re.compile("|".join(f"(?:{re.sub(r'[(][?]P<[a-z]+>', '(', rx.pattern)})" for rx in _EVIDENCE))


def _scan_line(st: ServerTransport, line: str) -> None:
    if _RDMA_INSTALLED.search(line):
        st.rdma_installed += 1
    if m := _RDMA_DEVICE.search(line):
        st.devices[m["dev"]] = int(m["gid"])
    if m := _BEST_GID.search(line):
        st.devices.setdefault(m["dev"], int(m["gid"]))
        if m["state"]:
            st.gid_states[m["dev"]] = m["state"]
    if m := _HCAS.search(line):
        st.hca_counts.append(int(m["n"]))
    if _FORCE_TCP.search(line):
        st.force_tcp += 1
    if _TCP_LISTEN.search(line):
        st.tcp_listens += 1
    if m := _NO_GID.search(line):
        st.no_gid.append(f"{m['dev']}/{m['port']}")
    if _RDMA_FAILED.search(line):
        st.rdma_failed += 1
    st.evidence.append(line.strip())


def scan(role: str, text: str, force_tcp_set: bool = False) -> ServerTransport:
    st = ServerTransport(role, force_tcp_set=force_tcp_set)
    st.lines_read = len(text.splitlines())
    end = -1
    for m in _ANY_EVIDENCE.finditer(text):
        if m.start() <= end:
            continue  # a second piece of evidence on a line already read
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        _scan_line(st, text[start:end])
    return st


def scan_latest_start(role: str, lines: Iterable[str], force_tcp_set: bool = False) -> ServerTransport:
    """``scan`` over a server log read line by line (one may be hundreds of MB): only the lines of the server's
    latest start that carry evidence are kept, and the count of that start's lines."""
    kept: list[str] = []
    count = 0
    for line in lines:
        if START_MARKER in line:
            kept, count = [], 0  # an appended log: what an earlier start logged is not this server's
        count += 1
        if _ANY_EVIDENCE.search(line):
            kept.append(line if line.endswith("\n") else line + "\n")
    st = scan(role, "".join(kept), force_tcp_set)
    st.lines_read = count
    return st


@dataclass(frozen=True)
class TransportEvidence:
    """One engine's transport as the smoke and the GPU check record it (and pass it between sides)."""
    transport: str | None           # "rdma", "tcp", or None when the log proves neither
    hcas_found: int | None
    rdma_devices: tuple[str, ...] = ()
    lines: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict:
        return {"transport": self.transport, "hcas_found": self.hcas_found,
                "rdma_devices": list(self.rdma_devices), "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, data: dict) -> TransportEvidence:
        """The other side's evidence as ``to_dict`` sent it."""
        return cls(data["transport"], data["hcas_found"], tuple(data["rdma_devices"]), tuple(data["lines"]))


def detect(log_lines, force_tcp: bool = False) -> TransportEvidence:
    """The transport one engine installed, by the same rule as the sweep's proof."""
    seen = scan("engine", "\n".join(log_lines), force_tcp_set=force_tcp)
    verdict = seen.verdict
    transport = verdict if verdict in ("rdma", "tcp") else None
    hcas = seen.hca_counts[-1] if seen.hca_counts else None
    return TransportEvidence(transport, hcas, tuple(seen.devices), tuple(seen.evidence))


def fallback_reason(evidence: TransportEvidence, force_tcp: bool, ib_dir_present: bool) -> str:
    """Why the engine did not use RDMA, in terms a user can act on."""
    if force_tcp:
        return "MC_FORCE_TCP=1 is set; unset it (the smoke's and gpu-check's --transport rdma do)"
    if evidence.hcas_found == 0 or evidence.hcas_found is None:
        if not ib_dir_present:
            return ("no /dev/infiniband in the container: the engine found 0 HCAs; on a laptop create a soft-RoCE "
                    "device with `scripts/softroce.sh up`, then rerun (the smoke and `make gpu-check` pass /dev/infiniband "
                    "when the host has it)")
        return ("the engine found 0 HCAs although /dev/infiniband exists: no port is ACTIVE with a GID, or the "
                "uverbs devices are not accessible; check `rdma link` / `scripts/softroce.sh status`")
    return "the engine found an HCA but did not install the RDMA transport; see its log lines in the run's logs/"
