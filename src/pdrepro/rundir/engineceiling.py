"""The Mooncake engine alone on the run's own box: the ceiling a one-box run's requests are set against.

Two processes on the same GPUs with the same transport write one request's KV
of each prompt length, outside SGLang, several times after a warm-up. Two
files carry it, both read here:

* ``RUN/engine-ceiling/result.json``: what ``pdrepro gpu-check --out
  RUN/engine-ceiling`` writes (``make onebox-host-proof`` does): rows of
  prompt_len, nbytes, the timed seconds, verified count and median_GB_s, and
  the transport the engine used; every byte verified.
* ``RUN/engine-ceiling.json``: the recorded H200 run's file (a script of the
  same measurement), and what ``pdrepro gpu-check --out RUN`` writes beside its
  result.json, entries keyed "<tokens>/<shape>": "one" writes the KV as
  one block, "layers" as one batch of per-layer K/V blocks (what SGLang's
  per-layer buffers look like to the engine).

Rates are decimal GB/s over the median time. The report sets each length's
per-request KV bandwidth against the best shape of the same bytes: the
one-box analogue of "% of line rate".

A ceiling is a measurement or nothing: every figure is recomputed here from the bytes and seconds it
claims to come from, and a row that disagrees with them, a zero, negative or non-finite figure, a rate
above the run's line rate, or bytes that are not the run's KV of that length (``check_against_run``) are
refused on one line (CeilingError, a UserError: exit 2), in the analysis and so in check and the gates
alike. SGLang's per-request transfer runs through the same engine on the same box plus queueing and
polling, so a per-request figure well above the engine alone (``CONTRADICTION_RATIO``) contradicts the
ceiling: one of the two is not a measurement of this box, and the gates fail it rather than print a ratio.
A tune also reads repeats of the first run, RUN/engine-ceiling-<n>, each as this module reads the first
(rundir.enginerepeats).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field, ValidationError

from ..core import advice, runfile
from ..core.errors import UserError
from ..core.strictmodel import IntBounds, NumberBounds, Record

FILE_NAME = "engine-ceiling.json"
GPU_CHECK_RESULT = ("engine-ceiling", "result.json")
_KEY = re.compile(r"(?P<tokens>\d+)/(?P<shape>[a-z]+)")
# Per request above this many times the engine alone: the two figures cannot both be of this box.
CONTRADICTION_RATIO = 1.2
# A recorded rate and the one its bytes and seconds give may differ by rounding, not more.
_AGREE = 1e-3


@dataclass(frozen=True)
class Ceiling:
    bytes: int
    GB_s: float
    where: str = ""  # the file and entry it was read from, for the one line that refuses it
    out: str = "RUN/engine-ceiling"  # the folder gpu-check measures it into again, for that line's fix
    scenario: str = "RUN/scenario.yaml"  # the scenario whose bytes that measurement must move (scenario_file)


class CeilingEntry(Record):
    # gpu-check may record more about each entry (transport, GPUs): what is read here must be there.
    model_config = ConfigDict(extra="ignore", frozen=True)

    bytes: Annotated[int, IntBounds(1)] = Field(description="bytes one write moved: one request's KV at that length")
    median_ms: Annotated[float, NumberBounds(ge=0)] = Field(description="median time of the timed writes, milliseconds")
    min_ms: Annotated[float, NumberBounds(ge=0)] = Field(description="fastest write, milliseconds")
    max_ms: Annotated[float, NumberBounds(ge=0)] = Field(description="slowest write, milliseconds")
    GB_s: Annotated[float, NumberBounds(ge=0)] = Field(description="bytes over the median time, decimal GB/s")


class GpuCheckRow(Record):
    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt_len: Annotated[int, IntBounds(1)] = Field(description="tokens whose KV one write moved")
    nbytes: Annotated[int, IntBounds(1)] = Field(description="bytes of one write")
    verified: Annotated[int, IntBounds(0)] = Field(description="timed writes whose received bytes matched")
    failures: list[str] = Field(default_factory=list, description="what went wrong, per write")
    layout: str = Field(default="blocks", description="how the request was cut: one, layers, or blocks of block_bytes")
    median_GB_s: Annotated[float, NumberBounds(ge=0)] | None = Field(description="bytes over the median time, decimal GB/s")
    seconds: list[Annotated[float, NumberBounds(ge=0)]] = Field(default_factory=list,
                                                                description="each timed write, seconds")


class GpuCheckResult(Record):
    """The part of gpu-check's result.json the ceiling reads (gpu-check may record more)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    transport: str | None = Field(description="what the engine used: rdma, tcp, or null when its log shows neither")
    block_bytes: Annotated[int, IntBounds(1)] = Field(description="bytes per block the engine was handed")
    rows: list[GpuCheckRow]


