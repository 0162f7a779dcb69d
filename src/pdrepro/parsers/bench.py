"""The bench client's ``--output-file`` JSONL (``python -m sglang.benchmark.serving``).

The client appends one JSON object per run, so a file that was reused holds
several; the last complete one is the run that counts. ``--output-details``
adds per-request lists; their ``ttfts`` and ``itls`` are in seconds, while the
summary keys (``mean_ttft_ms`` ...) are in milliseconds.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError


@dataclass(frozen=True)
class BenchResult:
    path: Path
    completed: int
    # Per-request TTFT in seconds of the successful requests (empty without --output-details).
    ttfts_s: tuple[float, ...]
    errors: tuple[str, ...]
    mean_ttft_ms: float | None
    median_ttft_ms: float | None
    p99_ttft_ms: float | None
    raw: dict = field(repr=False, compare=False, default_factory=dict)

    @property
    def has_details(self) -> bool:
        return bool(self.ttfts_s)

    @property
    def ttft_ms(self) -> tuple[float, ...]:
        return tuple(t * 1000.0 for t in self.ttfts_s)

    def ttft_stats_ms(self) -> tuple[float | None, float | None, float | None]:
        """Mean, median and p99 TTFT (ms): from the per-request list when present."""
        if self.has_details:
            values = sorted(self.ttft_ms)
            return statistics.fmean(values), statistics.median(values), percentile(values, 99)
        return self.mean_ttft_ms, self.median_ttft_ms, self.p99_ttft_ms


def percentile(sorted_values: list[float], pct: float) -> float:
    """Linear interpolation between closest ranks, as numpy's default does."""
    if not sorted_values:
        raise ValueError("no values")
    k = (len(sorted_values) - 1) * pct / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def _number(obj: dict, key: str) -> float | None:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _objects(path: Path, text: str) -> tuple[list[dict], list[str]]:
    """Complete JSON objects in file order, plus notes about anything that was not one."""
    objects, notes = [], []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            last = number == len(lines) or not any(l.strip() for l in lines[number:])
            what = "its last line is cut off" if last else f"line {number} is not JSON"
            notes.append(f"{path}: {what}, as when a bench run is interrupted")
            continue
        if isinstance(obj, dict):
            objects.append(obj)
        else:
            notes.append(f"{path}: line {number} is JSON but not an object")
    return objects, notes


def parse_bench_file(path: Path) -> tuple[BenchResult, list[str]]:
    """The last complete bench result in ``path`` and notes about the rest of the file.

    Raises UserError when the file holds no usable result at all.
    """
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        raise UserError(f"{path}: no such bench result; run the bench client for this length with --output-file {path}") from None
    if not text.strip():
        raise UserError(f"{path}: the bench result is empty; the bench run for this length did not finish: run it again")
    objects, notes = _objects(path, text)
    if not objects:
        detail = notes[0].split(": ", 1)[1] if notes else "it holds no JSON object"
        raise UserError(f"{path}: no complete bench result: {detail}; run the bench for this length again")
    obj = objects[-1]
    if len(objects) > 1:
        notes.append(f"{path}: holds {len(objects)} bench runs (the client appends); used the last one")
    if "completed" not in obj:
        raise UserError(f"{path}: the last JSON object has no 'completed' key; is this a sglang.benchmark.serving --output-file?")
    errors = tuple(str(e) for e in (obj.get("errors") or []) if e)
    ttfts = obj.get("ttfts") or []
    # Failed requests carry ttft 0 and an error: they are not first tokens.
    raw_errors = obj.get("errors") or [""] * len(ttfts)
    good = tuple(float(t) for t, e in zip(ttfts, raw_errors) if not e and isinstance(t, (int, float)) and t > 0)
    result = BenchResult(
        path=path,
        completed=int(obj["completed"]),
        ttfts_s=good,
        errors=errors,
        mean_ttft_ms=_number(obj, "mean_ttft_ms"),
        median_ttft_ms=_number(obj, "median_ttft_ms"),
        p99_ttft_ms=_number(obj, "p99_ttft_ms"),
        raw=obj,
    )
    return result, notes
