"""Per-length outcome of a sweep (RUN/sweep-state.json), and the test for a
complete result file, which is what makes a rerun resume."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..core import runfile
from ..rundir import LengthRecord, RunDir, SweepEvent


def result_problem(path: Path, num_prompts: int, prompt_len: int | None = None) -> str | None:
    """None if ``path`` holds one complete bench result, else what is wrong."""
    if not path.is_file():
        return "no result file"
    records = []
    for number, line in enumerate(runfile.read_text(path, kind=runfile.BENCH).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            return f"line {number} is not JSON (cut short?)"
    if not records:
        return "empty"
    if len(records) > 1:
        return f"{len(records)} runs appended in one file (the client appends); expected one"
    asked = records[-1].get("random_input_len")
    if prompt_len is not None and isinstance(asked, int) and asked != prompt_len:
        return f"holds a run of prompt length {asked}, not {prompt_len}"
    completed = records[-1].get("completed")
    if completed != num_prompts:
        return f"completed {completed} of {num_prompts} requests"
    if _all_empty(records[-1]):
        return (f"every one of the {completed} responses is empty (0 output tokens): the server answered without "
                "generating (see its log)")
    return None


def _all_empty(record: dict) -> bool:
    """Whether the client's record shows no request generating a token: HTTP 200 is not a completed request."""
    total = record.get("total_output_tokens")
    if isinstance(total, int) and not isinstance(total, bool):
        return total == 0
    lens = record.get("output_lens")
    if isinstance(lens, list) and lens and all(isinstance(n, int) for n in lens):
        return not any(lens)
    texts = record.get("generated_texts")
    return isinstance(texts, list) and bool(texts) and not any(texts)


class SweepState:
    """The sweep's record of its lengths and events (RUN/sweep-state.json, rundir.SweepStateFile), saved
    through the run directory on every change so an interrupted sweep resumes from it."""

    def __init__(self, run: RunDir):
        self.run = run
        self.path = run.sweep_state_file
        self.file = run.read_sweep_state()

    @property
    def lengths(self) -> dict[str, LengthRecord]:
        return self.file.lengths

    @property
    def events(self) -> list[SweepEvent]:
        return self.file.events

    def record(self, prompt_len: int, status: str, **facts) -> None:
        self.file.lengths[str(prompt_len)] = LengthRecord(status=status, at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **facts)
        self.save()

    def event(self, what: str, **facts) -> None:
        self.file.events.append(SweepEvent(event=what, at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **facts))
        self.save()

    def failed(self) -> dict[int, str]:
        return self.file.failed()

    def save(self) -> None:
        self.run.write_sweep_state(self.file)
