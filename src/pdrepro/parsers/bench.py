"""The bench client's ``--output-file`` JSONL (``python -m sglang.benchmark.serving``).

The client appends one JSON object per run, so a file that was reused holds
several; the run that counts is the last one of the length asked for, and a
file whose last run is cut off holds no usable result (the complete runs
before it are older ones). ``--output-details``
adds per-request lists; their ``ttfts`` and ``itls`` are in seconds, while the
summary keys (``mean_ttft_ms`` ...) are in milliseconds.
"""

from __future__ import annotations

import errno
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError


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
    # Tokens each successful request generated, in request order (empty without --output-details).
    ok_output_lens: tuple[int, ...] = ()
    # The client's totals: tokens generated, and the generated text tokenized again (None where absent).
    total_output_tokens: int | None = None
    total_output_tokens_retokenized: int | None = None
    # The client's wall time of the run, from its first request sent to its last answer (s; None where absent).
    duration_s: float | None = None
    # The client's own summary figures by its key (REPORTED_KEYS), None where absent or not a number.
    reported: dict[str, float | None] = field(repr=False, compare=False, default_factory=dict)

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


def _read(path: Path) -> str:
    try:
        return runfile.read_text(path, kind=runfile.BENCH)
    except FileNotFoundError:
        if path.is_symlink():
            raise UserError(f"{path}: a symlink to {os.readlink(path)}, which does not exist; point it at the bench "
                            "result or copy the file there") from None
        raise UserError(f"{path}: no such bench result; run the bench client for this length with --output-file {path}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a bench result file; the bench client's --output-file "
                        "writes a file there: move the directory away") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(f"{path}: a symlink loop (the link points back at itself); replace it with the bench "
                            "result file") from None
        raise UserError(f"{path}: cannot be read ({exc.strerror}); fix its permissions") from None


def _objects(path: Path, text: str) -> tuple[list[tuple[int, dict]], list[str]]:
    """(line number, object) of every complete JSON object in file order, plus notes about the rest.

    A last line that is not JSON is the run being written when the client
    stopped: an error, since any complete run before it is an older one.
    """
    objects: list[tuple[int, dict]] = []
    notes: list[str] = []
    lines = text.splitlines()
    last = max((i for i, l in enumerate(lines, 1) if l.strip()), default=0)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if number == last:
                older = " after an older complete run" if objects else ""
                raise UserError(f"{path}: its last run is cut off at line {number}{older}, as when a bench run is "
                                "interrupted; run the bench for this length again") from None
            notes.append(f"{path}: line {number} is not JSON; it was skipped")
            continue
        if isinstance(obj, dict):
            objects.append((number, obj))
        else:
            notes.append(f"{path}: line {number} is JSON but not an object; it was skipped")
    return objects, notes


_LISTS = ("input_lens", "ttfts", "errors", "output_lens")


def _requests_sent(obj: dict) -> int | None:
    """How many requests the run sent: the length of its per-request lists (--output-details)."""
    for key in _LISTS:
        if isinstance(obj.get(key), list):
            return len(obj[key])
    return None


def _mismatch(obj: dict, prompt_len: int, num_prompts: int | None, output_len: int | None) -> str | None:
    """Why ``obj`` is not the run of this length, or None when it is (as far as it says)."""
    dataset = obj.get("dataset_name")
    if dataset is not None and dataset != "random":
        return f"dataset {dataset!r}"
    asked = obj.get("random_input_len")
    if asked is not None and asked != prompt_len:
        return f"input length {asked}"
    out = obj.get("random_output_len")
    if output_len is not None and out is not None and out != output_len:
        return f"output length {out}"
    sent = _requests_sent(obj)
    if num_prompts is not None and sent is not None and sent != num_prompts:
        return f"{sent} prompts"
    return None


