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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field, ValidationError

from ..core.strictmodel import IntBounds, NumberBounds, Record

FILE_NAME = "engine-ceiling.json"
GPU_CHECK_RESULT = ("engine-ceiling", "result.json")
_KEY = re.compile(r"(?P<tokens>\d+)/(?P<shape>[a-z]+)")


@dataclass(frozen=True)
class Ceiling:
    bytes: int
    GB_s: float


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


class GpuCheckResult(Record):
    """The part of gpu-check's result.json the ceiling reads (gpu-check may record more)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    transport: str | None = Field(description="what the engine used: rdma, tcp, or null when its log shows neither")
    block_bytes: Annotated[int, IntBounds(1)] = Field(description="bytes per block the engine was handed")
    rows: list[GpuCheckRow]


class CeilingError(ValueError):
    """The file is not an engine ceiling as gpu-check writes it; the message names the fix."""


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CeilingError(f"{path}: not readable JSON ({type(exc).__name__}); measure it again with "
                           "`pdrepro gpu-check` on the run's box, or move it aside") from None


def _fix(what: str) -> str:
    return f"{what}; measure it again with `pdrepro gpu-check --out RUN/engine-ceiling` on the run's box"


def _from_gpu_check(path: Path) -> tuple[dict[int, dict[str, Ceiling]], str | None]:
    try:
        result = GpuCheckResult.model_validate(_json(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise CeilingError(_fix(f"{path}: {where or 'value'}: {first.get('msg')}")) from None
    blocks = f"blocks of {result.block_bytes / 2**20:g} MiB"
    out: dict[int, dict[str, Ceiling]] = {}
    for row in result.rows:
        # Only writes whose every byte arrived intact count as what the engine moves.
        if row.median_GB_s is not None and row.verified and not row.failures:
            shape = blocks if row.layout == "blocks" else row.layout  # one, layers: as the recorded file names them
            out.setdefault(row.prompt_len, {})[shape] = Ceiling(row.nbytes, row.median_GB_s)
    return out, result.transport


def load_ceiling(run_root: Path) -> tuple[dict[int, dict[str, Ceiling]], str | None, str] | None:
    """(tokens -> shape -> ceiling, the engine's transport where recorded, the file) or None without one.
    gpu-check's result wins over the older file where a run holds both."""
    result = Path(run_root).joinpath(*GPU_CHECK_RESULT)
    if result.is_file():
        found, transport = _from_gpu_check(result)
        return found, transport, str(result.relative_to(run_root))
    path = Path(run_root) / FILE_NAME
    if not path.is_file():
        return None
    return _load_entries(path), None, FILE_NAME


def _load_entries(path: Path) -> dict[int, dict[str, Ceiling]]:
    data = _json(path)
    if not isinstance(data, dict) or not data:
        raise CeilingError(f"{path}: holds no '<tokens>/<shape>' entries; measure it again with `pdrepro gpu-check`")
    out: dict[int, dict[str, Ceiling]] = {}
    for key, value in data.items():
        m = _KEY.fullmatch(str(key))
        if m is None:
            raise CeilingError(f"{path}: entry {key!r} is not '<tokens>/<shape>' (e.g. '4096/layers'); "
                               "measure it again with `pdrepro gpu-check`")
        try:
            entry = CeilingEntry.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CeilingError(f"{path}: entry {key!r}: {where or 'value'}: {first.get('msg')}; "
                               "measure it again with `pdrepro gpu-check`") from None
        out.setdefault(int(m["tokens"]), {})[m["shape"]] = Ceiling(entry.bytes, entry.GB_s)
    return out


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
        shape, best = max(shapes.items(), key=lambda item: item[1].GB_s)
        out[str(L)] = {"bandwidth_GB_s": bw, "engine_GB_s": best.GB_s, "engine_shape": shape,
                       "shapes_GB_s": {name: e.GB_s for name, e in sorted(shapes.items())},
                       "ratio": bw / best.GB_s if best.GB_s else None}
    return out
