"""pyproject.toml as data on every Python the bundle supports (tomllib is 3.11+; tomli backs 3.10)."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def load_pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def exact_test_pins() -> dict[str, str]:
    """Distribution name -> version for every `name==version` in the test extra."""
    pins = {}
    for requirement in load_pyproject()["project"]["optional-dependencies"]["test"]:
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^;\s]+)\s*", requirement)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins
