"""What a run folder records of its kind, read without trusting it: its provenance.json's "kind", its
summary.json's "kind" and "source", its scenario.yaml's "kind" and the label its arms-state.json opens with.
Each is read through the capped run-file reader; what cannot be read says nothing here (the kind's own
judge reads it again and names it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core import runfile
from ..core.errors import UserError
from ..rundir import RunDir, armsstate


def _json_key(path: Path, key: str) -> Any:
    try:
        data = runfile.read_json(path) if path.is_file() else None
    except (OSError, ValueError, RecursionError, UserError):
        return None
    return data.get(key) if isinstance(data, dict) else None


def provenance_kind(run: RunDir) -> Any:
    return _json_key(run.provenance_file, "kind")


def summary_value(run: RunDir, key: str) -> Any:
    return _json_key(run.summary_file, key)


def scenario_kind(run: RunDir) -> Any:
    path = run.scenario_file
    try:
        data = yaml.safe_load(runfile.read_text(path)) if path.is_file() else None
    except (OSError, ValueError, UserError, yaml.YAMLError):
        return None
    return data.get("kind") if isinstance(data, dict) else None


def arms_label_head(run: RunDir) -> str | None:
    """The command word the folder's arms-state.json opens its label with ("ab", "tune", "comparison")."""
    if not armsstate.path(run.root).is_file():
        return None
    try:
        state = armsstate.read(run.root)
    except UserError:
        return None
    return state.label.split(" ", 1)[0] if state is not None else None
