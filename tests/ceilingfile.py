"""RUN/engine-ceiling/result.json as `pdrepro gpu-check --layouts one,layers --out RUN/engine-ceiling` writes it,
for tests that need the engine alone beside a run or a tune: one request's KV of each length, three timed writes,
every byte verified; by default the layers layout in the given time, the one layout a quarter slower (a fixture,
not a recording). A repeat of the engine alone (RUN/engine-ceiling-<n>) is the same file in its own folder."""

from __future__ import annotations

import json
from pathlib import Path

from pdrepro.scenario.model import Scenario

LAYOUTS = {"one": 1.25, "layers": 1.0}  # each layout's time over the given one


def write_engine_ceiling(folder: Path, scenario: Scenario, ms: dict[int, float], transport: str = "rdma",
                         layouts: dict[str, float] | None = None) -> Path:
    rows = []
    for length, t in ms.items():
        nbytes = scenario.kv_bytes(length)
        for layout, factor in (layouts or LAYOUTS).items():
            seconds = [t * factor / 1e3] * 3
            rows.append({"prompt_len": length, "nbytes": nbytes, "verified": 3, "failures": [], "layout": layout,
                         "median_GB_s": nbytes / seconds[0] / 1e9, "seconds": seconds})
    folder.mkdir(parents=True)
    path = folder / "result.json"
    path.write_text(json.dumps({"transport": transport, "block_bytes": 4 << 20, "rows": rows}))
    return path
