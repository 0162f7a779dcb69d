"""A hash-locked requirements file (`make lock`, uv): one ``name==version`` per package followed by its
``--hash=sha256:...`` options, read into plain records. The GPU image's checks (image.gpulock) and what-ran
(analysis.whatran) both read it. Standard library only: ``make build`` runs its reader before anything is installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import UserError

NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PINNED = re.compile(rf"^({NAME})(\[[^\]]*\])?==([^\s;\\]+)\s*(?:;[^\\]*)?\\?$")
_HASH = re.compile(r"^--hash=sha256:([0-9a-f]{64})\s*\\?$")


def normalize(name: str) -> str:
    """PEP 503 form: the same package however its name is spelled."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Locked:
    name: str       # normalized
    version: str
    hashes: tuple[str, ...]


def logical_lines(text: str):
    """(first line number, line) with comments dropped; hashes stay on their own lines."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line:
            yield number, line


def parse_lock(text: str, source: str = "lock") -> dict[str, Locked]:
    """Every package of a hash-locked requirements file; a malformed one is a UserError naming its line."""
    packages: dict[str, Locked] = {}
    current: tuple[str, str, int] | None = None
    hashes: list[str] = []

    def close() -> None:
        if current is None:
            return
        name, version, number = current
        if not hashes:
            raise UserError(f"{source}:{number}: {name}=={version} has no --hash=sha256:...; "
                            "regenerate the lock with `make lock`")
        packages[name] = Locked(name, version, tuple(hashes))

    for number, line in logical_lines(text):
        hashed = _HASH.match(line)
        if hashed:
            if current is None:
                raise UserError(f"{source}:{number}: a hash before any package; regenerate the lock with `make lock`")
            hashes.append(hashed.group(1))
            continue
        if line.startswith("--hash"):
            raise UserError(f"{source}:{number}: {line!r} is not a sha256 hash; regenerate the lock with `make lock`")
        if line.startswith("-"):
            raise UserError(f"{source}:{number}: option {line.split()[0]} does not belong in a lock; "
                            "regenerate it with `make lock`")
        pinned = _PINNED.match(line)
        if not pinned:
            raise UserError(f"{source}:{number}: {line.rstrip(chr(92)).strip()!r} is not pinned with ==; "
                            "regenerate the lock with `make lock`")
        close()
        name = normalize(pinned.group(1))
        if name in packages:
            raise UserError(f"{source}:{number}: {name} is locked twice; regenerate the lock with `make lock`")
        current, hashes = (name, pinned.group(3), number), []
    close()
    if not packages:
        raise UserError(f"{source}: no package in it; regenerate the lock with `make lock`")
    return packages