def _choose(path: Path, objects: list[tuple[int, dict]], prompt_len: int | None, num_prompts: int | None,
            output_len: int | None) -> tuple[int, int, dict, list[str]]:
    """(run number, line, object, notes) of the run that counts: the last one matching the length."""
    notes = []
    if prompt_len is None:
        number, obj = objects[-1]
        if len(objects) > 1:
            notes.append(f"{path}: holds {len(objects)} bench runs (the client appends); used the last one (line {number})")
        return len(objects), number, obj, notes
    wanted = f"random dataset, input length {prompt_len}"
    wanted += f", {num_prompts} prompts" if num_prompts is not None else ""
    wanted += f", output length {output_len}" if output_len is not None else ""
    matching = [(i, n, o) for i, (n, o) in enumerate(objects, 1) if _mismatch(o, prompt_len, num_prompts, output_len) is None]
    if not matching:
        found = "; ".join(f"line {n}: {_mismatch(o, prompt_len, num_prompts, output_len)}" for n, o in objects[-3:])
        raise UserError(f"{path}: holds no run of prompt length {prompt_len} ({wanted}); found {found}: this is another "
                        "run's result, so rerun the bench for this length or analyse with the scenario the run used")
    index, number, obj = matching[-1]
    if len(objects) > 1:
        notes.append(f"{path}: holds {len(objects)} bench runs (the client appends); used run {index} (line {number}), "
                     f"the last with {wanted}")
    if "random_input_len" not in obj:
        notes.append(f"{path}: line {number} does not say its input length (no random_input_len); taken as {prompt_len}")
    return index, number, obj, notes


def _finite(path: Path, obj: dict, key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{path}: '{key}' is {value!r}, not a number of milliseconds; is this a "
                        "sglang.benchmark.serving --output-file?")
    if not math.isfinite(value):
        return None
    return float(value)


def _ttfts(path: Path, obj: dict) -> tuple[float, ...]:
    """Per-request TTFT in seconds of the successful requests; failed ones carry 0 and an error."""
    ttfts = obj.get("ttfts")
    if ttfts is None:
        return ()
    if not isinstance(ttfts, list):
        raise UserError(f"{path}: 'ttfts' is {type(ttfts).__name__}, not a list of seconds per request; rerun the "
                        "bench with --output-details")
    errors = obj.get("errors")
    if errors is None:
        errors = [""] * len(ttfts)
    if not isinstance(errors, list):
        raise UserError(f"{path}: 'errors' is {type(errors).__name__}, not a list per request; is this a "
                        "sglang.benchmark.serving --output-file?")
    good = []
    for i, (t, e) in enumerate(zip(ttfts, errors)):
        if isinstance(t, bool) or not isinstance(t, (int, float)):
            raise UserError(f"{path}: 'ttfts' entry {i} is {t!r}, not seconds; the file is damaged: rerun the bench "
                            "for this length")
        if math.isnan(t) or math.isinf(t) or t < 0:
            shown = "NaN" if math.isnan(t) else repr(t)
            raise UserError(f"{path}: 'ttfts' entry {i} is {shown}, not a time; the file is damaged or hand-edited: "
                            "rerun the bench for this length")
        if not e and t > 0:
            good.append(float(t))
    return tuple(good)


