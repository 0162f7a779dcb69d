"""Whether a run's pins can be judged at all: the pins gate's own question, asked of what the summary recorded
(provenance.json as the summary holds it, and the what-ran rows analysis.whatran built). It is a verdict, so it
lives with the verdicts and reads the summary's models; the analysis that builds the rows needs nothing of it."""

from __future__ import annotations

from collections.abc import Sequence

from ..rundir.runprovenance import RunProvenance
from ..rundir.summaryparts import WhatRan


def unjudged(provenance: RunProvenance | None, rows: Sequence[WhatRan]) -> str | None:
    """Why the run's pins cannot be judged at all, or None: no provenance.json (or one that is not a JSON object,
    or empty), or one that records no version of any component. A gate that compares what ran with the pins
    fails such a run; "nothing recorded" is never "nothing differs"."""
    # A summary keeps only what provenance.json held: no field set is a provenance.json that recorded nothing.
    if provenance is None or not provenance.model_fields_set:
        return ("the run holds no readable provenance.json (missing, empty or not a JSON object), so what ran is "
                "unknown; rerun the sweep (`pdrepro sweep` records it)")
    if not any(r.ran for r in rows if "(provenance pins)" not in r.item):
        return ("provenance.json records no version of any component (no server_info, packages, torch or image "
                "build args), so what ran is unknown; rerun the sweep on the servers' host")
    return None
