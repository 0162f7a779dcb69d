"""JSON Schemas of the files users write and read, generated from their models.

The shipped copies under ``pdrepro/schemas`` let an editor check a scenario as
it is typed (YAML language servers read a ``$schema`` comment) and let other
tools check a summary.json; a test keeps them equal to what the models give.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ..core.safewrite import write_file
from ..rundir.absummary import AbSummary
from ..rundir.baseline import BaselineFile
from ..rundir.diagnosismodel import Diagnosis
from ..rundir.faultsummary import FaultSummary
from ..rundir.loadsummary import LoadSummary
from ..rundir.noderecord import NodeRecord
from ..rundir.summarymodel import ComparisonSummary, SmokeSummary, Summary
from ..rundir.tunesummary import TuneSummary
from ..rundir.verdictrecord import VerdictRecord
from .model import ScenarioFile
from .schemanames import SCHEMA_NAMES

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# A scenario is one of its kinds (a union told apart by ``kind``); so is a summary.json (a smoke's, told by its
# "source", a comparison's, by its "kind", else a sweep's); an A/B's, the fabric baseline's, a load sweep's and a
# tune's summaries and the diagnosis `pdrepro diagnose --json` prints are one record each; so is a node's
# record (doctor --out, RUN/nodes/<role>.json), and a judge's verdict (`check --json`).
MODELS: dict[str, Any] = {"scenario": ScenarioFile, "summary": SmokeSummary | ComparisonSummary | Summary,
                          "ab-summary": AbSummary,
                          "baseline": BaselineFile, "load-summary": LoadSummary, "tune-summary": TuneSummary,
                          "fault-summary": FaultSummary,
                          "node-record": NodeRecord, "diagnosis": Diagnosis, "verdict": VerdictRecord}
if tuple(sorted(MODELS)) != SCHEMA_NAMES:  # `schema --help` would offer a schema that is not here, or hide one
    raise ImportError(f"scenario.schemagen: schemanames.SCHEMA_NAMES {SCHEMA_NAMES} differ from {tuple(sorted(MODELS))}")


def file_name(name: str) -> str:
    return f"{name}.schema.json"


def render(name: str) -> str:
    """The schema text of one model, as shipped (stable key order, trailing newline)."""
    schema = {"$schema": DRAFT, **TypeAdapter(MODELS[name]).json_schema()}
    return json.dumps(schema, indent=2) + "\n"


def shipped_dir() -> Path:
    return Path(str(resources.files("pdrepro") / "schemas"))


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in MODELS:
        path = folder / file_name(name)
        write_file(path, render(name), "schema --write")
        written.append(path)
    return written
