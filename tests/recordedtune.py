"""The recorded H200 tune (tests/recorded/h200-tune-0.5b-*): where it lies, its runs in order, and each run's time
on the GPU as its own files give it. Shared by the tune's recorded-run test and the guide-page figures."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "recorded" / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1"
TUNE = RECORDED / "tune"
RUNS = ["baseline-1", "s1", "s2", "baseline-2", "s3", "s4", "baseline-3"]
# The first machine ran the first two; the same command ran the rest on the second (console/jobs-2.out).
FIRST, SECOND = RUNS[:2], RUNS[2:]


def stopped_at(run: str) -> datetime:
    return datetime.fromisoformat(json.loads((TUNE / run / "stack.json").read_text())["stopped_at"])


def run_times() -> dict[str, int]:
    """Seconds per run: from the tune's start on its machine (the job log's stamp) or the run before's stack stop,
    to the run's own stack stop."""
    out = {}
    for runs, jobs in ((FIRST, "jobs.out"), (SECOND, "jobs-2.out")):
        start = re.search(r"(\d\d):(\d\d):(\d\d) tune for up to", (RECORDED / "console" / jobs).read_text())
        assert start, f"the tune's job log {jobs} has no start stamp"
        stops = [stopped_at(run) for run in runs]
        begun = stops[0].replace(hour=int(start[1]), minute=int(start[2]), second=int(start[3]))
        for run, stop, before in zip(runs, stops, [begun, *stops], strict=False):
            out[run] = (stop - before).seconds
    return out
