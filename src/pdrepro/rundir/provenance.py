"""RUN/provenance.json: images, commits, hosts and environment of a run, written by the sweep or the smoke.

An open record (the two writers hold different facts, and the report shows it whole, in the order it was
written), so the model keeps the mapping as written and names the parts that code reads.
"""

from __future__ import annotations

from typing import Any

from pydantic import RootModel


class Provenance(RootModel[dict[str, Any]]):
    @property
    def transport(self) -> Any:
        """What the sweep proved of the KV transport (its `transport` section), None when absent."""
        return self.root.get("transport")

    def to_json(self) -> dict[str, Any]:
        return self.root
