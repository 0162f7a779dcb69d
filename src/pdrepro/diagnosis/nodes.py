"""The nodes' records a run keeps (RUN/nodes/<role>.json: what `pdrepro doctor --json` prints, written there by
`doctor --out`), read defensively: every part is checked for its type, and a record, check or field that is
missing, unreadable or of the wrong shape is not known, never guessed.

Today's shape (fabric/doctor.py to_json): ``{"checks": [{"name", "status", "detail", "fix"}, ...],
"line_rate_GB_s": number}``; the checks the diagnosis reads are "mtu" (its detail names each port as
"<port>: <netdev> MTU <bytes> -> RoCE MTU <bytes>"), "gid", "gpu-nic-affinity", and relaxed ordering (a check
or a top-level field whose name holds "relaxed", as the record may carry it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import runfile
from ..core.roles import SERVER_ROLES

FOLDER = "nodes"
_PORT_MTU = re.compile(r"(?P<port>[\w.:-]+/\d+): (?P<ndev>\S+) MTU (?P<netdev>\d+) -> RoCE MTU (?P<roce>\d+)")
_STATUSES = ("pass", "warn", "fail")


@dataclass(frozen=True)
class NodeCheck:
    status: str
    detail: str
    fix: str


@dataclass
class NodeRecord:
    role: str
    file: str  # relative to the run's folder that holds nodes/
    checks: dict[str, NodeCheck] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    def port_mtus(self) -> list[tuple[str, int, int]]:
        """(port, netdev MTU, active RoCE MTU) per port the record's mtu check read; empty when it read none."""
        check = self.checks.get("mtu")
        if check is None:
            return []
        return [(m["port"], int(m["netdev"]), int(m["roce"])) for m in _PORT_MTU.finditer(check.detail)
                if len(m["netdev"]) < 8 and len(m["roce"]) < 8]

    def relaxed_ordering(self) -> tuple[bool | None, str]:
        """(on, what the record says) for relaxed ordering; (None, "") where it says nothing usable."""
        for name, check in sorted(self.checks.items()):
            if "relaxed" in name.lower():
                if check.status == "pass":
                    return True, f"check {name}: {check.status}: {check.detail}"
                if check.status in ("warn", "fail"):
                    return False, f"check {name}: {check.status}: {check.detail}"
        for key, value in sorted(self.fields.items()):
            if "relaxed" not in key.lower():
                continue
            on = _flag(value)
            if on is not None:
                return on, f"{key}: {value!r}"[:300]
        return None, ""


def _flag(value: Any, depth: int = 0) -> bool | None:
    """A relaxed-ordering field's value as on/off: a bool, a known word, or an object's "enabled"/"on" of those;
    an object of ports is on only when every port is."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in ("on", "enabled", "true", "yes", "1") else False if word in (
            "off", "disabled", "false", "no", "0") else None
    if isinstance(value, dict) and depth < 3:
        for key in ("enabled", "on", "state", "value"):
            if key in value:
                return _flag(value[key], depth + 1)
        found = [_flag(v, depth + 1) for v in list(value.values())[:64]]
        if found and all(f is not None for f in found):
            return all(found)
    return None


def _checks(data: dict) -> dict[str, NodeCheck]:
    out: dict[str, NodeCheck] = {}
    checks = data.get("checks")
    if not isinstance(checks, list):
        return out
    for entry in checks[:256]:
        if not isinstance(entry, dict):
            continue
        name, status = entry.get("name"), entry.get("status")
        detail, fix = entry.get("detail", ""), entry.get("fix", "")
        if not isinstance(name, str) or status not in _STATUSES or not isinstance(detail, str):
            continue
        out.setdefault(name, NodeCheck(status, detail[:4000], fix[:1000] if isinstance(fix, str) else ""))
    return out


def read_record(path: Path, role: str, rel: str) -> NodeRecord:
    record = NodeRecord(role=role, file=rel)
    if path.is_symlink():
        record.problem = f"{rel} is a link; a node's record is the file `doctor --out` wrote, not a link to one"
        return record
    try:
        data = runfile.read_json(path)
    except (OSError, ValueError, RecursionError) as exc:
        record.problem = f"{rel} is not readable JSON ({type(exc).__name__})"
        return record
    if not isinstance(data, dict):
        record.problem = f"{rel} holds {type(data).__name__}, not the object `doctor --json` prints"
        return record
    record.checks = _checks(data)
    record.fields = {str(k): v for k, v in list(data.items())[:256] if k != "checks"}
    return record


def read_nodes(folder: Path) -> dict[str, NodeRecord]:
    """The records under folder/nodes/, by role (only the roles present)."""
    where = folder / FOLDER
    if not where.is_dir() or where.is_symlink():
        return {}
    return {role: read_record(where / f"{role}.json", role, f"{FOLDER}/{role}.json")
            for role in SERVER_ROLES if (where / f"{role}.json").exists() or (where / f"{role}.json").is_symlink()}