def _completed(path: Path, obj: dict, num_prompts: int | None) -> int:
    if "completed" not in obj:
        raise UserError(f"{path}: the run has no 'completed' key; is this a sglang.benchmark.serving --output-file?")
    value = obj["completed"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value != int(value):
        raise UserError(f"{path}: 'completed' is {value!r}, not a count of requests; the file is damaged or "
                        "hand-edited: rerun the bench for this length")
    value = int(value)
    if value < 0 or (num_prompts is not None and value > num_prompts):
        raise UserError(f"{path}: completed {value} requests, but the scenario sends {num_prompts}; the file is "
                        "another run's or hand-edited: rerun the bench for this length, or pass the scenario the run used")
    return value


def _output_lens(path: Path, obj: dict) -> tuple[int, ...]:
    """Tokens generated by each request the client counts as successful (no error logged for it)."""
    lens = obj.get("output_lens")
    if lens is None:
        return ()
    if not isinstance(lens, list):
        raise UserError(f"{path}: 'output_lens' is {type(lens).__name__}, not a list of tokens per request; the file is "
                        "damaged or hand-edited: rerun the bench for this length")
    for i, n in enumerate(lens):
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0 or n != int(n):
            raise UserError(f"{path}: 'output_lens' entry {i} is {n!r}, not a count of tokens; the file is damaged or "
                            "hand-edited: rerun the bench for this length")
    errors = obj.get("errors")
    # Errors that do not pair up with the requests say nothing about which ones failed.
    errors = errors if isinstance(errors, list) and len(errors) == len(lens) else [""] * len(lens)
    return tuple(int(n) for n, e in zip(lens, errors) if not e)


def _token_total(path: Path, obj: dict, key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{path}: '{key}' is {value!r}, not a count of tokens; the file is damaged or hand-edited: "
                        "rerun the bench for this length")
    return int(value) if math.isfinite(value) else None


# The client's summary figures a comparison sets side by side: throughput in tokens/s, latencies in ms.
REPORTED_KEYS = ("output_throughput", "total_throughput", "mean_e2e_latency_ms", "mean_ttft_ms", "p99_ttft_ms",
                 "mean_itl_ms", "p99_itl_ms")


def _reported(obj: dict) -> dict[str, float | None]:
    return {key: float(v) if isinstance(v := obj.get(key), (int, float)) and not isinstance(v, bool) else None
            for key in REPORTED_KEYS}


def parse_bench_file(path: Path, prompt_len: int | None = None, num_prompts: int | None = None,
                     output_len: int | None = None) -> tuple[BenchResult, list[str]]:
    """The bench result of prompt length ``prompt_len`` in ``path``, and notes about the rest of the file.

    With a length given, the run that counts is the last one of the random
    dataset with that input length (and ``num_prompts`` requests and
    ``output_len`` output tokens, where the run records them); without one,
    the last run. Raises UserError when the file holds no such usable run.
    """
    path = Path(path)
    text = _read(path)
    if not text.strip():
        raise UserError(f"{path}: the bench result is empty; the bench run for this length did not finish: run it again")
    objects, notes = _objects(path, text)
    if not objects:
        detail = notes[0].split(": ", 1)[1] if notes else "it holds no JSON object"
        raise UserError(f"{path}: no complete bench result: {detail}; run the bench for this length again")
    _, _, obj, chosen = _choose(path, objects, prompt_len, num_prompts, output_len)
    notes += chosen
    completed = _completed(path, obj, num_prompts)
    good = _ttfts(path, obj)
    summary = {key: _finite(path, obj, key) for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms")}
    if completed and any(obj.get(k) is not None and summary[k] is None for k in summary):
        bad = next(k for k in summary if obj.get(k) is not None and summary[k] is None)
        raise UserError(f"{path}: '{bad}' is NaN or infinite although {completed} requests completed; the file is "
                        "damaged or hand-edited: rerun the bench for this length")
    if summary["mean_ttft_ms"] is None and good:
        # Clients that write only the per-request list: the mean is theirs to compute, in ms.
        summary["mean_ttft_ms"] = statistics.fmean(good) * 1000.0
    errors = tuple(str(e) for e in (obj.get("errors") or []) if e)
    result = BenchResult(path=path, completed=completed, ttfts_s=good, errors=errors, **summary,
                         ok_output_lens=_output_lens(path, obj),
                         total_output_tokens=_token_total(path, obj, "total_output_tokens"),
                         total_output_tokens_retokenized=_token_total(path, obj, "total_output_tokens_retokenized"),
                         duration_s=_finite(path, obj, "duration"), reported=_reported(obj))
    return result, notes