class CeilingError(UserError, ValueError):
    """The file is not an engine ceiling as gpu-check writes it, or not one of this run; the message names the fix."""


# A tune's folder: its scenario as the baseline setting runs it (what each of its runs moved).
TUNE_BASELINE = ("scenarios", "baseline.yaml")


def scenario_file(run_root: Path) -> str:
    """The scenario file, as the advice names it under RUN, whose bytes the engine alone must move to be the
    ceiling of what ``run_root`` holds: a tune's baseline setting, else the run's own scenario.yaml. Without it
    gpu-check moves its default scenario's bytes, which this run then refuses."""
    if Path(run_root).joinpath(*TUNE_BASELINE).is_file():
        return "/".join((advice.RUN, *TUNE_BASELINE))
    return f"{advice.RUN}/scenario.yaml"


def _json(path: Path, out: str, scenario: str):
    try:
        return runfile.read_json(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CeilingError(_fix(f"{path}: not readable JSON ({type(exc).__name__})", out, scenario)
                           + ", or move it aside") from None


def _fix(what: str, out: str = "RUN/engine-ceiling", scenario: str = "RUN/scenario.yaml") -> str:
    return f"{what}; measure it again with `{advice.gpu_check(scenario, out)}` on the run's box"


def from_gpu_check(path: Path) -> tuple[dict[int, dict[str, Ceiling]], str | None]:
    """gpu-check's result.json at ``path``: tokens -> layout -> ceiling, and the engine's transport. Its folder
    (RUN/engine-ceiling, or a repeat RUN/engine-ceiling-<n>) is the one a refusal says to measure again."""
    out_dir = f"{advice.RUN}/{path.parent.name}"
    scenario = scenario_file(path.parent.parent)
    try:
        result = GpuCheckResult.model_validate(_json(path, out_dir, scenario))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise CeilingError(_fix(f"{path}: {where or 'value'}: {first.get('msg')}", out_dir, scenario)) from None
    blocks = f"blocks of {result.block_bytes / 2**20:g} MiB"
    out: dict[int, dict[str, Ceiling]] = {}
    for index, row in enumerate(result.rows):
        # Only writes whose every byte arrived intact count as what the engine moves.
        if row.median_GB_s is not None and row.verified and not row.failures:
            where = f"{path}: rows[{index}] (length {row.prompt_len}, {row.layout})"
            if not row.seconds:
                raise CeilingError(_fix(f"{where}: gives {row.median_GB_s} GB/s without the seconds it was timed in",
                                        out_dir, scenario))
            _agrees(where, row.nbytes, statistics.median(row.seconds), row.median_GB_s, out_dir, scenario)
            shape = blocks if row.layout == "blocks" else row.layout  # one, layers: as the recorded file names them
            out.setdefault(row.prompt_len, {})[shape] = Ceiling(row.nbytes, row.median_GB_s, where, out_dir, scenario)
    return out, result.transport


def _agrees(where: str, nbytes: int, median_s: float, GB_s: float, out: str = "RUN/engine-ceiling",
            scenario: str = "RUN/scenario.yaml") -> None:
    """Refuses a rate that is no measurement, or not the one its own bytes and median time give."""
    if not (math.isfinite(GB_s) and GB_s > 0 and math.isfinite(median_s) and median_s > 0):
        raise CeilingError(_fix(f"{where}: {GB_s} GB/s over a median of {median_s} s is no measurement (a rate and a "
                                "time must be finite and above zero)", out, scenario))
    recomputed = nbytes / median_s / 1e9
    if abs(recomputed - GB_s) > _AGREE * recomputed:
        raise CeilingError(_fix(f"{where}: records {GB_s:.4g} GB/s, but its {nbytes} bytes over its median "
                                f"{median_s * 1e3:.4g} ms are {recomputed:.4g} GB/s; the file was edited", out, scenario))


def load_ceiling(run_root: Path) -> tuple[dict[int, dict[str, Ceiling]], str | None, str] | None:
    """(tokens -> shape -> ceiling, the engine's transport where recorded, the file) or None without one.
    gpu-check's result wins over the older file where a run holds both."""
    result = Path(run_root).joinpath(*GPU_CHECK_RESULT)
    if result.is_file():
        found, transport = from_gpu_check(result)
        return found, transport, str(result.relative_to(run_root))
    path = Path(run_root) / FILE_NAME
    if not path.is_file():
        return None
    return _load_entries(path), None, FILE_NAME


def _load_entries(path: Path) -> dict[int, dict[str, Ceiling]]:
    out_dir, scenario = Ceiling.out, scenario_file(path.parent)  # gpu-check's result in RUN/engine-ceiling wins over it
    data = _json(path, out_dir, scenario)
    if not isinstance(data, dict) or not data:
        raise CeilingError(_fix(f"{path}: holds no '<tokens>/<shape>' entries", out_dir, scenario))
    out: dict[int, dict[str, Ceiling]] = {}
    for key, value in data.items():
        m = _KEY.fullmatch(str(key))
        if m is None:
            raise CeilingError(_fix(f"{path}: entry {key!r} is not '<tokens>/<shape>' (e.g. '4096/layers')", out_dir,
                                    scenario))
        try:
            entry = CeilingEntry.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CeilingError(_fix(f"{path}: entry {key!r}: {where or 'value'}: {first.get('msg')}", out_dir,
                                    scenario)) from None
        where = f"{path}: entry {key!r}"
        if not entry.min_ms <= entry.median_ms <= entry.max_ms:
            raise CeilingError(_fix(f"{where}: its median {entry.median_ms} ms is not between its fastest "
                                    f"{entry.min_ms} ms and slowest {entry.max_ms} ms", out_dir, scenario))
        _agrees(where, entry.bytes, entry.median_ms / 1e3, entry.GB_s, out_dir, scenario)
        out.setdefault(int(m["tokens"]), {})[m["shape"]] = Ceiling(entry.bytes, entry.GB_s, where, out_dir, scenario)
    return out


def check_against_run(ceiling: dict[int, dict[str, Ceiling]], kv_bytes: Callable[[int], int],
                      line_rate_GB_s: float | None) -> None:
    """Refuses a ceiling that is not of this run: an entry whose bytes are not the run's KV of its length (another
    model or TP), or one faster than the run's fabric line where the run has one (no engine outruns its link)."""
    for L, shapes in sorted(ceiling.items()):
        for ceiling_entry in shapes.values():
            if ceiling_entry.bytes != kv_bytes(L):
                raise CeilingError(_fix(f"{ceiling_entry.where}: moved {ceiling_entry.bytes} bytes, but one request's "
                                        f"KV at {L} tokens is {kv_bytes(L)} bytes in this run's scenario: it is not "
                                        "this run's ceiling", ceiling_entry.out, ceiling_entry.scenario))
            if line_rate_GB_s and ceiling_entry.GB_s > line_rate_GB_s:
                raise CeilingError(_fix(f"{ceiling_entry.where}: {ceiling_entry.GB_s:.4g} GB/s is above the run's "
                                        f"line rate of {line_rate_GB_s:g} GB/s, which no engine outruns",
                                        ceiling_entry.out, ceiling_entry.scenario))


def best_layout(shapes: dict[str, Ceiling]) -> tuple[str, Ceiling]:
    """The layout the engine moved one length's KV fastest in, and its ceiling: what a per-request figure is set
    against."""
    return max(shapes.items(), key=lambda item: item[1].GB_s)


def transport_mismatch(source: str, engine_transport: str | None, transport: str | None,
                       scenario: str = "RUN/scenario.yaml") -> str | None:
    """The one line for a ceiling the engine measured over another transport than the servers' engines used (the
    ratio would set two transports against each other); None when they agree or either is unknown. ``source`` is
    the ceiling's file under RUN, so its folder is the one measured again; ``scenario`` the bytes it must move."""
    if not engine_transport or transport not in ("rdma", "tcp") or engine_transport == transport:
        return None
    out = f"{advice.RUN}/{source.split('/')[0]}" if "/" in source else Ceiling.out
    return (f"{source}: the engine alone used {engine_transport}, the servers' engines {transport}: the ratio sets "
            f"two transports against each other; measure the ceiling with "
            f"`{advice.gpu_check(scenario, out, transport)}`")


def against_rows(ceiling: dict[int, dict[str, Ceiling]], rows: list[dict]) -> dict[str, dict]:
    """Per measured length with a ceiling of the same bytes: the engine's best shape and the ratio."""
    out: dict[str, dict] = {}
    for row in rows:
        L, bw = row.get("prompt_len"), row.get("bandwidth_GB_s")
        if not isinstance(L, int):
            continue
        shapes = {name: e for name, e in (ceiling.get(L) or {}).items() if e.bytes == row.get("kv_bytes")}
        if not shapes or bw is None:
            continue
        shape, best = best_layout(shapes)
        ratio = bw / best.GB_s
        out[str(L)] = {"bandwidth_GB_s": bw, "engine_GB_s": best.GB_s, "engine_shape": shape,
                       "shapes_GB_s": {name: e.GB_s for name, e in sorted(shapes.items())},
                       "ratio": ratio, "contradiction": ratio > CONTRADICTION_RATIO}
    return out
