"""Reads the bundle's pins from ``versions.env``, the single source of truth.

A wheel carries the file as ``pdrepro/versions.env``; a source checkout (or an
editable install) reads ``docker/versions.env`` directly.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .errors import UserError

_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")


def versions_file() -> Path:
    packaged = Path(__file__).parents[1] / "versions.env"
    if packaged.is_file():
        return packaged
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "docker" / "versions.env"
        if candidate.is_file():
            return candidate
    raise UserError(
        "cannot find versions.env (neither pdrepro/versions.env nor docker/versions.env); "
        "reinstall the package from the bundle checkout with `pip install .`"
    )


def parse_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; comments and blank lines ignored; anything else is an error."""
    values: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise UserError(f"{path}:{number}: expected KEY=VALUE, got {raw!r}; fix the line")
        key, value = match.groups()
        if key in values:
            raise UserError(f"{path}:{number}: {key} is set twice; keep one")
        values[key] = value
    return values


@lru_cache(maxsize=1)
def load_pins() -> dict[str, str]:
    return parse_env_file(versions_file())
