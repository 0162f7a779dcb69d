"""What ``nvidia-smi`` says: the GPUs, their PCIe/NVLink topology, the driver version and CUDA version.

Every nvidia-smi query of the bundle is here (doctor, ib-devices, stack up, the sweep's provenance); the
rules the driver is held to are in fabric/driver.py."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from .tools import ToolFailed, ToolMissing, ToolTimeout, capture, run_tool

# Closeness of a GPU to a NIC in `nvidia-smi topo -m`, nearest first.
TOPO_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
TOPO_MEANING = {
    "PIX": "same PCIe switch, one bridge",
    "PXB": "same PCIe switch tree, several bridges",
    "PHB": "same PCIe host bridge",
    "NODE": "same NUMA node, different host bridges",
    "SYS": "different NUMA nodes",
}
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
_GPU = re.compile(r"^GPU\d+$")
_ANSI = re.compile(r"\x1b?\[[0-9;]*m")
# Header words that follow the GPU and NIC columns.
_AFTER_COLUMNS = ("CPU", "NUMA", "GPU NUMA ID")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    bus_id: str      # as nvidia-smi prints it: 00000000:0F:00.0


QUERY = ["nvidia-smi", "--query-gpu=index,name,pci.bus_id", "--format=csv"]
TOPO = ["nvidia-smi", "topo", "-m"]


def parse_gpu_query(text: str) -> list[Gpu]:
    """Parse ``--query-gpu=index,name,pci.bus_id --format=csv`` (header line optional)."""
    rows = [r for r in csv.reader(io.StringIO(text), skipinitialspace=True) if r and any(c.strip() for c in r)]
    if rows and rows[0][0].strip().lower() == "index":
        header = [h.strip().lower() for h in rows[0]]
        rows = rows[1:]
    else:
        header = ["index", "name", "pci.bus_id"]
    try:
        i_idx, i_name, i_bus = header.index("index"), header.index("name"), header.index("pci.bus_id")
    except ValueError:
        raise ValueError(f"unexpected nvidia-smi CSV header: {header}") from None
    gpus = []
    for row in rows:
        gpus.append(Gpu(index=int(row[i_idx]), name=row[i_name].strip(), bus_id=row[i_bus].strip()))
    return gpus


@dataclass(frozen=True)
class Topology:
    """GPU -> NIC -> link word ('PIX', 'SYS', ...) from the ``topo -m`` matrix."""

    gpu_to_nic: dict[int, dict[str, str]]

    @property
    def nics(self) -> list[str]:
        names: list[str] = []
        for row in self.gpu_to_nic.values():
            for n in row:
                if n not in names:
                    names.append(n)
        return names


def parse_topo(text: str) -> Topology:
    """Parse the matrix of ``nvidia-smi topo -m``.

    Newer drivers label NIC columns NIC0.. and resolve them in a "NIC Legend";
    older ones put the device names (mlx5_0) in the header. Cells are split on
    any whitespace: nvidia-smi writes tabs, but pasted output (issues, chat,
    terminals) usually has spaces; only the GPU and NIC columns are read,
    which never hold spaces, so "CPU Affinity" splitting in two does no harm.
    """
    # nvidia-smi underlines the header with terminal escapes even when its
    # output goes to a pipe or a file; copied from a terminal, the ESC byte is
    # often lost and "[4m" stays.
    lines = _ANSI.sub("", text).splitlines()
    legend = {m.group(1): m.group(2) for m in map(_NIC_LEGEND.match, lines) if m}
    header_i = next((i for i, l in enumerate(lines) if l.split()[:1] == ["GPU0"] and "X" not in l.split()), None)
    if header_i is None:
        raise ValueError("no GPU matrix header (a line listing GPU0, GPU1 ...) in nvidia-smi topo -m output")
    columns = []
    for token in lines[header_i].split():
        if token in _AFTER_COLUMNS:
            break
        columns.append(token)
    out: dict[int, dict[str, str]] = {}
    for line in lines[header_i + 1:]:
        cells = line.split()
        if not cells or cells[0].startswith("Legend"):
            break
        if not _GPU.match(cells[0]):
            continue  # NIC rows repeat the same links from the other side
        row: dict[str, str] = {}
        for col, cell in zip(columns, cells[1:]):
            if not _GPU.match(col) and cell in TOPO_RANK:
                row[legend.get(col, col)] = cell
        out[int(cells[0][3:])] = row
    return Topology(out)


def query_gpus() -> list[Gpu]:
    return parse_gpu_query(run_tool(QUERY))


def query_topology() -> Topology:
    return parse_topo(run_tool(TOPO))


DRIVER_QUERY = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]

# The query prints one bare version per GPU; the banner and `nvidia-smi -q`
# label it "Driver Version", which R610 and newer renamed "KMD Version".
_BARE = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)*)\s*$")
_LABELLED = re.compile(r"\b(?:Driver|KMD) Version\s*:\s*(\d+\.\d+(?:\.\d+)*)")


def parse_driver_version(text: str) -> str:
    """The driver version in nvidia-smi's output (query CSV, banner or ``-q``)."""
    found = []
    for line in text.splitlines():
        match = _BARE.match(line) or _LABELLED.search(line)
        if match:
            found.append(match.group(1))
    if not found:
        raise ValueError("no driver version in nvidia-smi's output")
    if len(set(found)) > 1:
        raise ValueError(f"nvidia-smi reports several driver versions: {', '.join(sorted(set(found)))}")
    return found[0]


def query_driver_version() -> tuple[str | None, str | None]:
    """(version, None), or (None, why it could not be read) — never raises."""
    try:
        return parse_driver_version(run_tool(DRIVER_QUERY)), None
    except ToolMissing:
        return None, "nvidia-smi not found on PATH"
    except (ToolFailed, ValueError) as exc:
        return None, str(exc)


def driver_summary() -> dict:
    """Driver and CUDA version and the GPUs' names, for a record of the host; {"error": ...} when unreadable."""
    # The exit status is not held against it: what a failing nvidia-smi still prints is read for what it holds.
    try:
        head = capture(["nvidia-smi"], timeout=30).stdout
        query = capture(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], timeout=30).stdout
    except ToolMissing:
        return {"error": "nvidia-smi not found on the host running the sweep"}
    except ToolTimeout:
        return {"error": "nvidia-smi failed: TimeoutExpired"}
    except OSError as exc:
        return {"error": f"nvidia-smi failed: {type(exc).__name__}"}
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", head)
    names = [line.split(",")[0].strip() for line in query.splitlines() if line.strip()]
    try:
        driver = parse_driver_version("\n".join(line.split(",")[-1] for line in query.splitlines()))
    except ValueError:
        driver = None
    return {"driver": driver, "cuda": cuda.group(1) if cuda else None, "gpus": names}
