"""How sure a figure made of repeated runs is: a confidence interval drawn by a hierarchical bootstrap (the runs
resampled, then the requests within each drawn run), and the noise floor between repeats of one configuration.

Why hierarchical: two runs of the same stack minutes apart differ by more than their requests vary within a
run (the engine alone moved by a fifth between runs on an H200), so an interval over the requests alone would
call that drift a difference. Resampling the runs first carries the run-to-run noise into the interval; a
figure of a single run has none of its own to show, and can borrow another configuration's (``borrowed``:
the deviations of that configuration's repeats from their mean, one drawn per resample).

Deterministic: one seeded generator per interval (numpy's default bit generator, ``SEED``), so the same
inputs give the same interval on every machine running the same numpy. The decision drawn from two intervals
is verdicts.noise's; this module only measures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

import numpy as np

from ..rundir.noisemodel import Interval, NoiseFloor

LEVEL = 0.95
RESAMPLES = 2000
SEED = 36
CHUNK = 2_000_000  # values resampled at once

# A run's figure from its requests' values, along the last axis: one run (1-D) or many resamples of it (2-D).
RunFigure = Callable[[np.ndarray], np.ndarray]


def mean_of() -> RunFigure:
    """A run's figure is its requests' mean (client TTFT)."""
    return lambda values: np.mean(values, axis=-1)


def rate_of(kv_bytes: int) -> RunFigure:
    """A run's figure is the KV bytes over its requests' median transfer time (ms), decimal GB/s: the run
    summary's per-request KV bandwidth (Row.bandwidth_GB_s)."""
    return lambda ms: kv_bytes / (np.median(ms, axis=-1) / 1e3) / 1e9


def _clean(runs: Sequence[Sequence[float]]) -> list[np.ndarray]:
    """Each run's finite values; a run left with none says nothing and is left out."""
    out = [np.asarray([v for v in run if isinstance(v, (int, float)) and math.isfinite(v)], dtype=float) for run in runs]
    return [a for a in out if a.size]


def method_words(runs: int, level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED,
                 per_request: bool = True, borrowed: str | None = None) -> str:
    """How an interval was drawn, in words a report prints as they are."""
    head = f"{level * 100:g} % bootstrap, {resamples} resamples, seeded ({seed})"
    if runs >= 2:
        what = (f"{runs} runs resampled, then the requests within each drawn run" if per_request
                else f"{runs} runs resampled (one figure each)")
    else:
        what = "one run: its requests resampled" if per_request else "one run: no resampling possible"
    if borrowed:
        what += f"; plus a run-to-run deviation drawn from {borrowed}, since one run shows no run-to-run noise of its own"
    return f"{head}; {what}"


def bootstrap(runs: Sequence[Sequence[float]], figure: RunFigure, *, digits: int = 4,
              borrowed: Sequence[float] = (), borrowed_from: str | None = None, level: float = LEVEL,
              resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """The interval of the mean over ``runs`` of each run's ``figure`` (runs: per run its requests' values).
    ``borrowed``: run-to-run deviations of another configuration's repeats, added one per resample (used only
    with fewer than two runs of this one). None without a value to draw from."""
    if not 0 < level < 1 or resamples < 1:
        raise ValueError(f"level {level} and resamples {resamples}: give 0 < level < 1 and at least one resample")
    data = _clean(runs)
    if not data:
        return None
    rng = np.random.default_rng(seed)
    count = len(data)
    point = float(np.mean([float(figure(a)) for a in data]))
    if not math.isfinite(point):
        return None
    total = np.zeros(resamples)
    picks = rng.integers(0, count, size=(resamples, count)) if count >= 2 else np.zeros((resamples, 1), dtype=int)
    for slot in range(picks.shape[1]):
        for r, values in enumerate(data):
            drawn = np.flatnonzero(picks[:, slot] == r)
            # In slices of at most CHUNK values: a run of a million requests (a huge or hostile bench file) costs
            # time, never memory beyond a few tens of MB.
            step = max(1, CHUNK // values.size)
            for start in range(0, drawn.size, step):
                part = drawn[start:start + step]
                total[part] += figure(values[rng.integers(0, values.size, size=(part.size, values.size))])
    draws = total / picks.shape[1]
    offsets = [d for d in borrowed if math.isfinite(d)] if count < 2 else []
    if offsets:
        draws = draws + np.asarray(offsets)[rng.integers(0, len(offsets), size=resamples)]
    tail = (1 - level) / 2
    low, high = (float(x) for x in np.quantile(draws, [tail, 1 - tail]))
    # A percentile interval of a skewed figure (the median of a handful of requests) can fall beside the figure
    # itself; it is stretched to hold it, never narrowed, so the interval always speaks of the figure shown.
    low, high = min(low, point), max(high, point)
    per_request = any(a.size > 1 for a in data)
    return Interval(point=round(point, digits), low=round(low, digits), high=round(high, digits), level=level,
                    runs=count, requests=sum(a.size for a in data),
                    method=method_words(count, level, resamples, seed, per_request,
                                        borrowed_from if offsets else None))


def deviations(figures: Sequence[float]) -> list[float]:
    """Each repeat's figure less their mean: the run-to-run noise another configuration's single run borrows."""
    kept = [f for f in figures if math.isfinite(f)]
    if len(kept) < 2:
        return []
    mean = statistics.fmean(kept)
    return [f - mean for f in kept]


def noise_floor(of: str, figures: Sequence[float], unit: str, digits: int = 4) -> NoiseFloor | None:
    """The spread between repeats of one configuration; None with fewer than two."""
    kept = [f for f in figures if math.isfinite(f)]
    if len(kept) < 2:
        return None
    spread = max(kept) - min(kept)
    mean = statistics.fmean(kept)
    return NoiseFloor(of=of, runs=[round(f, digits) for f in kept], unit=unit, spread=round(spread, digits),
                      spread_pct=round(100 * spread / mean, 1) if mean else None)
