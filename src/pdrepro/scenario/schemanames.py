"""The names of the JSON Schemas `pdrepro schema` prints, without their models: the command line declares its
choices from here, so building it imports no pydantic; scenario.schemagen maps each name to its model and refuses to
load when the two disagree."""

from __future__ import annotations

SCHEMA_NAMES: tuple[str, ...] = ("ab-summary", "baseline", "diagnosis", "fault-summary", "load-summary",
                                    "node-record", "scenario", "summary", "tune-summary", "verdict")
